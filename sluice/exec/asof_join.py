"""ASOF join: each probe (left) row with the one build (right) row of equal keys whose
inequality value is nearest on the side the condition allows (``left.t >= right.t``: the
latest right value not after the left one).

The hash join's machinery materialises the right side and streams the left (a subclass of
:class:`sluice.exec.hash_join.HashJoinOp`): rows of one key set hash to one partition, so
hybrid spilling, the partition-by-partition join of spilled partitions and the exchanges
between ranks all keep each key set's right rows together. What differs is the join of a
partition held in memory -- sort-based, no pairs enumerated:

1. Index the right rows with no NULL key or value: their key group ``g`` (their key code, or
   its rank among the distinct ones) and their value's slot ``s`` among ``W`` per group (the
   value less the smallest, + 1; or, where that range is too wide, twice its rank among the
   distinct values, + 1; strings by their rank among the right side's distinct strings, in
   byte order), as one sortable int64 ``g * W + s``; sort.
2. A left row's composite is its group's ``g * W`` plus its value's slot -- the same as a
   right row's where the values are equal, between those of the right values around it where
   not (0 or ``W - 1`` below or above all): one searchsorted places it among the right rows,
   and the nearest right row is the one just before (>=, >) or at (<=, <) that place -- if it
   has the same group. With a condition reading both sides (the residual), the nearest
   right row that passes it: candidates tried nearest first for a few rounds, then the rest
   of the row's group on that side in batches of pairs (:meth:`_AsofIndex.nearest_passing`).
3. Emit by mode as the hash join does: pairs (inner), left rows without a match
   null-extended (left), left rows with / without one (semi / anti), right rows no left row
   picked, after the left side (right, full).

Equal right rows (same keys and value) are interchangeable to DuckDB, which picks any; this
picks the last one read. Without equality keys the whole right side is one group (held in
memory, as a join without keys is; across ranks it is broadcast or gathered, not hashed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Chunk
from sluice.errors import ResourcesExhausted
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.join_mode import BUILD_EMITTING
from sluice.exec.nested_loop import _MAX_PAIR_BATCH, _MIN_PAIR_BATCH
from sluice.exec.range_join import _keys, _valid
from sluice.expr.evaluate import evaluate, evaluate_predicate
from sluice.expr.nodes import Expr
from sluice.kernels.join_keys import BuildKeys
from sluice.types import LType, common_numeric

#: Composite codes stay below this (groups x slots per group).
_COMPOSITE_LIMIT = 1 << 62
_I64 = (-(1 << 63), (1 << 63) - 1)
#: Rank groups and values whatever their ranges (tests: the ranked and direct forms agree).
FORCE_RANKED = False
#: Rounds of one candidate per probe row (nearest first) before a row's whole side of its
#: group is tested against a condition reading both sides.
_PASSING_ROUNDS = 4


def _host_strings(d: pa.Array) -> np.ndarray:
    """A string dictionary as a NumPy array of Python strings (NULL entries as '': a NULL value
    is never looked up -- its row is not valid)."""
    return np.asarray(d.fill_null("").to_numpy(zero_copy_only=False), dtype=object)


def order_type(a: LType, b: LType) -> LType:
    """The type both sides of the inequality are ordered in."""
    return a if a == b else common_numeric(a, b)


@dataclass(eq=False)
class AsofJoinOp(HashJoinOp):
    probe_on: Expr | None = None  # the left side's inequality value
    build_on: Expr | None = None  # the right side's
    op: str = ">="  # probe_on op build_on
    probe_filter: Expr | None = None  # probe rows failing it match nothing
    label = "AsofJoin"

    def describe(self):
        keys = ", ".join([f"{p} = {b}" for p, b in zip(self.probe_keys, self.build_keys)]
                         + [f"{self.probe_on} {self.op} {self.build_on}"])
        where = "" if self.probe_keys else " (no equality keys: the right side is held whole)"
        if self.probe_filter is not None:
            where += f" left rows matching only where {self.probe_filter}"
        if self.residual is not None:
            where += f" the nearest passing {self.residual}"
        return f"AsofJoin {self.mode} [{keys}]{where} (probe=first child, build=second)"

    def _no_keys(self, ctx, build: Chunk):
        with ctx.state_pool.reservation(f"{self.label} index") as res:  # (the build side is held by the materializer)
            yield from self._join(ctx, build, self.probe.stream(ctx), [], None, res)

    def _batch(self, ctx) -> int:
        """Pairs tested against the residual at once, at most."""
        return max(min(ctx.config.chunk_rows, _MAX_PAIR_BATCH), _MIN_PAIR_BATCH)

    def _join(self, ctx, build: Chunk, probe, types, info, res=None):
        """The ASOF join of ``build`` (a partition, all in memory) with the ``probe`` chunks."""
        dev = ctx.device
        m = build.num_rows
        index = _AsofIndex(self, build, types)
        if res is not None:
            res.force(index.nbytes())
        flags = torch.zeros(m, dtype=torch.bool, device=dev) if self.mode in BUILD_EMITTING else None
        for chunk in probe:
            p, pos, g = index.match(chunk)
            if self.residual is not None:  # the nearest right row that passes it
                p, pos = index.nearest_passing(chunk, build, p, pos, g, self._batch(ctx))
            b = index.rows[pos]
            if flags is not None:
                flags[b] = True
            out = self._emit_probe(chunk, build, p, b, None, p, m, False, [])
            if out is not None and out.num_rows:
                yield out
        if flags is not None:
            out = self._emit_build(build, flags, dev)
            if out is not None and out.num_rows:
                yield out


class _AsofIndex:
    """The right rows of a partition sorted by (key group, value) as one int64 (step 1).

    The group is the key code itself where the codes' range allows (else its rank among the
    distinct codes), the value its offset from the smallest where the range allows (else twice
    its rank among the distinct values, + 1): each rank costs a binary search per probe row,
    which dominated (2 M trades x 1 M quotes: two searches of 0.35-0.8 s each per chunk)."""

    def __init__(self, op: AsofJoinOp, build: Chunk, types) -> None:
        self.op = op
        self.type = order_type(op.probe_on.type, op.build_on.type)
        m = build.num_rows
        on = evaluate(op.build_on, build).expand(m)
        ok = _valid(on, m)
        values = _keys(on, self.type)
        self.keys = None
        codes = torch.zeros(m, dtype=torch.int64, device=values.device)
        card = 1
        if op.build_keys:
            self.keys = BuildKeys([evaluate(k, build) for k in op.build_keys], list(types))
            codes = self.keys.key.to(values.device)
            card = max(int(self.keys.card), 1)
            if self.keys.valid is not None:
                ok = ok & self.keys.valid.expand(m)
        rows = torch.nonzero(ok).squeeze(1)
        codes, values = codes[rows], values[rows]
        self.groups = self.values = self.strings = None  # ranked groups / values (None: direct), strings
        self.lo = self.hi = 0
        if rows.numel() == 0:
            self.width, self.comp, self.rows = 1, codes, rows
            return
        if self.type.kind == "string":
            # strings in byte order (DuckDB's): their ranks among the distinct right values
            self.strings = np.unique(_host_strings(on.dictionary))
            values = torch.from_numpy(np.searchsorted(self.strings, _host_strings(on.dictionary))).to(
                values.device)[values.long()]
            vmin, vmax = 0, 0
            span = _COMPOSITE_LIMIT
        else:
            vmin, vmax = (int(x) for x in torch.aminmax(values))
            span = vmax - vmin + 3 if _I64[0] < vmin and vmax < _I64[1] and not FORCE_RANKED else _COMPOSITE_LIMIT
        if card * span >= _COMPOSITE_LIMIT or FORCE_RANKED:
            self.groups = torch.unique(codes)
            card = int(self.groups.numel())
            codes = torch.searchsorted(self.groups, codes)
        if card * span < _COMPOSITE_LIMIT:  # slots 1 .. span - 2; a probe below all 0, above all span - 1
            self.lo, self.hi, self.width = vmin - 1, vmax + 1, span
            slots = values - self.lo
        else:
            self.values = torch.unique(values) if self.strings is None else \
                torch.arange(len(self.strings), dtype=torch.int64, device=values.device)
            self.width = 2 * int(self.values.numel()) + 1
            if card * self.width >= _COMPOSITE_LIMIT:
                raise ResourcesExhausted("ASOF JOIN: too many key groups and values in one partition to index")
            slots = 2 * torch.searchsorted(self.values, values) + 1
        self.comp, order = torch.sort(codes * self.width + slots, stable=True)
        self.rows = rows[order]

    def nbytes(self) -> int:
        extra = sum(int(t.numel()) for t in (self.groups, self.values) if t is not None)
        return 8 * (2 * int(self.comp.numel()) + extra)

    def match(self, chunk: Chunk) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(probe row, index position, group) of each probe row of ``chunk`` that has a nearest
        right row (step 2); ``self.rows[position]`` is that row."""
        op = self.op
        n = chunk.num_rows
        m = int(self.comp.numel())
        dev = self.comp.device
        none = torch.zeros(0, dtype=torch.int64, device=dev)
        if n == 0 or m == 0:
            return none, none, none
        on = evaluate(op.probe_on, chunk).expand(n)
        ok = _valid(on, n)
        if op.probe_filter is not None:
            ok = ok & evaluate_predicate(op.probe_filter, chunk).to(ok.device)
        pv = _keys(on, self.type)
        if self.keys is not None:
            codes, kok = self.keys.probe([evaluate(k, chunk) for k in op.probe_keys], n)
            ok = ok & kok.to(dev)
            g = torch.where(ok, codes.to(dev), 0)
        else:
            codes = g = torch.zeros(n, dtype=torch.int64, device=dev)
        if self.groups is not None:
            g_count = int(self.groups.numel())
            g = torch.searchsorted(self.groups, g).clamp_(max=g_count - 1)
            ok = ok & (self.groups[g] == codes.to(dev))
        if self.strings is not None:  # each probe dictionary entry's slot among the right's strings
            d = _host_strings(on.dictionary)
            i = np.searchsorted(self.strings, d)
            at_d = np.minimum(i, max(len(self.strings) - 1, 0))
            equal = (i < len(self.strings)) & (self.strings[at_d] == d) if len(self.strings) else np.zeros(len(d), bool)
            slot = torch.from_numpy(2 * i + equal).to(dev)[on.data.long()]
        elif self.values is None:
            slot = pv.clamp(self.lo, self.hi) - self.lo
        else:
            r_count = int(self.values.numel())
            i = torch.searchsorted(self.values, pv)
            slot = 2 * i + ((i < r_count) & (self.values[i.clamp(max=r_count - 1)] == pv)).to(torch.int64)
        q = g * self.width + slot
        if op.op == ">=":  # the last right value <= the left one
            at = torch.searchsorted(self.comp, q, right=True) - 1
        elif op.op == ">":
            at = torch.searchsorted(self.comp, q) - 1
        elif op.op == "<=":  # the first right value >= the left one
            at = torch.searchsorted(self.comp, q)
        else:
            at = torch.searchsorted(self.comp, q, right=True)
        inside = (at >= 0) & (at < m)
        at = at.clamp(0, m - 1)
        hit = ok & inside & (torch.div(self.comp[at], self.width, rounding_mode="floor") == g)
        p = torch.nonzero(hit).squeeze(1)
        return p, at[p], g[p]

    def nearest_passing(self, chunk: Chunk, build: Chunk, p, pos, g, batch: int):
        """(probe row, index position) of the nearest right row of each probe row ``p`` that
        passes the join's residual (a condition reading both sides), from its nearest one at
        ``pos`` away from its value: a few rounds of one candidate per row still without one,
        then the rest of each such row's group on that side, a batch of pairs at a time, the
        nearest passing one kept."""
        op = self.op
        step = -1 if op.op in (">=", ">") else 1
        m = int(self.comp.numel())
        done_p, done_pos = [], []
        for _ in range(_PASSING_ROUNDS):
            if p.numel() == 0:
                break
            ok = evaluate_predicate(op.residual, op._pair(chunk, build, p, self.rows[pos]))
            done_p.append(p[ok])
            done_pos.append(pos[ok])
            p, pos, g = p[~ok], pos[~ok] + step, g[~ok]
            inside = (pos >= 0) & (pos < m)
            pos = pos.clamp(0, m - 1)
            same = inside & (torch.div(self.comp[pos], self.width, rounding_mode="floor") == g)
            p, pos, g = p[same], pos[same], g[same]
        if p.numel():
            # the rest of each group on the row's side: [start, pos] below, [pos, end] above
            if step < 0:
                edge = torch.searchsorted(self.comp, g * self.width)
                lo, counts = edge, pos - edge + 1
            else:
                edge = torch.searchsorted(self.comp, (g + 1) * self.width)
                lo, counts = pos, edge - pos
            best = torch.full((int(p.numel()),), -1 if step < 0 else m, dtype=torch.int64, device=pos.device)
            ends = torch.cumsum(counts, 0)
            total, done, row = int(ends[-1]), 0, 0
            while done < total:  # rows whose candidates end within the next ``batch`` pairs (one at least)
                stop = max(int(torch.searchsorted(ends, torch.tensor(done + batch, device=ends.device), right=True)),
                           row + 1)
                stop = min(stop, int(p.numel()))
                size = int(ends[stop - 1]) - done
                which = torch.repeat_interleave(torch.arange(row, stop, device=p.device), counts[row:stop],
                                                output_size=size)
                cand = lo[which] + (torch.arange(size, device=p.device) - (ends[which] - counts[which] - done))
                ok = evaluate_predicate(op.residual, op._pair(chunk, build, p[which], self.rows[cand]))
                if step < 0:
                    best.scatter_reduce_(0, which[ok], cand[ok], "amax")
                else:
                    best.scatter_reduce_(0, which[ok], cand[ok], "amin")
                done += size
                row = stop
            found = (best >= 0) & (best < m)
            done_p.append(p[found])
            done_pos.append(best[found])
        if not done_p:
            return p, pos
        return torch.cat(done_p), torch.cat(done_pos)
