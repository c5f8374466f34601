"""Streaming operators: scan, filter, project, limit, union, one-row.

Each ``execute`` pulls chunks from its children and yields chunks; none materialises its
input. Parameters live on the operator, state in the generator. Empty chunks are dropped.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Iterator


import torch

from sluice.chunk import Chunk, Column, entry_rows, row_values
from sluice.exec.context import ExecContext, timed
from sluice.expr.constants import literal_column
from sluice.expr.evaluate import evaluate, evaluate_predicate, predicate_positions
from sluice.catalog import RowGroup, TableInfo
from sluice.adapt.scan_policy import ScanPolicy
from sluice.io.parquet.reader import ScanReader
from sluice.metrics import OperatorStats, ScanStats
from sluice.expr.nodes import Expr, Lit
from sluice.plan.show import unnest_text
from sluice.types import INT64


class Operator(abc.ABC):
    children: tuple["Operator", ...] = ()
    label = "operator"
    #: (rows, bytes per row) of the state it materialises, estimated when lowered (None: none).
    state_estimate: tuple[float, int] | None = None
    #: How its rows are spread over the ranks (a sluice.physical.properties.Distribution), set
    #: when lowered.
    distribution = None

    @abc.abstractmethod
    def execute(self, ctx: ExecContext) -> Iterator[Chunk]:
        """Pull chunks from the children and yield this operator's output chunks."""

    def stream(self, ctx: ExecContext) -> Iterator[Chunk]:
        """``execute`` with rows, bytes and time counted in its run record (``ctx.run(op).stats``); parents pull this."""
        run = ctx.run(self)
        st = run.stats
        if st is None:
            st = run.stats = OperatorStats(self.label)
        return timed(self.execute(ctx), st, ctx.recorder, ctx.device)

    def start(self, ctx: ExecContext) -> None:
        """Called on every operator before the query runs (scans begin reading here)."""
        for c in self.children:
            c.start(ctx)

    def describe(self) -> str:
        return self.label

    def walk(self) -> Iterator["Operator"]:
        """This operator and every one below it, each once (a shared subplan has two parents)."""
        seen: set[Operator] = set()
        stack: list[Operator] = [self]
        while stack:
            o = stack.pop()
            if o not in seen:
                seen.add(o)
                yield o
                stack.extend(o.children)


#: The read-ahead queues of all scans take at most 1/SCAN_SHARE of the memory budget.
SCAN_SHARE = 4


@dataclass(eq=False)
class ScanOp(Operator):
    """A Parquet scan: runs its :class:`~sluice.physical.scan.ScanSpec` (what lowering decided)
    with what a run adds (the I/O pool, memory, the filters' contents)."""

    columns: dict[str, str]  # internal -> file column
    filter: Expr | None  # over the internal names (the spec's predicate is over the file's)
    spec: object  # the ScanSpec (sluice.physical.scan)
    pruned: int = 0
    outputs: tuple[str, ...] | None = None  # emitted columns (None: all)
    label = "Scan"

    @property
    def table(self) -> TableInfo:
        return self.spec.table

    @property
    def row_groups(self) -> tuple[RowGroup, ...]:
        return self.spec.row_groups

    @property
    def runtime_filters(self) -> tuple:
        """RuntimeFilterSpecs of the joins that filter this scan."""
        return self.spec.runtime_filters

    @property
    def minmax_bounds(self) -> tuple:
        """MinMaxBoundSpecs of the aggregation above (one at most)."""
        return self.spec.minmax_bounds

    def reader(self, ctx: ExecContext) -> ScanReader:
        run = ctx.run(self)
        r = run.reader
        if r is None:
            spec = self.spec
            stats = ScanStats(self.table.name, len(self.row_groups) + self.pruned, self.pruned)
            # The read-ahead queue is memory too: it reserves its bound -- no more than the
            # table's decoded size, and all scans together at most a quarter of the budget --
            # or what is left; at least one row group is always read ahead. Under a small
            # budget the read tasks (so the chunks) shrink to fit it.
            # On a GPU the queued tasks are on the device already (shipped by the I/O threads):
            # the device budget holds them.
            queue_pool = ctx.device_memory if ctx.device.type == "cuda" else ctx.memory
            res = queue_pool.reservation(f"Scan {self.table.name} queue")
            share = queue_pool.limit // (SCAN_SHARE * max(1, ctx.scan_count))
            want = min(spec.read_ahead_bytes, share)
            if not res.try_grow(want):
                res.try_grow(min(want, queue_pool.available))
            buffer_bytes = max(res.size, 1)
            reads = spec.reads
            if buffer_bytes < min(ctx.config.read_ahead_bytes, reads.decoded_bytes):
                # Tasks hold no more than the read-ahead budget (when it is smaller than a chunk's rows).
                reads = reads.capped(spec.table, list(spec.columns), ctx.cache, buffer_bytes)
            policy = None
            if spec.adaptive:
                policy = ScanPolicy(coordinator=ctx.scan_coordinator)
                stats.switches = policy.switches
            r = run.reader = ScanReader(
                spec, reads, config=ctx.config,
                pool=ctx.pool, cache=ctx.cache, device=ctx.device, recorder=ctx.recorder, stats=stats,
                progress=ctx.progress, buffer_bytes=buffer_bytes, reservation=res, policy=policy,
                runtime=[ctx.runtime_filter(s) for s in spec.runtime_filters],
                bound=ctx.minmax_bound(spec.bound) if spec.bound is not None else None,
                decode_pool=ctx.device_memory if ctx.device.type == "cuda" else ctx.memory, host_pool=ctx.memory,
                column_cache=ctx.column_cache if ctx.cache_on else None)
        return r

    def start(self, ctx: ExecContext) -> None:
        if ctx.config.on("reader_combining"):
            self.reader(ctx).start()

    def execute(self, ctx: ExecContext) -> Iterator[Chunk]:
        # The reader applies the filter (in the mode of each slice); columns only the filter
        # read are dropped here.
        keep = self.outputs if self.outputs is not None else tuple(self.columns)
        for chunk in self.reader(ctx):
            out = Chunk({k: chunk.columns[self.columns[k]] for k in keep}, chunk.num_rows, chunk.seq, ctx.device)
            if out.num_rows:
                yield out

    def describe(self) -> str:
        f = f" filter={self.filter}" if self.filter is not None else ""
        spec = self.spec  # what lowering decided: the read tasks, the mode, the decoder
        return (f"Scan {self.table.name} [{', '.join(self.columns.values())}]{f} tasks={len(spec.reads.tasks)} "
                f"mode={'adaptive' if spec.adaptive else spec.mode} decoder={spec.decoder} "
                f"row_groups={len(self.row_groups)} pruned={self.pruned}")


@dataclass(eq=False)
class OneRowOp(Operator):
    label = "OneRow"

    def execute(self, ctx):
        yield Chunk({}, 1, home=ctx.device)


@dataclass(eq=False)
class StatisticsOp(Operator):
    """One row of aggregates that lowering answered from a table's row-group statistics
    (:mod:`sluice.physical.statistics`): no row of the table is read."""

    table: str
    values: tuple  # (output name, Lit) per aggregate
    label = "Statistics"

    def execute(self, ctx: ExecContext) -> Iterator[Chunk]:
        yield Chunk({n: literal_column(v, ctx.device).expand(1) for n, v in self.values}, 1, home=ctx.device)

    def describe(self) -> str:
        return f"Statistics of {self.table} (no row read): " + ", ".join(f"{n}={v.value}" for n, v in self.values)


@dataclass(eq=False)
class FilterOp(Operator):
    child: Operator
    predicate: Expr
    label = "Filter"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        for chunk in self.child.stream(ctx):
            if not chunk.columns:
                out = Chunk({}, int(evaluate_predicate(self.predicate, chunk).sum()), chunk.seq, chunk.device)
            elif chunk.device.type == "cpu":
                idx = predicate_positions(self.predicate, chunk, ctx.config.on("selective_filters"))
                out = chunk if idx.numel() == chunk.num_rows else chunk.take(idx)
            else:
                out = chunk.filter(evaluate_predicate(self.predicate, chunk))
            if out.num_rows:
                yield out

    def describe(self):
        return f"Filter {self.predicate}"


@dataclass(eq=False)
class ProjectOp(Operator):
    child: Operator
    exprs: tuple[tuple[str, Expr], ...]
    label = "Project"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        for chunk in self.child.stream(ctx):
            cols, memo = {}, {}  # sub-expressions shared by the expressions, computed once
            for name, e in self.exprs:
                c = evaluate(e, chunk, memo)
                cols[name] = c.expand(chunk.num_rows) if c.is_const else c
            yield Chunk(cols, chunk.num_rows, chunk.seq, chunk.device)

    def describe(self):
        return "Project " + ", ".join(n if str(e) == n else f"{n}={e}" for n, e in self.exprs)


@dataclass(eq=False)
class LimitOp(Operator):
    child: Operator
    limit: int | None
    offset: int = 0
    label = "Limit"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        skip = self.offset
        left = self.limit
        if left == 0:
            return
        for chunk in self.child.stream(ctx):
            n = chunk.num_rows
            if skip >= n:
                skip -= n
                continue
            start = skip
            skip = 0
            stop = n if left is None else min(n, start + left)
            out = chunk.slice(start, stop) if (start, stop) != (0, n) else chunk
            if out.num_rows:
                yield out
            if left is not None:
                left -= out.num_rows
                if left <= 0:
                    return

    def describe(self):
        return f"Limit {self.limit} offset {self.offset}"


@dataclass(eq=False)
class RepeatOp(Operator):
    """Each row ``count`` times, in order (the bag result of INTERSECT/EXCEPT ALL); output
    chunks are cut to ``chunk_rows`` however many copies one row asks for."""

    child: Operator
    count: str
    label = "Repeat"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        step = ctx.config.chunk_rows
        for chunk in self.child.stream(ctx):
            counts = chunk.columns[self.count].expand(chunk.num_rows).data.to(torch.int64).clamp_(min=0)
            idx = torch.repeat_interleave(torch.arange(chunk.num_rows, device=counts.device), counts)
            for start in range(0, int(idx.numel()), step):
                yield chunk.take(idx[start: start + step])

    def describe(self):
        return f"Repeat {self.count} times"


@dataclass(eq=False)
class UnnestOp(Operator):
    """Each row once per element of its list columns ``sources`` (logical ``Unnest``: several
    lists aligned by position, shorter ones NULL past their end; rows without elements dropped,
    or kept once with NULLs under ``keep``; ``ordinality`` the 1-based position); output chunks
    cut to ``chunk_rows`` however long the lists. The elements are the lists' child rows in
    order: one gather per list, no copy per list."""

    child: Operator
    sources: tuple[str, ...]
    outs: tuple[str, ...]
    ordinality: str | None = None
    keep: bool = False
    label = "Unnest"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        step = ctx.config.chunk_rows
        for chunk in self.child.stream(ctx):
            n = chunk.num_rows
            values = [row_values(chunk.columns[s].expand(n)) for s in self.sources]
            sizes = [v.offsets[1:] - v.offsets[:-1] for v in values]
            longest = sizes[0] if len(sizes) == 1 else torch.stack(sizes).amax(0)
            if self.keep:
                longest = longest.clamp(min=1)
            offsets = torch.zeros(n + 1, dtype=torch.int64, device=longest.device)
            torch.cumsum(longest, 0, out=offsets[1:])
            rows = entry_rows(offsets)
            # (once per chunk, not per slice: whether a list is as long as the longest everywhere,
            # so that no position past its end needs a NULL -- one list alone always is)
            full = [len(sizes) == 1 and not self.keep or bool(torch.equal(size, longest)) for size in sizes]
            # (row_values' lists are one after another from their first offset: a list as long
            # as the longest everywhere has output row p's element at that offset + p -- a slice)
            base = [int(v.offsets[0]) if whole else 0 for v, whole in zip(values, full)]
            for start in range(0, int(rows.numel()), step):
                r = rows[start: start + step]
                stop = start + int(r.numel())
                k = None if all(full) and self.ordinality is None else \
                    torch.arange(start, stop, device=r.device) - offsets[:-1][r]
                part = chunk.take(r)
                cols = dict(part.columns)
                for v, size, out, whole, b in zip(values, sizes, self.outs, full, base):
                    if whole:
                        cols[out] = _child_rows(v.children[0], b + start, b + stop)
                    else:
                        cols[out] = _element_or_null(v.children[0], v.offsets[:-1][r] + k, k < size[r])
                if self.ordinality is not None:
                    cols[self.ordinality] = Column(k + 1, INT64)
                yield Chunk(cols, part.num_rows, part.seq, part.home)

    def describe(self):
        return unnest_text(self)


def _child_rows(child: Column, lo: int, hi: int) -> Column:
    """``child``'s rows ``lo:hi``: a view, not a gather."""
    if child.is_const:
        return child.take(torch.arange(lo, hi, device=child.data.device))
    return Column(child.data[lo:hi], child.type, None if child.valid is None else child.valid[lo:hi],
                  child.dictionary, None if child.wide is None else child.wide[lo:hi])


def _element_or_null(child: Column, idx: torch.Tensor, ok: torch.Tensor) -> Column:
    """``child``'s rows at ``idx`` where ``ok``, NULL elsewhere (``idx`` may be out of range there)."""
    if len(child) == 0:
        return literal_column(Lit(None, child.type), idx.device).expand(int(idx.numel()))
    got = child.take(idx.clamp(0, len(child) - 1))
    return Column(got.data, got.type, ok if got.valid is None else got.valid & ok, got.dictionary)


@dataclass(eq=False)
class UnionOp(Operator):
    inputs: tuple[Operator, ...]
    label = "UnionAll"

    def __post_init__(self):
        self.children = tuple(self.inputs)

    def execute(self, ctx):
        for op in self.inputs:
            yield from op.stream(ctx)


@dataclass
class _SharedResult:
    """A shared subplan's rows: held pages, then (once memory ran out) pages in a spill file."""

    held: list[Chunk]
    file: object | None
    res: object


@dataclass(eq=False)
class SharedOp(Operator):
    """Materialises its input on first use and replays the chunks to every consumer.

    The rows are held against the memory pool; when a reservation fails (or with
    force_spill), they and every later chunk go to a spill file, read back on each replay."""

    child: Operator
    label = "Shared"

    def __post_init__(self):
        self.children = (self.child,)

    def execute(self, ctx):
        run = ctx.run(self)
        st = run.result
        if st is None:
            stats = ctx.memory_stats(self)
            st = _SharedResult([], None, ctx.state_pool.reservation(self.label))
            for chunk in self.child.stream(ctx):
                nb = chunk.nbytes
                if st.file is None and (ctx.config.force_spill or not st.res.try_grow(nb)):
                    st.file = ctx.spills().new_file(self.label)
                    if st.held:
                        st.file.append(st.held)
                        stats.spilled_pages += len(st.held)
                        stats.spilled_bytes += st.res.size
                        st.held = []
                        st.file.flush()
                        st.res.free()
                if st.file is not None:
                    st.file.append(chunk)
                    stats.spilled_pages += 1
                    stats.spilled_bytes += nb
                else:
                    st.held.append(chunk)
                stats.peak_reserved = max(stats.peak_reserved, st.res.size)
            run.result = st
        yield from st.held
        if st.file is not None:
            yield from st.file.read(ctx.device)

    def describe(self):
        return "Shared (computed once, used by several references)"
