"""What moves between ranks: the exchanges lowering puts into a plan of several ranks.

Distributions (:mod:`sluice.physical.properties`): ``any`` -- each row on one rank, anywhere
(``single`` and ``hash`` are special cases of it); ``single`` -- every row on rank 0;
``hash(keys)`` -- equal keys on one rank; ``broadcast`` -- every rank holds every row.

Joins (:func:`place_join`) need matching rows on one rank:

- a build side whose property is global -- NOT IN's null-aware anti join and a mark join
  (one NULL anywhere changes every answer), a scalar subquery's single row, a join without
  equality keys -- is broadcast, so every rank sees all of it; where the join also emits
  unmatched build rows (a FULL or build-side outer join without keys) both sides are
  gathered to rank 0 instead (each rank would emit them once);
- otherwise a build side estimated under ``broadcast_bytes`` is broadcast (the probe side
  stays where it was scanned) where that moves fewer bytes than partitioning -- the build side
  times the other ranks against both sides' share that leaves each rank (:func:`broadcasts`)
  -- unless the join emits unmatched build rows; else both sides are exchanged by the hash of
  their keys, hashed as one type per key pair.

A side whose rows are on rank 0 only (a recursive CTE, a CSV file, a gathered result) is not
hashed out: a probe side there keeps the join on rank 0 (its probe streams, so a LIMIT above
still stops an endless recursion), a build side there is broadcast.

Scans split the row groups between ranks by rows (:func:`share`): the largest group first
to the rank with fewest rows so far, the same answer on every rank.
"""

from __future__ import annotations

import hashlib

from sluice.exec.exchange import ExchangeOp, OffRankOp, exchanges_in_order
from sluice.exec.hash_join import _key_type
from sluice.exec.hot_keys import HotKeys
from sluice.exec.join_mode import BUILD_EMITTING, JoinMode
from sluice.exec.operators import Operator
from sluice.exec.recursive import RecursiveUnionOp
from sluice.exec.recursive_key import KeyedRecursiveUnionOp
from sluice.physical.hot_keys import hot_key_values
from sluice.physical.joins import JoinChoice
from sluice.physical.properties import ANY, BROADCAST, SINGLE, hashed
from sluice.plan.estimate import estimate
from sluice.plan.logical import Join


def share(groups: list, rank: int, world: int) -> list:
    """This rank's row groups: balanced by rows, deterministic, in file order -- or, where
    each rank's own files hold the table (``rank_data=local``), the row groups of its files."""
    if any(g.rank >= 0 for g in groups):
        return [g for g in groups if g.rank == rank]
    load = [0] * world
    mine = set()
    order = sorted(range(len(groups)), key=lambda i: (-groups[i].num_rows, i))
    for i in order:
        r = min(range(world), key=lambda k: (load[k], k))
        load[r] += groups[i].num_rows
        if r == rank:
            mine.add(i)
    return [g for i, g in enumerate(groups) if i in mine]


def shared_fingerprint(table_name: str, groups: list) -> str:
    """What every rank must agree on before it takes its :func:`share` of ``groups``: their
    count and rows, and their content as far as the footers tell (each row group's digest, in
    order: a rank whose files are listed in another order would share out other groups)."""
    content = hashlib.sha1("".join(g.digest for g in groups).encode()).hexdigest()[:16]
    return f"data {table_name}: {len(groups)} row groups, {sum(g.num_rows for g in groups)} rows, content {content}"


def placed(op: Operator, state) -> Operator:
    """``op`` as it runs on this rank: rows on rank 0 only are nothing on the others (their
    exchanges still run: the driver walks through the stand-in)."""
    if state.world > 1 and state.rank != 0 and op.distribution == SINGLE and not isinstance(op, OffRankOp):
        off = OffRankOp(op)
        off.distribution = SINGLE
        return off
    return op


def gather(op: Operator, state) -> Operator:
    """``op``'s rows on rank 0."""
    if op.distribution == SINGLE:
        return op
    out = ExchangeOp(op, "gather")
    out.distribution = SINGLE
    return placed(out, state)


def exchange(op: Operator, keys: tuple, types: tuple, state) -> Operator:
    """``op``'s rows on the rank their keys hash to."""
    out = ExchangeOp(op, "hash", tuple(keys), tuple(types))
    out.distribution = hashed(keys)
    return out


def range_exchange(op: Operator, keys: tuple) -> Operator:
    """``op``'s rows on the rank whose range of the sort ``keys`` holds them (splitters sampled
    at run time: :mod:`sluice.exec.range_partition`)."""
    out = ExchangeOp(op, "range", tuple(keys))
    out.distribution = ANY
    return out


def ordered_gather(op: Operator, state) -> Operator:
    """``op``'s rows on rank 0, rank 0's first, then rank 1's, ..., each in its own order."""
    out = ExchangeOp(op, "gather", ordered=True)
    out.distribution = SINGLE
    return placed(out, state)


def broadcast(op: Operator) -> Operator:
    """``op``'s rows on every rank."""
    out = ExchangeOp(op, "broadcast")
    out.distribution = BROADCAST
    return out


def _build_bytes(node) -> float:
    rows, _ = estimate(node)
    return rows * sum(t.estimated_bytes for t in node.schema.values())


def broadcasts(c: JoinChoice, limit: int, world: int) -> bool:
    """Whether a join's build side goes to every rank rather than both sides by their keys'
    hash: a build side estimated under ``limit`` bytes (what every rank then holds; -1: any,
    0: none), when that moves fewer bytes -- broadcasting sends the build side to the other
    ``world - 1`` ranks, partitioning sends (build + probe) * (world - 1) / world -- so a build
    side near the probe's size is hashed, and more so as ranks are added (at 64 ranks a
    build side beyond 1/63 of the probe side)."""
    if limit <= 0:
        return limit < 0
    b = _build_bytes(c.build)
    return b <= limit and b * (world - 1) < _build_bytes(c.probe)


def place_join(plan: Join, c: JoinChoice, probe: Operator, build: Operator, state):
    """(probe, build, distribution of the join's output) with the exchanges the join needs."""
    if probe.distribution == SINGLE and build.distribution == SINGLE:
        return probe, build, SINGLE
    emits_build = c.mode in BUILD_EMITTING
    if probe.distribution == SINGLE:  # on rank 0 only (a recursive CTE, a CSV file, a gathered
        return probe, gather(build, state), SINGLE  # result): the join streams it there, as one process would
    if build.distribution == SINGLE:
        if emits_build or c.mode == JoinMode.FULL:
            return gather(probe, state), build, SINGLE
        return probe, broadcast(build), probe.distribution
    global_build = plan.null_aware or c.mode == JoinMode.MARK or plan.single_row or not c.probe_keys
    return _place(c, global_build, probe, build, state)


def place_asof_join(c: JoinChoice, probe: Operator, build: Operator, state):
    """:func:`place_join` for an ASOF join: hashed on its equality keys (each key set's right
    rows on one rank) or the right side broadcast; without equality keys every left row may
    pick any right row, so the right side is broadcast (inner, left, semi, anti) or both sides
    gathered to rank 0 (right, full)."""
    if probe.distribution == SINGLE and build.distribution == SINGLE:
        return probe, build, SINGLE
    if probe.distribution == SINGLE:
        return probe, gather(build, state), SINGLE
    if build.distribution == SINGLE:
        if c.mode in BUILD_EMITTING or c.mode == JoinMode.FULL:
            return gather(probe, state), build, SINGLE
        return probe, broadcast(build), probe.distribution
    return _place(c, not c.probe_keys, probe, build, state)


def _place(c: JoinChoice, global_build: bool, probe: Operator, build: Operator, state):
    """The exchanges of a join whose inputs are both spread over the ranks."""
    emits_build = c.mode in BUILD_EMITTING
    if global_build:
        if emits_build or c.mode == JoinMode.FULL:
            return gather(probe, state), gather(build, state), SINGLE
        return probe, broadcast(build), probe.distribution
    if broadcasts(c, state.config.broadcast_bytes, state.world) and not emits_build:
        return probe, broadcast(build), probe.distribution
    types = tuple(_key_type(p.type, b.type) for p, b in zip(c.probe_keys, c.build_keys))
    probe_ex, build_ex = exchange(probe, c.probe_keys, types, state), exchange(build, c.build_keys, types, state)
    hot = _hot_values(c, probe, state)
    if hot:  # a hot key's probe rows stay, its build rows go to every rank (exec/hot_keys.py)
        probe_ex.hot = HotKeys(c.probe_keys[0], hot, "stay")
        build_ex.hot = HotKeys(c.build_keys[0], hot, "all")
        probe_ex.distribution = build_ex.distribution = ANY
        return probe_ex, build_ex, ANY
    return probe_ex, build_ex, partitioned_output(c)


#: Join modes whose rows are exact with a hot key's probe rows anywhere and its build rows on
#: every rank: each probe row's matches, or a probe row decided alone.
_HOT_SPLITTABLE = (JoinMode.INNER, JoinMode.PROBE_OUTER, JoinMode.SEMI, JoinMode.ANTI)


def _hot_values(c: JoinChoice, probe: Operator, state) -> tuple[int, ...]:
    """The probe key's hot values where a join may route them apart (``hot_keys``)."""
    if not state.config.hot_keys or state.world < 2 or c.mode not in _HOT_SPLITTABLE or len(c.probe_keys) != 1:
        return ()
    if not (c.probe_keys[0].type.is_integer and c.build_keys[0].type.is_integer):
        return ()
    return hot_key_values(probe, c.probe_keys[0], state.world, state.config.hot_key_share)


def partitioned_output(c: JoinChoice):
    """How a join over inputs hashed on its keys leaves its rows: each row on the rank its
    key's value hashed to, where the key column holds that value in every output row -- the
    probe keys when only probe rows come out (matched, or null-extended on their own rank), the
    build keys when only build rows or matched rows do (the build side's unmatched rows stay on
    their rank); a FULL join's unmatched rows carry NULL in one key or the other, on any rank.
    An aggregation grouping by these keys then finds each group on one rank
    (:func:`sluice.physical.lower.grouped_in_place`)."""
    if c.mode in (JoinMode.INNER, JoinMode.PROBE_OUTER, JoinMode.SEMI, JoinMode.ANTI):
        return hashed(c.probe_keys)
    if c.mode in (JoinMode.BUILD_OUTER, JoinMode.BUILD_SEMI, JoinMode.BUILD_ANTI):
        return hashed(c.build_keys)
    return ANY


def mark_pipelined(root: Operator) -> None:
    """Choose the exchange whose received rows go to their consumer round by round
    (``exchange_receive=pipelined``: :class:`sluice.exec.exchange.PipelinedReceive`): at most
    one per plan, the deepest that qualifies among the exchanges every later stage lies above
    (each later stage then pulls it as it runs, rather than draining it first), whose consumer
    streams: not a join's build side (built whole before any probe), not an ordered gather (its
    senders are held apart), not one whose build keys become a runtime filter (merged when its
    stage ends), not one read by two parents or in a recursion (pulled more than once)."""
    order = exchanges_in_order(root)
    parents: dict = {}
    for op in root.walk():
        for c in op.children:
            parents.setdefault(c, []).append(op)

    def ancestors(op: Operator) -> set:
        out, stack = set(), list(parents.get(op, ()))
        while stack:
            a = stack.pop()
            if a not in out:
                out.add(a)
                stack.extend(parents.get(a, ()))
        return out

    for i, e in enumerate(order):
        above = ancestors(e)
        if not all(later in above for later in order[i + 1:]):
            continue
        node, up = e, parents.get(e, [])
        while len(up) == 1 and isinstance(up[0], OffRankOp):  # rank 0 has no stand-in: look through it
            node, up = up[0], parents.get(up[0], [])
        # the same answer on every rank (the plan's root streams to the driver: no parent is fine)
        if (e.kind == "range" or e.ordered or e.publishes or len(up) > 1 or (up and getattr(up[0], "build", None) is node)
                or any(isinstance(a, (RecursiveUnionOp, KeyedRecursiveUnionOp)) for a in above)):
            continue
        e.pipelined = True
        return
