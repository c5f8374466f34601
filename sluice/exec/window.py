"""Window operator: window functions over a stream sorted by (partition, order) keys.

::

    chunks (sorted) --> rows of the open partition held --(complete)--> computed, emitted
                               |
                               | held rows do not fit (or force_spill and the partition
                               v spans chunks): parked
                        spill file of the partition's rows --(partition complete)-->
                          pass 1: only the columns the calls read (partition, order, arguments)
                                  -> the calls' results over the whole partition
                          pass 2: the rows again, each page with its slice of the results

1. The child is a Sort (which spills past the memory budget), so the rows of one partition
   arrive together. When a chunk starts a new partition, every row before that point is
   computed at once (each function as registered in ``exec/window_functions.py``) and emitted;
   only the rows of the partition still open are held between chunks, against the budget (a
   chunk being worked on is its producer's: an in-memory Sort's one sorted chunk was charged
   twice before, and a 128 MiB budget refused a 58 MiB partition so).
2. A partition whose held rows do not fit is **parked**: its rows go to a spill file as they
   come, and nothing of them is held. Once it is complete, one pass reads back only the
   columns the calls read and computes the calls over the whole partition -- the same code
   over the same rows in the same order, so the answers are the in-memory path's -- and a
   second pass streams the rows back, each page given its slice of the results.

Why two passes over the parked rows and not a running state per function: every function
(LIST, STRING_AGG, quantiles, running frames, LAG) then computes as it does in memory, none
has a second, incremental implementation to keep equal, and what is held is the narrow
columns and the results -- for LIST / ARRAY_AGG the list being built is the answer and must be
held anyway (its children are those very values, shared by every row's entry: ``_list_agg``).
A partition whose read columns themselves do not fit the budget is refused in one line (the
columns of one window partition), as is any state that cannot be spilled. What keeps the rows
that leave small is the translator's: a holistic aggregate's value rides on its group's first
row only (``WindowCall.once``), so a later window parks and sorts NULLs, not a list per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, Column, concat_chunks
from sluice.exec.operators import Operator
from sluice.exec.window_functions import OFFSET_BOUNDS, compute
from sluice.expr.evaluate import evaluate
from sluice.expr.nodes import Expr
from sluice.io.spill import SpillFile
from sluice.kernels import window as K
from sluice.plan.logical import SortKey, WindowCall

#: Window functions that read no peer groups or RANGE key: only the rows' order in their
#: partition (a parked partition reads no order column for them).
ORDER_ONLY = frozenset({"list", "string_agg", "bitstring_agg", "row_number", "ntile", "lag", "lead"})


@dataclass(eq=False)
class WindowOp(Operator):
    child: Operator
    partition: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    calls: tuple[tuple[str, WindowCall], ...]
    label = "Window"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        part = ", ".join(str(e) for e in self.partition)
        order = ", ".join(f"{k.expr}{'' if k.ascending else ' desc'}" for k in self.order)
        calls = ", ".join(f"{n}={c}" for n, c in self.calls)
        return f"Window partition=[{part}] order=[{order}] [{calls}]"

    def execute(self, ctx) -> Iterator[Chunk]:
        stats = ctx.memory_stats(self)
        pending: list[Chunk] = []  # rows of the open partition, held
        held = 0  # their bytes (a running total: summing them per chunk is quadratic in chunks)
        parked: SpillFile | None = None  # or written here
        last: Chunk | None = None  # the open partition's last row
        with ctx.memory.reservation(f"{self.label} partition") as res:
            try:
                for chunk in self.child.stream(ctx):
                    while chunk is not None and chunk.num_rows:
                        n = chunk.num_rows
                        hits = self._partition_starts(last, chunk)
                        if parked is not None:
                            first = int(hits[0]) if hits.numel() else n
                            if first:
                                self._park(parked, chunk.slice(0, first), stats)
                            if first == n:
                                last = chunk.slice(n - 1, n)
                                break
                            yield from self._parked(ctx, parked, res, stats)
                            parked, last, chunk = None, None, chunk.slice(first, n)
                            continue
                        if hits.numel():
                            cut = int(hits[-1])
                            done = pending + ([chunk.slice(0, cut)] if cut else [])
                            pending = [chunk.slice(cut, n) if cut else chunk]
                            held = pending[0].nbytes
                            if done:
                                yield from self._compute(concat_chunks(done))
                        else:
                            pending.append(chunk)
                            held += chunk.nbytes
                        last = chunk.slice(n - 1, n)
                        spans = len(pending) > 1
                        res.shrink(res.size - held)
                        if (ctx.config.force_spill and spans) or not res.try_grow(held - res.size):
                            parked = ctx.spills().new_file(f"{self.label}-partition")
                            stats.partitions += 1
                            for c in pending:
                                self._park(parked, c, stats)
                            pending, held = [], 0
                            res.free()
                        stats.peak_reserved = max(stats.peak_reserved, res.size)
                        break
                if parked is not None:
                    yield from self._parked(ctx, parked, res, stats)
                    parked = None
                elif pending:
                    yield from self._compute(concat_chunks(pending))
            finally:
                if parked is not None:
                    parked.delete()

    def _partition_starts(self, last: Chunk | None, chunk: Chunk) -> torch.Tensor:
        """Rows of ``chunk`` that start a partition: row 0 where it differs from ``last`` (the
        open partition's last row; none: row 0 is not counted)."""
        n = chunk.num_rows
        if not self.partition:
            return torch.zeros(0, dtype=torch.int64)
        cols = [evaluate(e, chunk).expand(n) for e in self.partition]
        starts = K.row_starts(cols, n, chunk.device)
        if last is not None:
            edge = concat_chunks([last, chunk.slice(0, 1)])
            two = [evaluate(e, edge).expand(2) for e in self.partition]
            starts[0] = bool(K.row_starts(two, 2, chunk.device)[1])
        else:
            starts[0] = False
        return torch.nonzero(starts).flatten().cpu()

    @staticmethod
    def _park(file: SpillFile, page: Chunk, stats) -> None:
        file.append(page)
        file.flush()  # (written before the next: parked rows are never held)
        stats.spilled_bytes += page.nbytes
        stats.spilled_pages += 1

    def _needs_peers(self) -> bool:
        """Whether a call reads the order's peer groups or RANGE key (within one partition the
        order is the rows' order, which is all LIST, STRING_AGG, ROW_NUMBER or LAG read)."""
        return any(c.func not in ORDER_ONLY for _, c in self.calls)

    def _read_columns(self) -> list[str]:
        """The columns the calls read over one parked partition: their arguments, and the
        order's where a call needs peers (the partition's are one value: not read)."""
        names: set[str] = set()
        order = tuple(k.expr for k in self.order) if self._needs_peers() else ()
        for e in (*order, *(a for _, c in self.calls for a in c.args)):
            names |= e.columns()
        return sorted(names)

    def _parked(self, ctx, parked: SpillFile, res, stats) -> Iterator[Chunk]:
        """A parked partition, complete: the calls over the columns they read (pass 1), then
        its rows again with their slices of the results (pass 2)."""
        names = self._read_columns()
        narrow = []
        for page in parked.read(ctx.device):
            stats.read_pages += 1
            stats.read_bytes += page.nbytes
            page = page.select(names or list(page.columns)[:1])
            res.grow(page.nbytes, "the columns the calls of one window partition read")
            narrow.append(page)
        stats.peak_reserved = max(stats.peak_reserved, res.size)
        data = concat_chunks(narrow)
        narrow.clear()
        results = self._results(data, one_partition=True, peers=self._needs_peers())
        del data
        at = 0
        for page in parked.read(ctx.device):
            m = page.num_rows
            cols = dict(page.columns)
            for name, col in results.items():
                cols[name] = _slice(col, at, at + m)
            at += m
            yield Chunk(cols, m, page.seq, page.device)
        parked.delete()
        res.free()

    def _results(self, data: Chunk, one_partition: bool = False, peers: bool = True) -> dict[str, Column]:
        """Every call over ``data`` (whole partitions, sorted; ``one_partition``: one, whose
        partition columns ``data`` need not hold; without ``peers`` no order column either)."""
        n = data.num_rows
        dev = data.device
        pcols = [] if one_partition else [evaluate(e, data).expand(n) for e in self.partition]
        part_starts = K.row_starts(pcols, n, dev)
        part = K.Segments.of(part_starts)
        ocols = [evaluate(k.expr, data).expand(n) for k in self.order] if peers else []
        peers = K.Segments.of(part_starts | K.row_starts(ocols, n, dev))
        idx = torch.arange(n, device=dev)
        key = None
        if any(c.frame[0] == "range" and (c.frame[1][0] in OFFSET_BOUNDS or c.frame[2][0] in OFFSET_BOUNDS)
               for _, c in self.calls):
            key = K.range_key(ocols[0], self.order[0].ascending, self.order[0].nulls_first)
        return {name: compute(call, data, idx, part, peers, dev, key) for name, call in self.calls}

    def _compute(self, data: Chunk) -> Iterator[Chunk]:
        cols = dict(data.columns)
        cols.update(self._results(data))
        yield Chunk(cols, data.num_rows, data.seq, data.device)


def _slice(col: Column, start: int, stop: int) -> Column:
    """Rows ``start:stop`` of a result column (a constant stays one)."""
    if col.is_const:
        return col
    v = None if col.valid is None else col.valid[start:stop]
    w = None if col.wide is None else col.wide[start:stop]
    return Column(col.data[start:stop], col.type, v, col.dictionary, w)
