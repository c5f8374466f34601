"""Sort: in memory while it fits, an external merge sort when it does not; top-k with LIMIT.

::

    chunks --> held pages --(reservation fails / force_spill)--> sorted run -> spill file
                                                   ...
    end: no run   -> one in-memory sort of the held pages (the fast path)
         runs     -> k-way merge: a window of one page per run (+ leftovers), sorted; every
                     row up to the smallest "last row of a run's page" is final and emitted

1. Chunks are held against the memory pool, counted twice (sorting takes a copy). When a chunk
   does not fit (or with force_spill), the held pages are joined, sorted into a run and written
   page by page, each page taken from the joined rows in order (never a second full copy).
   Pages are sized so that a merge window of up to :data:`FAN_IN` runs fits half the budget;
   where rows are wide (a page is at least 1,024 rows), fewer runs are merged at once
   (:func:`merge_fan_in`); more runs than that are merged in passes first.
2. Merge: each run holds the rows of its page not yet emitted; each step sorts them together
   and emits the rows that are <= the smallest last row among the runs (no later row of any
   run can precede them); a run with nothing left loads its next page.
3. With a LIMIT, only ``offset + limit`` rows are kept between chunks, and a chunk is first
   cut to the rows whose leading key can still make it (one ``topk`` per chunk). Once that
   many rows are known, the last one's leading key bounds the scan it comes from (a runtime
   filter lowering aimed there: :func:`sluice.physical.filter_placement.attach_topk_filters`):
   row groups whose statistics lie beyond it are not read (DuckDB's top-N dynamic filter).

The order within one key is a stable sort per key, last key first; NULLs placed by one more
stable sort on the null flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import torch

from sluice.chunk import Chunk, _compacted, compact_strings, concat_chunks, to_device
from sluice.exec.list_topk import list_candidates_mask
from sluice.exec.string_prefix import string_prefix_keys
from sluice.expr.evaluate import evaluate
from sluice.kernels.keys import sortable
from sluice.kernels.struct_order import struct_sort_keys
from sluice.metrics import MaterializeStats
from sluice.exec.operators import Operator
from sluice.io.spill import SpillFile
from sluice.plan.logical import SortKey

#: Rows per page of a spilled run (smaller when many runs must share the merge window).
RUN_PAGE_ROWS = 1 << 16
#: Runs merged at once: a merge window holds one page of each (more runs: merge passes first).
FAN_IN = 64
#: The share of the budget a merge's window may take (the operator it feeds holds the rest).
MERGE_SHARE = 0.5
#: Copies of its rows a sort holds while it sorts them: the rows and their sorted copy.
SORT_COPIES = 2


def _page_rows(data: Chunk, limit: int) -> int:
    """Rows per page of a run: small enough that a merge window -- one page of each of up to
    :data:`FAN_IN` runs, held with its joined copy and its sorted parts (three times over) --
    stays within :data:`MERGE_SHARE` of the budget ``limit``."""
    row_bytes = max(1, data.nbytes // max(1, data.num_rows))
    return int(min(RUN_PAGE_ROWS, max(1024, MERGE_SHARE * limit // (3 * FAN_IN * row_bytes))))


def merge_fan_in(runs: list[SpillFile], limit: int) -> int:
    """How many runs one merge may read at once: their window (a page of each, three times
    over) within :data:`MERGE_SHARE` of the budget ``limit`` -- the rest is for the operator
    the merge feeds, which holds rows too (a Window reading a parked partition back). Pages are
    sized for :data:`FAN_IN` runs, but a page is at least 1,024 rows: wide rows merge fewer
    runs at once, in more passes. At least 2."""
    page = max((r.largest_page for r in runs), default=0)
    return int(max(2, min(FAN_IN, MERGE_SHARE * limit // max(1, 3 * page))))


def sort_permutation(chunk: Chunk, keys: tuple[SortKey, ...]) -> torch.Tensor:
    n = chunk.num_rows
    dev = chunk.device
    perm = torch.arange(n, device=dev)
    # (a STRUCT key sorts as its fields: kernels/struct_order.py)
    flat = [leaf for k in keys for leaf in struct_sort_keys(evaluate(k.expr, chunk).expand(n), k.ascending, k.nulls_first)]
    for col, ascending, nulls_first in reversed(flat):
        v = sortable(col)
        if v.dtype == torch.bool:
            v = v.to(torch.int8)
        valid = None if col.valid is None else col.valid.reshape(-1).expand(n)
        if valid is not None:  # NULLs tie here (whatever their data) so later keys order them
            v = torch.where(valid, v, torch.zeros_like(v))
        order = torch.sort(v[perm], stable=True, descending=not ascending).indices
        perm = perm[order]
        if valid is not None:
            nullkey = valid[perm] if nulls_first else ~valid[perm]
            perm = perm[torch.sort(nullkey.to(torch.int8), stable=True).indices]
    return perm


@dataclass(eq=False)
class SortOp(Operator):
    child: Operator
    keys: tuple[SortKey, ...]
    limit: int | None = None
    offset: int = 0
    #: With a limit: the FilterSlot the leading key's k-th value bounds (set when lowered).
    publishes: list = field(default_factory=list)
    label = "Sort"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        ks = ", ".join(f"{k.expr} {'ASC' if k.ascending else 'DESC'}" for k in self.keys)
        lim = f" limit={self.limit} offset={self.offset}" if self.limit is not None else ""
        return f"Sort [{ks}]{lim}"

    def execute(self, ctx):
        if self.limit is not None:
            yield from self._top_k(ctx)
            return
        stats = ctx.memory_stats(self)
        res = ctx.state_pool.reservation(self.label)
        runs: list[SpillFile] = []
        held: list[Chunk] = []
        try:
            for chunk in self.child.stream(ctx):
                # Held twice over: sorting what is held takes a copy of it (the joined pages).
                nb = SORT_COPIES * chunk.nbytes
                if ctx.config.force_spill or not res.try_grow(nb):
                    if held:
                        runs.append(self._write_run(ctx, held, res, stats))
                        held = []
                    if not res.try_grow(nb):
                        res.force(nb)  # one chunk is the irreducible working set
                held.append(chunk)
                stats.peak_reserved = max(stats.peak_reserved, res.size)
                if ctx.config.force_spill:  # every chunk a run of its own: the merge always runs
                    runs.append(self._write_run(ctx, held, res, stats))
                    held = []
            if not runs:
                data = concat_chunks(held)
                held.clear()  # the joined copy alone from here: it and its sorted copy fit
                if data is None:
                    return
                out = data.take(sort_permutation(data, self.keys))
                del data
                if self.offset:
                    out = out.slice(self.offset, out.num_rows)
                if out.num_rows:
                    yield out
                return
            if held:
                runs.append(self._write_run(ctx, held, res, stats))
                held = []
            fan = merge_fan_in(runs, ctx.state_pool.limit)
            while len(runs) > fan:  # merge passes: a window of one page per run must fit
                runs = self._merge_pass(ctx, runs, fan, res, stats)
            yield from _skip(self._merge(ctx, runs, res, stats), self.offset)
        finally:
            res.free()
            for r in runs:
                r.delete()

    # ---------------------------------------------------------------- external

    def _write_run(self, ctx, held: list[Chunk], res, stats: MaterializeStats) -> SpillFile:
        data = concat_chunks(held)
        held.clear()  # the caller's list: the joined copy alone holds the rows now
        perm = sort_permutation(data, self.keys)
        run = ctx.spills().new_file(f"{self.label}-run")
        # Each page is taken in order from the joined rows and written: the sorted rows are
        # never all held a second time.
        step = _page_rows(data, ctx.state_pool.limit)
        for s in range(0, data.num_rows, step):
            page = data.take(perm[s:s + step])
            run.append(page)
            stats.spilled_bytes += page.nbytes
            stats.spilled_pages += 1
        run.flush()
        stats.partitions += 1  # runs
        # The rows are freed before the reservation is: releasing it may hand freed heap memory
        # back to the OS (MemoryPool._release), which finds nothing of them while they are held.
        del data, perm
        res.free()
        return run

    def _merge_pass(self, ctx, runs: list[SpillFile], fan: int, res, stats: MaterializeStats) -> list[SpillFile]:
        """Runs merged ``fan`` at a time into longer runs (each read once more)."""
        out = []
        for i in range(0, len(runs), fan):
            group = runs[i:i + fan]
            if len(group) == 1:
                out.append(group[0])
                continue
            run = ctx.spills().new_file(f"{self.label}-run")
            for chunk in self._merge(ctx, group, res, stats):
                step = _page_rows(chunk, ctx.state_pool.limit)
                for s in range(0, chunk.num_rows, step):
                    page = chunk.slice(s, min(chunk.num_rows, s + step))
                    run.append(page)
                    stats.spilled_bytes += page.nbytes
                    stats.spilled_pages += 1
            run.flush()
            for r in group:
                r.delete()
            out.append(run)
        return out

    def _merge(self, ctx, runs: list[SpillFile], res, stats: MaterializeStats) -> Iterator[Chunk]:
        """Each step joins the rows each run has loaded and not yet emitted, sorts them, and
        emits those up to the bound -- the smallest last row among the runs (no later row of
        any run can precede it); a run whose rows are all emitted loads its next page. So each
        run holds at most one page: before, every run loaded a page every step, and rows above
        the bound piled up -- on input sorted already, a whole run held at once."""
        cursors = [r.read(ctx.device) for r in runs]
        current: list[Chunk | None] = [_next_page(c, stats) for c in cursors]
        # The loaded rows stay held between steps, while the consumer works on what a step
        # emitted: counted all along, not only while a step sorts (a 2-rank SF 10 sort's merge
        # windows held tens of MiB per rank that no pool saw).
        held = _held_bytes(current)
        res.force(held)
        try:
            while True:
                active = [i for i, p in enumerate(current) if p is not None]
                if not active:
                    break
                pages = [current[i] for i in active]
                if len(pages) == 1:  # the last run: its rows follow in order
                    out, current[active[0]] = pages[0], _next_page(cursors[active[0]], stats)
                else:
                    window = concat_chunks(pages)
                    dev = window.device
                    sizes = torch.tensor([p.num_rows for p in pages], device=dev)
                    ends = torch.cumsum(sizes, 0) - 1
                    # the bound: the smallest last row among the runs (the first of equals)
                    bound = int(ends[int(sort_permutation(window.take(ends), self.keys)[0])])
                    # Held at once besides the loaded rows: their joined window and its sorted parts.
                    nb = SORT_COPIES * window.nbytes
                    res.force(nb)
                    stats.peak_reserved = max(stats.peak_reserved, res.size)
                    perm = sort_permutation(window, self.keys)
                    pos = int((perm == bound).nonzero()[0, 0])
                    out = compact_strings(window.take(perm[:pos + 1]))
                    # the rest, back to the runs they came from, in order (the sort is stable)
                    rest = perm[pos + 1:]
                    run_of = torch.repeat_interleave(torch.arange(len(pages), device=dev), sizes)[rest]
                    rest = rest[torch.sort(run_of, stable=True).indices]
                    left = torch.bincount(run_of, minlength=len(pages)).tolist()
                    kept = compact_strings(window.take(rest)) if rest.numel() else None
                    del window, perm
                    at = 0
                    for i, n in zip(active, left):
                        current[i] = kept.slice(at, at + n) if n else _next_page(cursors[i], stats)
                        at += n
                    res.shrink(nb)
                now = _held_bytes(current)
                res.force(now)
                res.shrink(held)
                held = now
                if out.num_rows:
                    yield out
        finally:
            res.shrink(held)

    # ---------------------------------------------------------------- top-k

    def _top_k(self, ctx) -> Iterator[Chunk]:
        keep = self.offset + self.limit
        if keep == 0:
            return
        best: Chunk | None = None
        bound = [ctx.runtime_filter(slot.spec) for slot in self.publishes]
        for chunk in self.child.stream(ctx):
            chunk = self._candidates(chunk, keep)
            both = concat_chunks([best, chunk]) if best is not None else chunk
            perm = sort_permutation(both, self.keys)[:keep]
            best = both.take(perm)
            if bound and best.num_rows == keep:
                self._narrow(bound, best)
        if best is None:
            return
        out = best.slice(self.offset, keep)
        if out.num_rows:
            yield out

    def _narrow(self, bound: list, best: Chunk) -> None:
        """The k-th row's leading key (``best`` is sorted) bounds the filters; a NULL there
        (NULLS LAST: fewer than k rows with a value so far) bounds nothing yet."""
        k0 = self.keys[0]
        col = evaluate(k0.expr, best).expand(best.num_rows)
        last = best.num_rows - 1
        if col.valid is not None and not bool(col.valid[last]):
            return
        kth = int(col.data[last])
        for rf in bound:
            if k0.ascending:
                rf.narrow(hi=kth)
            else:
                rf.narrow(lo=kth)

    def _candidates(self, chunk: Chunk, keep: int) -> Chunk:
        """The rows of ``chunk`` whose leading key is within its ``keep`` best (ties kept)."""
        n = chunk.num_rows
        if n <= 4 * keep:
            return chunk
        k0 = self.keys[0]
        col = evaluate(k0.expr, chunk).expand(n)
        if col.type.kind == "string" and col.dictionary is not None:
            mask = _string_candidates_mask(col, keep, k0)
            if mask is not None:
                return chunk.filter(mask)
        if col.type.is_nested:  # a LIST: cut by first elements (exec/list_topk.py), else keyed whole
            mask = list_candidates_mask(col, keep, k0.ascending, k0.nulls_first)
            return chunk if mask is None else chunk.filter(mask)
        v = sortable(col)
        if v.dtype == torch.bool:
            v = v.to(torch.int8)
        valid = col.valid
        pool = v if valid is None else v[valid]
        if pool.numel() < keep:  # the NULLs take the places left (NULLS LAST too), ordered by the later keys
            return chunk
        kth = torch.topk(pool, min(keep, pool.numel()), largest=not k0.ascending, sorted=True).values[-1]
        mask = (v <= kth) if k0.ascending else (v >= kth)
        if valid is not None:
            mask = (mask & valid) | (~valid if k0.nulls_first else torch.zeros_like(mask))
        return chunk.filter(mask)


def _string_candidates_mask(col, keep: int, k0) -> torch.Tensor | None:
    """Rows whose string's 8-byte prefix is within the ``keep`` best prefixes (ties kept): a
    superset of the ``keep`` best strings (a prefix orders as its string does, ties aside),
    without encoding and sorting the chunk's whole dictionary (ClickBench q25: ORDER BY
    SearchPhrase LIMIT 10 over 10 M hits). None where the prefixes tie for over half the rows
    (then the exact path)."""
    d, codes = _compacted(col)
    codes = codes.long().reshape(-1)
    n = codes.numel()
    pre = to_device(string_prefix_keys(d), codes.device)
    if pre.numel() == 0:
        return None
    v = pre.index_select(0, codes)
    valid = col.valid
    pool = v if valid is None else v[valid]
    if pool.numel() < keep:  # fewer values than places: the NULLs are candidates too
        return None
    kth = torch.topk(pool, min(keep, pool.numel()), largest=not k0.ascending, sorted=True).values[-1]
    mask = (v <= kth) if k0.ascending else (v >= kth)
    if valid is not None:
        mask = (mask & valid) | (~valid if k0.nulls_first else torch.zeros_like(mask))
    if int(mask.sum()) > n // 2:
        return None
    return mask


def _held_bytes(pages: list[Chunk | None]) -> int:
    """Bytes of the rows a merge's runs have loaded and not yet emitted."""
    return sum(p.nbytes for p in pages if p is not None)


def _next_page(cursor, stats: MaterializeStats) -> Chunk | None:
    try:
        page = next(cursor)
    except StopIteration:
        return None
    stats.read_pages += 1
    stats.read_bytes += page.nbytes
    return page


def _skip(chunks: Iterator[Chunk], offset: int) -> Iterator[Chunk]:
    for c in chunks:
        if offset >= c.num_rows:
            offset -= c.num_rows
            continue
        if offset:
            c = c.slice(offset, c.num_rows)
            offset = 0
        yield c

