"""Hash join: materialise the build side, stream the probe side.

1. Build: concatenate the build side's chunks, code its keys (:class:`BuildKeys`) and index
   them (:class:`JoinTable`: direct table / CSR offsets for dense keys, sorted array else).
2. Probe: per chunk, code the keys against the build, expand all matching pairs, apply the
   residual condition on the pairs.
3. Emit by mode: inner pairs; probe rows with/without a match (semi/anti); unmatched probe
   rows null-extended (probe_outer); matched flags on the build side, whose rows are emitted
   after the probe side is exhausted (build_outer, build_semi, build_anti).

Joins without keys (cross joins, scalar subqueries, EXISTS with only non-equality
correlation) build the same way and then run as a nested loop (:mod:`sluice.exec.nested_loop`);
null extension of unmatched rows is :mod:`sluice.exec.null_extend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from sluice.chunk import Chunk, Column, concat_chunks
from sluice.expr.evaluate import evaluate, evaluate_predicate
from sluice.exec.join_mode import BUILD_EMITTING, JoinMode
from sluice.kernels.hash import hash_columns, partition_of
from sluice.kernels.join_keys import BuildKeys, JoinTable
from sluice.exec.materialize import PARTITION_BITS, Materializer
from sluice.exec.null_extend import empty_chunk, null_extended
from sluice.exec.nested_loop import nested_loop_join
from sluice.exec.operators import Operator
from sluice.expr.nodes import Expr
from sluice.types import BOOL, LType, common_numeric

#: Building the join table needs about this many times the build side's bytes (the pages,
#: their concatenation, key codes and the table).
JOIN_FACTOR = 3


@dataclass
class _BuildInfo:
    """Facts about the whole build side that every partition's join needs."""

    rows: int = 0
    has_null: bool = False  # a NULL join key (NOT IN semantics)


def _any_null_key(cols: list[Column], n: int) -> bool:
    return any(c.valid is not None and not bool(c.valid.expand(n).all()) for c in cols)


def _key_type(a: LType, b: LType) -> LType:
    # (nested values of any integer widths key alike: order keys write every integer as int64,
    # a struct's split fields compare as stored -- kernels/nested_keys.py)
    if a.kind in ("string", "date", "timestamp", "timestamptz", "interval", "bool") or a == b or a.is_nested:
        return a
    return common_numeric(a, b)


@dataclass(eq=False)
class HashJoinOp(Operator):
    probe: Operator
    build: Operator
    mode: JoinMode
    probe_keys: tuple[Expr, ...]
    build_keys: tuple[Expr, ...]
    residual: Expr | None
    probe_schema: dict[str, LType]
    build_schema: dict[str, LType]
    null_aware: bool = False
    single_row: bool = False
    below_state: int = 0  # estimated bytes of the materialising operators on the probe side (they run while the table is held)
    outputs: tuple[str, ...] | None = None  # the columns emitted (None: all)
    mark: str | None = None  # mode "mark": the name of the boolean column added to each probe row
    publishes: list = field(default_factory=list)  # FilterSlots over build keys, published after the build
    label = "HashJoin"

    def __post_init__(self):
        self.children = (self.probe, self.build)
        # Matched pairs gather only the columns emitted or read by the residual condition.
        self._pair_cols = None if self.outputs is None else \
            set(self.outputs) | (self.residual.columns() if self.residual is not None else set())

    def start(self, ctx):
        # Build sides first: with reader combining their read tasks then queue ahead of the
        # probe side's read-ahead on the shared pool, and probing (which waits for the whole
        # build) starts sooner.
        self.build.start(ctx)
        self.probe.start(ctx)

    def describe(self):
        keys = ", ".join(f"{p} = {b}" for p, b in zip(self.probe_keys, self.build_keys))
        r = f" residual={self.residual}" if self.residual is not None else ""
        extra = " single_row" if self.single_row else ""
        return f"HashJoin {self.mode} [{keys}]{r}{extra} (probe=first child, build=second)"

    # ------------------------------------------------------------------ run

    def execute(self, ctx):
        if self.outputs is None:
            yield from self._execute(ctx)
            return
        for out in self._execute(ctx):
            yield out.select(self.outputs)

    def _execute(self, ctx):
        dev = ctx.device
        stats = ctx.memory_stats(self)
        types = [_key_type(p.type, b.type) for p, b in zip(self.probe_keys, self.build_keys)]
        bmat = Materializer(ctx, f"{self.label} build", self._hasher(self.build_keys, types), stats=stats)
        pmat = None
        try:
            info = _BuildInfo()
            filters = [(slot.key, ctx.runtime_filter(slot.spec)) for slot in self.publishes]
            for chunk in self.build.stream(ctx):
                info.rows += chunk.num_rows
                for key, rf in filters:
                    rf.add(evaluate(key, chunk), chunk.num_rows)
                if self.null_aware and self.build_keys and not info.has_null:
                    info.has_null = _any_null_key([evaluate(k, chunk) for k in self.build_keys], chunk.num_rows)
                bmat.add(chunk)
            bmat.finish()
            for _, rf in filters:
                rf.publish()
            if not self.probe_keys:
                yield from self._no_keys(ctx, self._all_in_memory(bmat, dev))
                return
            # The table (JOIN_FACTOR x the pages) is held while the probe side runs, and the
            # materialising operators below it on that side need memory meanwhile (their
            # estimated state, at most half of what is free), as do the chunks in flight (an
            # eighth): the table takes what is left.
            free = bmat.pool.available + bmat.held_bytes
            if not bmat.spilled and bmat.held_bytes * JOIN_FACTOR <= self._room(free):
                with bmat.pool.reservation(f"{self.label} table") as tres:
                    pages = bmat.pages()
                    tres.force(bmat.held_bytes)
                    build = self._concat(pages, dev)
                    del pages
                    bmat.release_all()  # the concatenation replaces the pages
                    yield from self._join(ctx, build, self.probe.stream(ctx), types, info, tres)
                return
            # Hybrid hash join: in-memory partitions are joined while the probe side streams;
            # probe rows of spilled partitions are spilled too and joined partition by partition.
            pool = bmat.pool
            # Keep in memory what leaves room for the rest of the pipeline (see above).
            bmat.spill_until(lambda held: held * JOIN_FACTOR <= self._room(pool.available + held + bmat._inflight))
            spilled = [p for p in range(bmat.nparts) if bmat.files[p] is not None]
            pmat = Materializer(ctx, f"{self.label} probe", self._hasher(self.probe_keys, types), stats=stats,
                                threshold=0)
            pmat.spill_partitions(spilled)  # probe rows of spilled partitions go straight to disk
            mem_pages = [pg for p in range(bmat.nparts) if bmat.files[p] is None for pg, _ in bmat.parts[p]]
            tres = bmat.pool.reservation(f"{self.label} table")
            tres.force(bmat.in_memory_bytes())
            build = self._concat(mem_pages, dev)
            mem_pages = []
            for p in range(bmat.nparts):  # the concatenation replaces the in-memory pages
                if bmat.files[p] is None:
                    bmat.release(p)
            spilled_mask = torch.zeros(bmat.nparts, dtype=torch.bool, device=dev)
            spilled_mask[spilled] = True
            probe_rest = self._divert(ctx, self.probe.stream(ctx), pmat, spilled_mask, types)
            yield from self._join(ctx, build, probe_rest, types, info, tres)
            del build
            tres.free()
            pmat.finish()
            yield from self._join_spilled(ctx, bmat, pmat, set(spilled), types, info, dev)
        finally:
            bmat.close()
            if pmat is not None:
                pmat.close()

    def _room(self, free: int) -> int:
        """Bytes of ``free`` the table may take (see :meth:`_execute`)."""
        others = min(free // 2, max(JOIN_FACTOR * self.below_state, free // 8 if self.below_state else 0))
        return free - others - free // 8

    def _hasher(self, keys, types):
        if not keys:
            return None
        return lambda page: hash_columns([evaluate(k, page) for k in keys], page.num_rows, types)

    def _concat(self, pages: list[Chunk], dev) -> Chunk:
        # String dictionaries are appended, not deduplicated: build rows are only gathered by
        # index, and key codes are deduplicated where they are compared (column_codes). Hashing
        # customer's 1.5 M names at TPC-H SF 10 was 10 % of q18, for the 399 rows that matched.
        build = concat_chunks(pages, unify=False) or empty_chunk(self.build_schema, dev)
        return Chunk({k: c.expand(build.num_rows) for k, c in build.columns.items()}, build.num_rows, home=dev)

    def _all_in_memory(self, bmat: Materializer, dev) -> Chunk:
        pages = []
        for part in bmat.partitions():
            pages.extend(part.load(bmat.res))
        return self._concat(pages, dev)

    def _divert(self, ctx, probe, pmat: Materializer, spilled_mask: torch.Tensor, types):
        """Probe chunks less their rows of spilled partitions, which go to ``pmat``."""
        for chunk in probe:
            h = hash_columns([evaluate(k, chunk) for k in self.probe_keys], chunk.num_rows, types)
            part = partition_of(h, PARTITION_BITS, 0).to(spilled_mask.device)
            away = spilled_mask[part]
            if bool(away.any()):
                pmat.add(chunk.filter(away))
                chunk = chunk.filter(~away)
            if chunk.num_rows:
                yield chunk

    def _join_spilled(self, ctx, bmat, pmat, parts: set, types, info, dev):
        """Join spilled partitions pairwise: build partition in memory, its probe rows streamed;
        a build partition still too big is split on the next hash bits, with its probe rows."""
        bparts = {p.index: p for p in bmat.partitions() if p.index in parts}
        pparts = {p.index: p for p in pmat.partitions()}
        for idx in sorted(set(bparts) | (set(pparts) & parts)):
            bp, pp = bparts.get(idx), pparts.get(idx)
            if bp is not None and not bp.fits(JOIN_FACTOR):
                bsub = bp.split()
                psub = pp.split(to_disk=True) if pp is not None else None
                try:
                    sub_parts = {p for p in range(bsub.nparts)}
                    if psub is None:
                        psub = Materializer(ctx, f"{self.label} probe", None, threshold=0)
                        psub.finish()
                    yield from self._join_spilled(ctx, bsub, psub, sub_parts, types, info, dev)
                finally:
                    bsub.close()
                    if psub is not None:
                        psub.close()
                continue
            with bmat.pool.reservation(f"{self.label} partition") as res:
                build = self._concat(bp.load(res) if bp is not None else [], dev)
                probe = pp.stream() if pp is not None else iter(())
                yield from self._join(ctx, build, probe, types, info, res)
            if bp is not None:
                bmat.release(idx)
            if pp is not None:
                pmat.release(idx)

    def _join(self, ctx, build: Chunk, probe, types, info: "_BuildInfo", res=None):
        """The in-memory hash join of ``build`` (all in memory) with the ``probe`` chunks; the
        key codes and the table are accounted on ``res`` while they live."""
        dev = ctx.device
        m = build.num_rows
        bcols = [evaluate(k, build) for k in self.build_keys]
        bk = BuildKeys(bcols, types)
        table = JoinTable(bk.key, bk.valid, bk.card, res.pool.available if res is not None else None)
        if res is not None:
            res.force(table.nbytes() + bk.key.numel() * 8)
        flags = torch.zeros(m, dtype=torch.bool, device=dev) if self.mode in BUILD_EMITTING else None
        exists = self.residual is not None and self.mode in (JoinMode.SEMI, JoinMode.ANTI, JoinMode.MARK) and not table.unique \
            and table.n > 0
        for chunk in probe:
            pcols = [evaluate(k, chunk) for k in self.probe_keys]
            key, ok = bk.probe(pcols, chunk.num_rows)
            pair = None
            if exists:  # only whether some build row passes the residual matters
                p = torch.nonzero(self._exists(chunk, build, table, key, ok)).squeeze(1)
                b = p[:0]
            else:
                p, b = table.match(key, ok)
                if self.residual is not None:
                    pair = self._pair(chunk, build, p, b)
                    keep = evaluate_predicate(self.residual, pair)
                    p, b = p[keep], b[keep]
                    pair = pair.filter(keep)
            if flags is not None:
                flags[b] = True
            out = self._emit_probe(chunk, build, p, b, pair, ok, info.rows, info.has_null, pcols)
            if out is not None and out.num_rows:
                yield out
        if flags is not None:
            out = self._emit_build(build, flags, dev)
            if out is not None and out.num_rows:
                yield out

    #: Rounds of one candidate per probe row before the remaining pairs are expanded at once.
    EXISTS_ROUNDS = 4

    def _exists(self, chunk: Chunk, build: Chunk, table, key, ok) -> torch.Tensor:
        """Semi, anti and mark joins with a residual: which probe rows have a build row of
        their key that passes it. Round r tries the r-th build row of every probe row still
        without one, so a row that passes early stops costing; after EXISTS_ROUNDS rounds the
        rest of the pairs are expanded at once. (TPC-DS Q95's order-number self-join with
        ``warehouse <> warehouse``: 7 M probe rows, 90 M pairs, nearly all settled in two
        rounds.)"""
        dev = key.device
        n = chunk.num_rows
        lo, cnt = table.ranges(key, ok)
        matched = torch.zeros(n, dtype=torch.bool, device=dev)
        live = torch.nonzero(cnt > 0).squeeze(1)
        for r in range(self.EXISTS_ROUNDS):
            if live.numel() == 0:
                return matched
            b = table.sorted_rows[lo[live] + r]
            keep = evaluate_predicate(self.residual, self._pair(chunk, build, live, b))
            matched[live[keep]] = True
            live = live[~keep & (cnt[live] > r + 1)]
        if live.numel():
            rest = cnt[live] - self.EXISTS_ROUNDS
            total = int(rest.sum())
            idx = torch.repeat_interleave(torch.arange(live.numel(), device=dev), rest, output_size=total)
            p = live[idx]
            pos = lo[p] + self.EXISTS_ROUNDS + (torch.arange(total, device=dev) - (torch.cumsum(rest, 0) - rest)[idx])
            keep = evaluate_predicate(self.residual, self._pair(chunk, build, p, table.sorted_rows[pos]))
            matched[p[keep]] = True
        return matched

    def _pair(self, chunk: Chunk, build: Chunk, p, b) -> Chunk:
        keep = self._pair_cols
        cols = {k: c.take(p) for k, c in chunk.columns.items() if keep is None or k in keep}
        cols.update({k: c.take(b) for k, c in build.columns.items() if keep is None or k in keep})
        return Chunk(cols, int(p.numel()), chunk.seq, chunk.device)

    def _emit_probe(self, chunk, build, p, b, pair, ok, m, build_has_null, pcols):
        mode = self.mode
        if mode in (JoinMode.INNER, JoinMode.BUILD_OUTER):
            return pair if pair is not None else self._pair(chunk, build, p, b)
        if mode in (JoinMode.SEMI, JoinMode.ANTI, JoinMode.PROBE_OUTER, JoinMode.FULL, JoinMode.MARK):
            matched = torch.zeros(chunk.num_rows, dtype=torch.bool, device=ok.device)
            matched[p] = True
            if mode == JoinMode.SEMI:
                return chunk.filter(matched)
            if mode == JoinMode.MARK:
                return self._marked(chunk, matched, m, build_has_null, pcols)
            if mode == JoinMode.ANTI:
                keep = ~matched
                if self.null_aware and m > 0:
                    if build_has_null:
                        return None
                    keep = keep & ok_nonnull(pcols, chunk.num_rows, ok.device)
                return chunk.filter(keep)
            inner = pair if pair is not None else self._pair(chunk, build, p, b)
            unmatched = chunk.filter(~matched)
            if unmatched.num_rows == 0:
                return inner
            ext = null_extended(unmatched, self.build_schema, ok.device,
                                {k: build.columns[k].dictionary for k in self.build_schema}, chunk.seq)
            return concat_chunks([inner, ext]) if inner.num_rows else ext
        return None  # build_semi / build_anti emit at the end

    def _marked(self, chunk: Chunk, matched: torch.Tensor, m: int, build_has_null: bool, pcols) -> Chunk:
        """The probe rows with the mark column: TRUE where a build row matched; for IN
        (null-aware) NULL rather than FALSE where the probe key is NULL or a build key is,
        unless the build side is empty."""
        valid = None
        if self.null_aware and m > 0:
            known = matched if build_has_null else matched | ok_nonnull(pcols, chunk.num_rows, matched.device)
            valid = None if bool(known.all()) else known
        cols = dict(chunk.columns)
        cols[self.mark] = Column(matched, BOOL, valid)
        return Chunk(cols, chunk.num_rows, chunk.seq, chunk.device)

    def _no_keys(self, ctx, build: Chunk):
        return nested_loop_join(self, ctx, build)

    def _emit_build(self, build: Chunk, flags, dev):
        mode = self.mode
        if mode == JoinMode.BUILD_SEMI:
            return build.filter(flags)
        if mode == JoinMode.BUILD_ANTI:
            return build.filter(~flags)
        unmatched = build.filter(~flags)  # build_outer / full
        if unmatched.num_rows == 0:
            return None
        return null_extended(unmatched, self.probe_schema, dev)

def ok_nonnull(cols: list[Column], n: int, dev) -> torch.Tensor:
    keep = torch.ones(n, dtype=torch.bool, device=dev)
    for c in cols:
        if c.valid is not None:
            keep &= c.valid.expand(n)
    return keep
