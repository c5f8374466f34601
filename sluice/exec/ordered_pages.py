"""Pages received from every rank, kept in the order each rank sent them and read back rank by
rank: what an ordered gather hands on (the sorted ranges of a range-partitioned sort, whose
concatenation in rank order is the sorted whole: :mod:`sluice.exec.range_partition`).

A hash materializer cannot hold them: it regroups rows by hash when it partitions. Here each
source rank's pages are a list held against the state pool; when a page does not fit, the
largest held list moves to a spill target (host pages on a GPU, a file on the CPU) and that
source's later pages follow it there, so the order is kept and the budget holds.
"""

from __future__ import annotations

from typing import Iterator

from sluice.chunk import Chunk, compact_strings
from sluice.metrics import MaterializeStats


class OrderedPages:
    """``add(source, page)`` while the stage runs, then :meth:`stream` in source order."""

    def __init__(self, ctx, owner: str, sources: int, stats: MaterializeStats | None = None) -> None:
        self.ctx = ctx
        self.owner = owner
        self.stats = stats if stats is not None else MaterializeStats()
        self.res = ctx.state_pool.reservation(owner)
        self.held: list[list[Chunk]] = [[] for _ in range(sources)]
        self.held_bytes = [0] * sources
        self.files: list = [None] * sources
        self.rows = 0

    def add(self, source: int, page: Chunk) -> None:
        if not page.num_rows:
            return
        page = compact_strings(page)
        self.rows += page.num_rows
        nb = page.nbytes
        if self.files[source] is None and not self.ctx.config.force_spill:
            while not self.res.try_grow(nb):
                if not self._spill_largest():
                    self.res.force(nb)  # nothing held to move: one page is the working set
                    break
            if self.files[source] is None:
                self._hold(source, page, nb)
                return
            self._to_file(source, [page], nb)  # this source went to its file meanwhile
            return
        self.res.force(nb)
        self._to_file(source, [page], nb)

    def _hold(self, source: int, page: Chunk, nb: int) -> None:
        self.held[source].append(page)
        self.held_bytes[source] += nb
        self.stats.peak_reserved = max(self.stats.peak_reserved, self.res.size)

    def _spill_largest(self) -> bool:
        src = max(range(len(self.held)), key=lambda s: self.held_bytes[s])
        if not self.held[src]:
            return False
        pages, nb = self.held[src], self.held_bytes[src]
        self.held[src], self.held_bytes[src] = [], 0
        self._to_file(src, pages, nb)
        self.files[src].flush()  # at the budget: wait until its bytes are free (a rank throttles)
        return True

    def _to_file(self, source: int, pages: list[Chunk], nb: int) -> None:
        """Write ``pages`` to ``source``'s file; their ``nb`` bytes (reserved) stay reserved until
        they are written: the spill writer holds them (and their encoded copy) meanwhile, and a
        rank whose gather spilled every page held tens of MiB that no pool saw."""
        if self.files[source] is None:
            self.files[source] = self.ctx.spill_target(f"{self.owner}-from{source}")
            self.stats.spilled_partitions += 1
        self.files[source].append(pages, on_written=lambda: self.res.shrink(nb))
        self.stats.spilled_bytes += sum(p.nbytes for p in pages)
        self.stats.spilled_pages += len(pages)

    def finish(self) -> None:
        """No more pages (they were written as they came)."""

    def stream(self) -> Iterator[Chunk]:
        """Every page, source 0 first, each source's in the order they came (a spilled
        source's held pages went to its file before any later page)."""
        for src in range(len(self.held)):
            if self.files[src] is not None:
                yield from self.files[src].read(self.ctx.device)
            pages, self.held[src] = self.held[src], []
            for p in pages:
                yield p
            self.res.shrink(self.held_bytes[src])
            self.held_bytes[src] = 0

    def close(self) -> None:
        self.res.free()
        self.held = [[] for _ in self.held]
        for f in self.files:
            if f is not None:
                f.delete()
        self.files = [None] * len(self.files)
