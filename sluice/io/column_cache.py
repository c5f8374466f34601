"""Decoded columns kept on the scan's device across a connection's queries (Sirius keeps tables
in a GPU region between queries: seeds 004 §2-3; issue 50).

A :class:`ColumnCache` maps a key (made by :mod:`sluice.io.parquet.cached_decode`: the file,
its size, modification, inode and status-change time, a row group, a column and its decode form) to the
decoded :class:`~sluice.chunk.Column` of that row group. It belongs to a connection and lives as
long as it; what it holds is memory of the device, so while a query runs it is charged to that
query's device budget (the host budget on a CPU):

- ``attach(pool, limit)`` at the start of a run: one reservation in the pool holds the cache's
  bytes, and the cache is registered as the pool's *evictable* holder -- a reservation of any
  operator that does not fit makes it give back memory first, least recently used entries
  first (:meth:`sluice.io.memory.MemoryPool.evict`), and the pool counts its bytes as
  available. ``detach`` at the end of the run. Between runs the bytes are charged to nothing;
  the next run's ``attach`` charges them again (and evicts what its budget or limit cannot hold).
- ``put`` grows the cache's reservation without evicting anyone else: past the limit, or
  where the budget is full, the cache's own least recently used entries go first; an entry
  larger than what is left is not kept.
- ``get`` moves an entry to the most recently used end; ``drop_file`` forgets the entries of a
  file whose identity changed (a rewritten file's old columns are never served: its key no
  longer matches, and they are dropped when the new version is first seen).

On CUDA every entry carries the event recorded after its tensors were made; a user on another
stream waits for it (:meth:`Entry.ready_on`). Thread-safe: the scan's I/O threads share it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import torch

from sluice.chunk import Column


@dataclass
class Entry:
    """One cached row group of one column."""

    column: Column
    nbytes: int
    #: the CUDA event recorded after the column's tensors were made (None on a CPU)
    event: object = None
    #: the file the entry belongs to (for ``drop_file``)
    path: str = ""

    def ready_on(self, stream) -> None:
        """Make ``stream`` wait for the entry's tensors, and mark them used there (the caching
        allocator then keeps their blocks until that stream's queued work is done, even if the
        entry is evicted meanwhile)."""
        if stream is None:
            return
        if self.event is not None:
            stream.wait_event(self.event)
        for t in (self.column.data, self.column.valid):
            if t is not None and t.device.type == "cuda":
                t.record_stream(stream)


@dataclass
class CacheCounters:
    """What the cache did over the connection's life."""

    hits: int = 0
    misses: int = 0
    inserted_bytes: int = 0
    evicted_bytes: int = 0
    evictions: int = 0
    refused: int = 0  # entries not kept: larger than the room the limit or budget left


class _Hold:
    """The cache's reservation in one pool, registered there as its evictable holder."""

    def __init__(self, cache: "ColumnCache", pool) -> None:
        self.cache = cache
        self.pool = pool
        self.res = pool.reservation("column cache")

    @property
    def size(self) -> int:
        return self.res.size

    def evict(self, need: int) -> int:
        return self.cache.evict(need)


@dataclass
class ColumnCache:
    """See the module. ``limit`` is set by each run's ``attach`` (0: nothing is kept)."""

    limit: int = 0
    bytes: int = 0
    counters: CacheCounters = field(default_factory=CacheCounters)
    _entries: OrderedDict = field(default_factory=OrderedDict)
    _holds: list = field(default_factory=list)
    _files: dict = field(default_factory=dict)  # path -> the identity its entries were made from
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # ------------------------------------------------------------------ runs

    def attach(self, pool, limit: int) -> _Hold:
        """Charge the cache to ``pool`` for a run, with at most ``limit`` bytes kept (see the module)."""
        with self._lock:
            self.limit = limit
            self._evict_to(limit)
            hold = _Hold(self, pool)
            while not hold.res.try_grow(self.bytes, evict=False):
                self._evict_oldest()
            self._holds.append(hold)
        pool.add_evictable(hold)
        return hold

    def detach(self, hold: _Hold) -> None:
        hold.pool.remove_evictable(hold)
        with self._lock:
            if hold in self._holds:
                self._holds.remove(hold)
            hold.res.free()

    # ------------------------------------------------------------------ entries

    def get(self, key) -> Entry | None:
        with self._lock:
            e = self._entries.get(key)
            if e is not None:
                self._entries.move_to_end(key)
            return e

    def put(self, key, entry: Entry) -> bool:
        """Keep ``entry`` under ``key`` (replacing one there) if the limit and the budget leave
        room for it once older entries are gone; False when it is not kept."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._discard(old)
            if not self._holds or entry.nbytes > self.limit:
                self.counters.refused += 1
                return False
            self._evict_to(self.limit - entry.nbytes)
            grown: list[_Hold] = []
            for h in self._holds:
                while not h.res.try_grow(entry.nbytes, evict=False):
                    if not self._entries:
                        for g in grown:
                            g.res.shrink(entry.nbytes)
                        self.counters.refused += 1
                        return False
                    self._evict_oldest()
                grown.append(h)
            self._entries[key] = entry
            self.bytes += entry.nbytes
            self.counters.inserted_bytes += entry.nbytes
            return True

    def evict(self, need: int) -> int:
        """Give back at least ``need`` bytes (least recently used first) if held; the bytes freed."""
        freed = 0
        with self._lock:
            while freed < need and self._entries:
                freed += self._evict_oldest()
        return freed

    def seen(self, path: str, identity) -> None:
        """The file ``path`` is now ``identity``: its entries of another version are dropped."""
        with self._lock:
            known = self._files.get(path)
            if known == identity:
                return
            if known is not None:
                for key in [k for k, e in self._entries.items() if e.path == path]:
                    self._discard(self._entries.pop(key))
            self._files[path] = identity

    def count(self, hits: int, misses: int) -> None:
        with self._lock:
            self.counters.hits += hits
            self.counters.misses += misses

    def clear(self) -> None:
        """Forget every entry (the connection closes, or the GPU ran out of memory)."""
        with self._lock:
            while self._entries:
                self._evict_oldest()
            self._files.clear()

    def __len__(self) -> int:
        return len(self._entries)

    # ------------------------------------------------------------------ internals

    def _evict_to(self, limit: int) -> None:
        while self.bytes > max(limit, 0) and self._entries:
            self._evict_oldest()

    def _evict_oldest(self) -> int:
        _key, e = self._entries.popitem(last=False)
        self._discard(e)
        self.counters.evictions += 1
        self.counters.evicted_bytes += e.nbytes
        return e.nbytes

    def _discard(self, e: Entry) -> None:
        self.bytes -= e.nbytes
        for h in self._holds:
            h.res.shrink(e.nbytes)


def cuda_event(device: torch.device, stream) -> object:
    """An event recorded on ``stream`` (a CUDA device), or None on a CPU."""
    if device.type != "cuda" or stream is None:
        return None
    ev = torch.cuda.Event()
    ev.record(stream)
    return ev
