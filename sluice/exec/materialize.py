"""Adaptive materialization: the paged state of a join build, an aggregation or a shared
result, partitioned and spilled only when memory asks for it (Umami §4.2-4.3, docs/design.md §4).

::

    add(page) --> unpartitioned pages --(held bytes > threshold, or force_spill)--+
                                                                                  v
                  partition pages [p0 | p1 | ... | p63]  (top 6 bits of the value hash)
                         |  reservation fails: spill the largest in-memory partition
                         v  (hybrid spilling); its later pages go to its file in batches
                  spill files [p3.pages, p17.pages, ...]

1. Pages arrive unpartitioned and are held in memory against the pool.
2. Past a threshold (a quarter of the budget), later pages are split by partition; pages
   already held stay valid as they are -- nothing is repartitioned while nothing spills.
3. When a reservation fails, whole partitions are spilled, largest first. Only then are the
   unpartitioned pages split (once), so that every partition is self-contained.
4. If nothing spilled, :meth:`pages` returns every page for the operator's fast in-memory
   algorithm. Otherwise :meth:`partitions` yields in-memory partitions first, then spilled
   ones, read back one at a time; one still too big for memory is split again on the next
   hash bits (:meth:`Partition.split`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa
import torch

from sluice.chunk import Chunk, Column, compact_strings, concat_chunks
from sluice.kernels.hash import partition_of
from sluice.io.memory import budget_error
from sluice.io.spill import SpillFile
from sluice.metrics import MaterializeStats

#: Partitions per level: 64 (6 hash bits); deeper levels use the next 6 bits.
PARTITION_BITS = 6
#: Pages of a spilled partition are batched to about this size before a write.
SPILL_BATCH_BYTES = 4 << 20
#: Deepest recursive repartitioning (64**4 partitions) before giving up on splitting.
MAX_LEVEL = 4
#: A partition whose processing needs less than this share of the budget is never split.
SMALL_SHARE = 0.25
#: Once partitioning, pages smaller than this are gathered (up to STAGE_ROWS rows, or a 32nd
#: of the budget) and split together: splitting a 2 K-row join output into 64 pieces costs
#: 64 small copies per string column for a few rows each.
STAGE_ROWS = 1 << 16
#: With ``compact``: a partition is compacted rather than spilled when it grew past this many
#: times its bytes after its last compaction, and kept if that left at most COMPACT_GAIN of them.
COMPACT_GROWTH = 1.5
COMPACT_GAIN = 0.8

HashFn = Callable[[Chunk], torch.Tensor]


class Materializer:
    """Pages of one operator's state; see the module docstring."""

    def __init__(self, ctx, owner: str, hash_fn: HashFn | None, *, level: int = 0,
                 stats: MaterializeStats | None = None, threshold: int | None = None,
                 combine: Callable[[list[Chunk]], Chunk] | None = None,
                 compact: Callable[[list[Chunk]], Chunk] | None = None) -> None:
        self.ctx = ctx
        self.owner = owner
        self.hash_fn = hash_fn
        # How a spilled partition's buffered pages become one page to write (default: they are
        # concatenated; an aggregation merges them, keeping one row per group per page).
        self.combine = combine
        # How a partition's pages become fewer bytes in memory (DISTINCT values deduplicated):
        # tried on the largest partition, when memory runs out, before it is spilled.
        self.compact = compact
        self.level = level
        self.stats = stats if stats is not None else MaterializeStats()
        self.pool = ctx.state_pool  # device memory on a GPU, host memory on the CPU
        self.res = self.pool.reservation(owner)
        self.force = ctx.config.force_spill
        limit = self.pool.limit
        self.threshold = 0 if self.force else (threshold if threshold is not None else limit // 4)
        # Write batches: large enough for efficient I/O, small enough that the buffers of all
        # spilled partitions stay a small share of the budget.
        self.batch_bytes = max(4 << 10, min(SPILL_BATCH_BYTES, limit // (8 << PARTITION_BITS)))
        self.unpart: list[tuple[Chunk, int]] = []
        self.parts: list[list[tuple[Chunk, int]]] | None = None
        self.part_bytes: list[int] = []
        self.files: list[SpillFile | None] = []
        self.buffers: list[list[Chunk]] = []
        self.buffer_bytes: list[int] = []
        self.stage: list[Chunk] = []  # small pages waiting to be split together
        self.stage_rows = 0
        self.stage_bytes = 0
        self.stage_limit = max(4 << 10, min(16 << 20, limit // 32))
        self.rows = 0
        self.finished = False
        self._inflight = 0  # bytes handed to the writer, not yet on disk
        self._lock = threading.Lock()
        if hash_fn is not None:
            self.pool.register(self)  # others may ask it to spill while it fills
        self.stats.levels = max(self.stats.levels, level)

    # ------------------------------------------------------------------ state

    @property
    def nparts(self) -> int:
        return 1 << PARTITION_BITS

    @property
    def spilled(self) -> bool:
        return any(f is not None for f in self.files)

    @property
    def held_bytes(self) -> int:
        return self.res.size

    def _count_peak(self) -> None:
        self.stats.peak_reserved = max(self.stats.peak_reserved, self.res.size)

    # ------------------------------------------------------------------ adding

    def add(self, page: Chunk) -> None:
        """Hold (or spill) one page."""
        if page.num_rows == 0:
            return
        # A page must not keep a much larger string dictionary alive (a slice of a chunk, a
        # page read back from disk): its accounting would be wrong and spilling would free
        # nothing.
        page = compact_strings(page)
        self.rows += page.num_rows
        if self.parts is None and self.hash_fn is not None and self.held_bytes + page.nbytes > self.threshold:
            self._start_partitioning()
        if self.parts is None:
            nb = page.nbytes
            if self.hash_fn is None:
                self._reserve(nb)
                self.unpart.append((page, nb))
                return
            if self._try_reserve(nb):
                self.unpart.append((page, nb))
                return
            # No room even after asking the other operators: it is partitioned now (by
            # make_room), and what finds no room goes to disk partition by partition.
            if self.parts is None:
                self._start_partitioning()
        nb = page.nbytes
        if page.num_rows < STAGE_ROWS // 4 and self.res.try_grow(nb):
            self._count_peak()
            self.stage.append(page)
            self.stage_rows += page.num_rows
            self.stage_bytes += nb
            if self.stage_rows >= STAGE_ROWS or self.stage_bytes >= self.stage_limit:
                self._flush_stage()
            return
        # A large page, or no memory to gather it in: split on its own, as it is.
        self._flush_stage()
        for p, sub in self._split(page):
            self._add_to(p, sub)

    def _flush_stage(self) -> None:
        """Split the gathered small pages as one page into their partitions."""
        if not self.stage:
            return
        pages, nb = self.stage, self.stage_bytes
        self.stage, self.stage_rows, self.stage_bytes = [], 0, 0
        # An aggregation's pages hold one row per group each: its combine keeps it so.
        page = self.combine(pages) if self.combine is not None else concat_chunks(pages, unify=False)
        del pages
        self.res.shrink(nb)  # the pieces are reserved one by one as they are added
        for p, sub in self._split(page):
            self._add_to(p, sub, held=True)

    def _start_partitioning(self) -> None:
        self.parts = [[] for _ in range(self.nparts)]
        self.part_bytes = [0] * self.nparts
        self.files = [None] * self.nparts
        self.buffers = [[] for _ in range(self.nparts)]
        self.buffer_bytes = [0] * self.nparts
        self.compacted = [0] * self.nparts  # a partition's bytes after its last compaction
        self.stats.partitions = max(self.stats.partitions, self.nparts)

    def _split(self, page: Chunk) -> list[tuple[int, Chunk]]:
        h = self.hash_fn(page)
        part = partition_of(h, PARTITION_BITS, self.level)
        counts = torch.bincount(part, minlength=self.nparts).tolist()
        if max(counts) == page.num_rows:  # one partition: no copy
            return [(counts.index(page.num_rows), page)]
        order = torch.sort(part, stable=True).indices
        smallest = min(c for c in counts if c)
        wide = [k for k, c in page.columns.items()
                if c.type.kind == "string" and c.dictionary is not None and not c.is_const
                and len(c.dictionary) > 2 * smallest]
        out, start = [], 0
        if not wide:
            for p, c in enumerate(counts):
                if c:
                    out.append((p, compact_strings(page.take(order[start:start + c]))))
                    start += c
            return out
        # String columns whose dictionary is large against a piece (l_comment, c_address):
        # their strings are gathered once for the page, in partition order, and each piece
        # copies its own run -- one Arrow take per column instead of one per piece, and no
        # piece keeps the page's dictionary alive.
        plain = {}
        for k in wide:
            col = page.columns[k]
            plain[k] = col.dictionary.take(pa.array(col.data[order].reshape(-1).cpu().numpy()))
        rest = page.select([k for k in page.columns if k not in plain])
        for p, c in enumerate(counts):
            if c:
                piece = rest.take(order[start:start + c])
                cols = dict(piece.columns)
                for k, strings in plain.items():
                    col = page.columns[k]
                    valid = None if col.valid is None else col.valid[order[start:start + c]]
                    codes = torch.arange(c, dtype=torch.int32, device=col.data.device)
                    cols[k] = Column(codes, col.type, valid, pa.concat_arrays([strings.slice(start, c)]))
                out.append((p, compact_strings(Chunk({k: cols[k] for k in page.columns}, c, page.seq))))
                start += c
        return out

    def _add_to(self, p: int, page: Chunk, held: bool = False) -> None:
        """Hold ``page`` in partition ``p`` (or write it to the partition's file). ``held``: a
        piece of pages held already (a staged batch split), whose memory exists: the budget
        alone decides -- against the resident cap every piece of a batch split at the cap
        failed, and each sent its whole partition to disk."""
        nb = page.nbytes
        if self.files[p] is not None or self.force:
            self._to_file(p, page, nb)
            return
        if held and self.res.try_grow(nb, resident=False):
            self._count_peak()
        elif not self._try_reserve(nb):
            # Nothing of its own left to spill and the rest of the pool held by operators that
            # cannot spill (a join's table above): this partition goes to disk from here on.
            self.spill_partition(p)
            self._to_file(p, page, nb)
            return
        self.parts[p].append((page, nb))
        self.part_bytes[p] += nb

    def _to_file(self, p: int, page: Chunk, nb: int) -> None:
        if self.files[p] is None:
            self.files[p] = self.ctx.spill_target(f"{self.owner}-L{self.level}-p{p}")
            self.stats.spilled_partitions += 1
        self.buffers[p].append(page)
        self.buffer_bytes[p] += nb
        self.res.force(nb)  # held until written
        self._count_peak()
        pool = self.pool
        if self.buffer_bytes[p] >= self.batch_bytes or pool.used > pool.limit:
            self._write_buffer(p)

    def _write_buffer(self, p: int) -> None:
        pages, nb = self.buffers[p], self.buffer_bytes[p]
        if not pages:
            return
        self.buffers[p], self.buffer_bytes[p] = [], 0
        if len(pages) > 1:
            pages = [self.combine(pages) if self.combine is not None else concat_chunks(pages, unify=False)]
        self.stats.spilled_bytes += nb
        self.stats.spilled_pages += len(pages)
        with self._lock:
            self._inflight += nb

        def written() -> None:
            with self._lock:
                self._inflight -= nb
            self.res.shrink(nb)
        self.files[p].append(pages, on_written=written)

    # ------------------------------------------------------------------ memory

    def _reserve(self, nb: int) -> None:
        # (state it cannot partition: past the resident cap it is kept if the budget allows)
        if not self._try_reserve(nb) and not self.res.try_grow(nb, resident=False):
            if self.in_memory_bytes() == 0 and nb <= self.pool.limit // 16:
                # Everything of its own is spilled and the pool is held by operators that
                # cannot spill (a join's table above it): one small page goes over budget.
                self.res.force(nb)
            else:
                raise budget_error(self.owner, nb, self.pool, "a page of its state")
        self._count_peak()

    def _try_reserve(self, nb: int) -> bool:
        """Reserve ``nb`` bytes, spilling own partitions and then asking other operators."""
        if self.res.try_grow(nb):
            self._count_peak()
            return True
        self.make_room(nb)
        if not self.res.try_grow(nb):
            self.pool.reclaim(nb, requester=self)
            if not self.res.try_grow(nb):
                return False
        self._count_peak()
        return True

    def spill_for(self, need: int) -> bool:
        """Another operator needs ``need`` bytes: spill partitions of this one (if filling)."""
        if self.finished or self.hash_fn is None:
            return False
        return self.make_room(need)

    def make_room(self, need: int) -> bool:
        """Spill partitions, largest first, until ``need`` bytes fit in the pool; False if
        nothing is left to spill."""
        pool = self.pool
        # What is missing by the pool's own account. Where the resident cap is what binds, the
        # resident set lags what spilling frees (pages being written, heap not yet handed back):
        # spilling on until it shows would empty the state for a small shortfall (all 64
        # partitions for half a MiB, measured). Past it: one trim, then the caller goes to disk.
        deficit, spilled = need - pool.available, 0
        while pool.available < need:
            if self._inflight and pool.available + self._inflight >= need:
                self.ctx.spills().flush()  # writes in flight free their pages when done
                continue
            if spilled >= deficit:
                if pool.trim_for_room():
                    continue
                break
            if self.hash_fn is None:
                break
            if self.parts is None:
                self._start_partitioning()
            if self.unpart:
                self._partition_unpartitioned()
            self._flush_stage()
            candidates = [p for p in range(self.nparts) if self.files[p] is None and self.part_bytes[p] > 0]
            if not candidates:
                for p in range(self.nparts):  # what is left: the write buffers of spilled partitions
                    self._write_buffer(p)
                if self._inflight:
                    self.ctx.spills().flush()
                break
            p = max(candidates, key=lambda i: self.part_bytes[i])
            if self.compact is not None and self.part_bytes[p] > COMPACT_GROWTH * self.compacted[p]:
                before = self.part_bytes[p]
                self._compact_partition(p)
                if self.part_bytes[p] <= COMPACT_GAIN * before:  # kept: the next largest, or again
                    spilled += before - self.part_bytes[p]
                    continue
            spilled += self.part_bytes[p]
            self.spill_partition(p)
        return pool.available >= need

    def _compact_partition(self, p: int) -> None:
        pages = [pg for pg, _ in self.parts[p]]
        self.parts[p] = []
        merged = self.compact(pages)
        del pages
        nb = merged.nbytes
        self.res.shrink(self.part_bytes[p])
        self.res.force(nb)
        self.parts[p] = [(merged, nb)]
        self.part_bytes[p] = self.compacted[p] = nb
        self.stats.compactions += 1

    def in_memory_bytes(self) -> int:
        """Bytes of the partitions (and unpartitioned pages) not spilled."""
        total = sum(nb for _, nb in self.unpart) + self.stage_bytes
        if self.parts is not None:
            total += sum(self.part_bytes[p] for p in range(self.nparts) if self.files[p] is None)
        return total

    def spill_until(self, fits: Callable[[int], bool]) -> None:
        """Spill the largest in-memory partitions until ``fits(in-memory bytes)`` holds."""
        self.ensure_partitioned()
        while not fits(self.in_memory_bytes()):
            candidates = [p for p in range(self.nparts) if self.files[p] is None and self.part_bytes[p] > 0]
            if not candidates:
                break
            self.spill_partition(max(candidates, key=lambda i: self.part_bytes[i]))
            if fits(self.in_memory_bytes()):
                break
            if self.pool.available < self._inflight:
                self.ctx.spills().flush()
        self.ctx.spills().flush() if self._inflight else None

    def spill_partition(self, p: int) -> None:
        pages = self.parts[p]
        self.parts[p] = []
        nb_total = self.part_bytes[p]
        self.part_bytes[p] = 0
        self.res.shrink(nb_total)  # re-held page by page in _to_file until written
        if self.files[p] is None:
            self.files[p] = self.ctx.spill_target(f"{self.owner}-L{self.level}-p{p}")
            self.stats.spilled_partitions += 1
        for page, nb in pages:
            self._to_file(p, page, nb)
        self._write_buffer(p)

    def _partition_unpartitioned(self) -> None:
        pages, self.unpart = self.unpart, []
        pages.reverse()
        while pages:
            # Popped, so that each page is freed once split: held in the list to the end, the
            # pages and their split copies were both resident, twice what the pool counted
            # (SF 10 count(distinct l_comment): 0.5 GB past a 2 GiB budget in a 3 GiB cgroup).
            page, nb = pages.pop()
            self.res.shrink(nb)
            for p, sub in self._split(page):
                snb = sub.nbytes
                if self.files[p] is not None:
                    self._to_file(p, sub, snb)
                else:
                    self.res.force(snb)
                    self.parts[p].append((sub, snb))
                    self.part_bytes[p] += snb
        self._count_peak()

    # ------------------------------------------------------------------ reading

    def finish(self) -> None:
        """No more pages: write pending batches; make partitions self-contained if spilled."""
        self.finished = True
        self.pool.unregister(self)
        if self.parts is None:
            return
        self._flush_stage()
        if self.spilled and self.unpart:
            self._partition_unpartitioned()
        for p in range(self.nparts):
            self._write_buffer(p)

    def spill_partitions(self, parts: list[int]) -> None:
        """Mark partitions spilled from the start: their pages go straight to their files."""
        self.ensure_partitioned()
        for p in parts:
            if self.files[p] is None:
                self.files[p] = self.ctx.spill_target(f"{self.owner}-L{self.level}-p{p}")
                self.stats.spilled_partitions += 1

    def ensure_partitioned(self) -> None:
        """Split every held page by partition (so partitions can be processed one by one)."""
        if self.hash_fn is None:
            return
        if self.parts is None:
            self._start_partitioning()
        if self.unpart:
            self._partition_unpartitioned()
        self._flush_stage()

    def pages(self) -> list[Chunk]:
        """Every page (only when nothing spilled)."""
        assert not self.spilled
        out = [pg for pg, _ in self.unpart] + self.stage
        if self.parts is not None:
            for lst in self.parts:
                out.extend(pg for pg, _ in lst)
        return out

    def compact_partitions(self, merge: Callable[[list[Chunk]], Chunk]) -> None:
        """Replace the pages of each in-memory partition (and the unpartitioned ones) by
        ``merge`` of them -- aggregation partials merged into one page per partition."""
        self._flush_stage()
        if self.unpart and len(self.unpart) > 1:
            nb_old = sum(nb for _, nb in self.unpart)
            merged = merge([pg for pg, _ in self.unpart])
            nb = merged.nbytes
            self.res.shrink(nb_old)
            self.res.force(nb)
            self.unpart = [(merged, nb)]
        if self.parts is None:
            return
        for p in range(self.nparts):
            if self.files[p] is None and len(self.parts[p]) > 1:
                merged = merge([pg for pg, _ in self.parts[p]])
                nb = merged.nbytes
                self.res.shrink(self.part_bytes[p])
                self.res.force(nb)
                self.parts[p] = [(merged, nb)]
                self.part_bytes[p] = nb

    def partitions(self) -> Iterator["Partition"]:
        """In-memory partitions first, then spilled ones (after :meth:`finish`)."""
        assert self.finished
        if self.parts is not None and self.unpart:
            self._partition_unpartitioned()  # partition-wise processing: every page in its partition
        if self.parts is None:
            yield Partition(self, -1, [pg for pg, _ in self.unpart], None, sum(nb for _, nb in self.unpart))
            return
        order = [p for p in range(self.nparts) if self.files[p] is None] + \
            [p for p in range(self.nparts) if self.files[p] is not None]
        for p in order:
            if not self.parts[p] and self.files[p] is None:
                continue
            stored = self.files[p].raw_bytes if self.files[p] is not None else 0
            yield Partition(self, p, [pg for pg, _ in self.parts[p]], self.files[p], self.part_bytes[p] + stored)

    def release(self, p: int) -> None:
        """Drop partition ``p``'s in-memory pages (processed)."""
        if self.parts is not None and p >= 0:
            self.res.shrink(self.part_bytes[p])
            self.parts[p], self.part_bytes[p] = [], 0
        elif p < 0:
            self.res.shrink(sum(nb for _, nb in self.unpart))
            self.unpart = []

    def release_all(self) -> None:
        """Drop every held page (the operator keeps what it made of them)."""
        self.res.free()
        self.unpart = []
        self.stage, self.stage_rows, self.stage_bytes = [], 0, 0
        if self.parts is not None:
            self.parts = [[] for _ in range(self.nparts)]
            self.part_bytes = [0] * self.nparts

    def close(self) -> None:
        self.pool.unregister(self)
        self.res.free()
        self.unpart, self.parts = [], None
        self.stage = []
        for f in self.files:
            if f is not None:
                f.delete()
        self.files = []


@dataclass
class Partition:
    """One partition's pages: held in memory, in a spill file, or both."""

    mat: Materializer
    index: int
    held: list[Chunk]
    file: SpillFile | None
    nbytes: int

    @property
    def spilled(self) -> bool:
        return self.file is not None

    def fits(self, factor: float) -> bool:
        """Whether to process it as it is rather than split it further: processing takes
        ``factor`` x its bytes. It fits if that is free now -- or if it is small against the
        whole budget: then what is short is held by other operators (a join's table above it),
        and splitting it smaller would not help; it is processed a little over budget."""
        if self.mat.level >= MAX_LEVEL:
            return True
        held = sum(p.nbytes for p in self.held) if self.held else 0
        need = factor * self.nbytes - held
        return need <= self.mat.pool.available or factor * self.nbytes <= self.mat.pool.limit * SMALL_SHARE

    def stream(self) -> Iterator[Chunk]:
        """Its pages, the spilled ones read back one at a time."""
        yield from self.held
        if self.file is not None:
            for page in self.file.read(self.mat.ctx.device):
                self.mat.stats.read_pages += 1
                self.mat.stats.read_bytes += page.nbytes
                yield page

    def load(self, res) -> list[Chunk]:
        """All its pages in memory, the read-back ones reserved on ``res``."""
        out = list(self.held)
        if self.file is not None:
            for page in self.file.read(self.mat.ctx.device):
                nb = page.nbytes
                res.force(nb)
                self.mat.stats.read_pages += 1
                self.mat.stats.read_bytes += nb
                out.append(page)
        return out

    def split(self, to_disk: bool = False) -> Materializer:
        """Its pages re-partitioned on the next hash bits into a new materializer (straight to
        its spill files with ``to_disk``: pages only streamed later, such as probe rows)."""
        sub = Materializer(self.mat.ctx, self.mat.owner, self.mat.hash_fn, level=self.mat.level + 1,
                           stats=self.mat.stats, threshold=0, combine=self.mat.combine,
                           compact=self.mat.compact)
        if to_disk:
            sub.spill_partitions(list(range(sub.nparts)))
        for page in self.stream():
            sub.add(page)
        self.mat.release(self.index)
        if self.file is not None:
            self.file.delete()
        sub.finish()
        return sub
