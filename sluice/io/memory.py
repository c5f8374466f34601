"""Memory: the budgets every buffer reserves against (:class:`MemoryPool`), and process-level
allocator settings.

Allocator: decoded columns are allocated on the I/O threads and freed on the consumer's thread. glibc
gives each thread its own arena and returns freed blocks to the owner's arena, where they
stay: measured on a 64 MiB-bounded lineitem scan (SF 1), peak RSS growth varied between 190
and 420 MiB from run to run with default arenas, and stayed at 190-240 MiB with at most two
arenas. sluice therefore caps the arena count once, when the first connection opens.

With ``keep_freed_memory`` (default) it also has glibc keep freed memory for reuse -- no
automatic trim of a heap's top below 1 GiB, blocks up to 32 MiB from the heap rather than a
fresh mmap each -- since every chunk allocates and frees the same sizes again: handing pages
back and faulting them in anew cost TPC-H SF 1 (2 threads) 5 % geomean, Q18 18 %. sluice
returns memory itself where it matters: the pools trim once they near their budget.

pyarrow's buffers come from jemalloc (see ``_arrow_pool``), whose freed pages go back within a
second, at once under pressure; and the host pool watches the process's anonymous resident memory against its cgroup's
(or the machine's) memory, so that what no budget counts cannot get it killed (``resident_cap``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time
import weakref
from sluice.errors import ResourcesExhausted
from sluice.io.cgroup_stats import cgroup_held, cgroup_held_bytes, cgroup_memory_limit, limiting_cgroup  # noqa: F401
from sluice.metrics import fmt_bytes
import pyarrow
import torch

_M_ARENA_MAX = -8
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
ARENAS = 2
KEEP_TRIM_THRESHOLD = 1 << 30
KEEP_MMAP_THRESHOLD = 32 << 20  # glibc's largest on 64-bit
_done = False
_libc = None


def configure_allocator(keep_freed: bool = True) -> None:
    """Once per process (the first connection's settings decide)."""
    global _done, _libc
    if _done:
        return
    _done = True
    _arrow_pool()
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if hasattr(libc, "mallopt"):
            libc.mallopt(_M_ARENA_MAX, ARENAS)
            if keep_freed:  # both, or neither: a fixed trim threshold alone stops glibc's
                # adaptive mmap threshold, and every block over 128 KiB is mmapped (2x slower)
                libc.mallopt(_M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD)
                libc.mallopt(_M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD)
        if hasattr(libc, "malloc_trim"):
            _libc = libc
    except OSError:  # not glibc (musl, ...): nothing to tune
        pass


def _arrow_pool() -> None:
    """pyarrow's allocator: jemalloc where pyarrow has it, unless ``ARROW_DEFAULT_MEMORY_POOL``
    names one. Its default, mimalloc, keeps pages freed by another thread in the allocating
    thread's heap (decoded on an I/O thread, freed by the consumer or the spill writer) until
    that thread collects, and the resident set ran far past what was in use. Measured on TPC-H
    SF 10 ``count(distinct l_comment)`` under a 2 GiB budget: peak resident 3.0-3.4 GB with
    mimalloc, 2.9 with jemalloc (decay 0: freed pages go back at once), 2.7 with glibc's
    malloc; TPC-H SF 1 (2 threads) geomean 1.67, 1.70 and 1.76x DuckDB. jemalloc keeps freed
    pages JEMALLOC_DECAY_MS, and the pools purge them at once under pressure."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pyarrow.set_memory_pool(pyarrow.jemalloc_memory_pool())
        pyarrow.jemalloc_set_decay_ms(JEMALLOC_DECAY_MS)
    except (NotImplementedError, pyarrow.ArrowNotImplementedError):  # a build without jemalloc
        pass


#: How long jemalloc keeps freed pages before handing them back (pyarrow's default: 0, at once).
#: At 0 every large buffer was faulted in anew: TPC-H SF 10 q01-q18 in one process took 44 s
#: (32 s of it in the kernel) against 32.7 s (9.2) at 1000 ms and 31.9 (9.0) with mimalloc.
#: Under memory pressure the pools purge at once anyway (release_to_os).
JEMALLOC_DECAY_MS = 1000


#: glibc keeps freed memory for reuse rather than giving it back: measured on a spilling TPC-H
#: Q21 (SF 10, 502 MiB budget), resident memory stayed 400 MiB above what was in use until
#: malloc_trim returned it. So after this many bytes of reservations were released, the pool
#: trims (at most every TRIM_INTERVAL seconds): a smaller machine then sees the budget.
TRIM_BYTES = 64 << 20
TRIM_INTERVAL = 0.25
#: ... but only once the pool has been this full: far below its budget a process gains nothing
#: from handing memory back and pays for it in page faults when it allocates again (SF 1 Q01,
#: 2 threads: 0.63 s without trims, 0.79-0.95 s with them).
TRIM_PRESSURE = 0.5


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """This process's resident set now (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def anonymous_resident_bytes() -> int:
    """This process's resident memory less its file-backed and shared pages (libraries' code,
    mapped files): what a memory cgroup cannot take back without killing it."""
    try:
        with open("/proc/self/statm", "rb") as f:
            fields = f.read().split()
        return (int(fields[1]) - int(fields[2])) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def release_to_os() -> None:
    """Give freed heap memory back to the operating system: glibc's malloc_trim, and pyarrow's
    pool's freed pages (jemalloc's purge of every arena; mimalloc: this thread's heap)."""
    if _libc is not None:
        _libc.malloc_trim(0)
    pyarrow.default_memory_pool().release_unused()


#: pyarrow's allocator, where it is mimalloc (see _arrow_pool), keeps a heap per thread, and a buffer
#: freed on another thread returns to its owner's heap only when the owner next collects: the I/O threads' decoded row
#: groups, freed by the consumer, stayed resident. Measured on the 16 MiB-budget spill test
#: (SF 0.1, 2 I/O threads): peak RSS growth 147-176 MiB, 127-142 MiB when each I/O thread
#: collects before a read under pressure. Collecting costs page faults later (unconditionally:
#: TPC-H SF 1 geomean 0.21 s -> 0.31 s), so it happens only under pressure, at most this often.
ARROW_COLLECT_INTERVAL = 0.05
_collected = threading.local()


def release_thread_cache() -> None:
    """Return what this thread's pyarrow heap holds freed (by other threads) to the OS, at most
    every ARROW_COLLECT_INTERVAL seconds per thread."""
    now = time.monotonic()
    if now - getattr(_collected, "at", 0.0) < ARROW_COLLECT_INTERVAL:
        return
    _collected.at = now

    pyarrow.default_memory_pool().release_unused()


# ---------------------------------------------------------------------------- budgets

#: Default host budget: this share of the machine's (or the container's) memory after
#: RESERVED_BYTES, and at least MIN_HOST_SHARE of it. What is outside the budget covers the
#: process itself (interpreter, torch and pyarrow: about 330 MiB resident) and the chunks in
#: flight (the row groups being decoded and the chunk each operator works on).
DEFAULT_HOST_SHARE = 0.8
RESERVED_BYTES = 1 << 30
MIN_HOST_SHARE = 0.1
#: The host budget counts what sluice's buffers hold; the process holds more that no pool counts
#: (the interpreter and libraries, the chunks being worked on, allocator heaps). So where the
#: process has a memory cap (its cgroup's limit, else the machine's RAM) the host pool also
#: watches the resident set: a reservation that would take it past the cap, less a margin,
#: fails as one past the budget would (its operator spills, a scan reads ahead less) once freed
#: heap memory was handed back. Measured: TPC-H SF 10 ``count(distinct l_comment)`` with
#: ``host_memory_limit=2GiB`` in a 3 GiB cgroup was killed at 3.26 GB resident (pool 2.0 GiB,
#: pyarrow 2.2 GiB, torch's temporaries 0.45 GiB, allocator slack about 0.45 GiB).
RESIDENT_MARGIN_SHARE = 0.06
RESIDENT_MARGIN_MIN = 64 << 20
#: How often the resident set is read (between reads it is estimated from the pool's growth);
#: below this share of the cap, ten times less often (each read is about 9 us of /proc).
RESIDENT_CHECK_INTERVAL = 0.02
RESIDENT_FAR_SHARE = 0.5
#: Whatever the resident set, a pool may hold this share of its budget (or of the room under the
#: cap when the pool was made, if smaller): progress where untracked memory fills the cap.
RESIDENT_FLOOR_SHARE = 0.125
#: ... and at least this much (or an eighth of its budget, if less), even where the process is
#: over the cap before the query starts (a large result held from an earlier one).
RESIDENT_FLOOR_MIN = 32 << 20
#: Within this share of the cap the pool counts as under pressure (freed memory is trimmed).
RESIDENT_PRESSURE_SHARE = 0.125
#: Where a memory cgroup limits the process, the pool also watches what the whole cgroup holds
#: (every rank on this machine and their launcher, :func:`cgroup_held_bytes`) against its limit
#: less the margin: each rank's share of the cap is only fair, and a rank whose untracked memory
#: outgrows its share must not get its peer killed. Its ``memory.stat`` costs about 0.1 ms, so it
#: is read at most this often (below half the limit, ten times less often).
CGROUP_CHECK_INTERVAL = 0.1


def resident_cap() -> int | None:
    """What this process's anonymous resident memory should stay under: the memory of its cgroup
    (or the machine) less a margin for what is allocated between two reads of it and less the
    libraries' pages mapped into it, shared by the ranks of a job on this machine."""
    m = physical_memory()
    if m <= 0:
        return None
    m -= max(RESIDENT_MARGIN_MIN, int(RESIDENT_MARGIN_SHARE * m))
    # The ranks of a job on one machine (torchrun's LOCAL_WORLD_SIZE) share it, as their
    # default budgets do -- what is left after the process that started them (torchrun's agent,
    # or the --ranks launcher), which holds its own share of the same cgroup: two SF 10 ranks
    # in a 1.5 GiB cgroup were killed with each capped at half of it beside a 200 MiB launcher.
    # The pages of the libraries (torch, pyarrow: about 130 MiB) are charged to the cgroup once
    # for all of them (where they were first read inside it), and cannot be taken back while
    # they run.
    m -= launcher_resident_bytes() + charged_mapped_bytes()
    return m // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))


def charged_mapped_bytes() -> int:
    """This process's mapped file pages as far as its memory cgroup was charged for mapped
    files (pages first read outside it are charged elsewhere); without a cgroup, all of them."""
    mine = mapped_file_bytes()
    found = limiting_cgroup()
    held = cgroup_held(found[1]) if found else None
    return mine if held is None else min(mine, held.get("mapped", 0))


def mapped_file_bytes() -> int:
    """This process's resident file-backed and shared pages (statm's ``shared``: the libraries'
    code and data, mapped files); 0 where /proc is not there."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[2]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def launcher_resident_bytes() -> int:
    """The anonymous resident memory of the process that started this rank, where it is one
    (torchrun's environment) in this process's cgroup; else 0."""
    if "LOCAL_WORLD_SIZE" not in os.environ:
        return 0
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/cgroup") as a, open("/proc/self/cgroup") as b:
            if a.read() != b.read():
                return 0
        with open(f"/proc/{ppid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: Share of a GPU's memory budgeted by default (the CUDA context and caching allocator
#: slack live in the rest).
DEFAULT_DEVICE_SHARE = 0.85


def physical_memory() -> int:
    """Bytes of RAM, or the memory limit of the container / cgroup we run in when smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit = cgroup_memory_limit()
    return min(total, limit) if limit else total


def default_host_limit(memory: int | None = None) -> int:
    """The default host budget of a process with ``memory`` (default: the machine's or its
    cgroup's) to itself."""
    m = physical_memory() if memory is None else memory
    return int(max(MIN_HOST_SHARE * m, DEFAULT_HOST_SHARE * (m - RESERVED_BYTES)))


def default_rank_host_limit(ranks: int) -> int:
    """Each of the ``ranks`` local ranks' default host budget: the default budget of what the
    machine (or cgroup) leaves after the process that started them and the other ranks' own
    images -- each as large as this one's anonymous memory now (the interpreter, torch, pyarrow,
    the process group: about 200 MiB) -- shared among them. RESERVED_BYTES covers one process's
    image; two SF 10 sort ranks in a 1.8 GiB cgroup, each budgeted 327 MiB beside three
    processes of 200 MiB, were killed at 899 and 764 MiB."""
    ranks = max(1, ranks)
    if ranks == 1:
        return default_host_limit()
    m = physical_memory() - launcher_resident_bytes() - (ranks - 1) * anonymous_resident_bytes()
    return default_host_limit(max(m, 0)) // ranks


def default_device_limit(device) -> int:
    """A share of what this process can have of the GPU now: its free memory (other processes,
    other ranks' contexts and the CUDA context itself already taken out) plus what torch's
    caching allocator holds reserved and would hand out again -- not a share of the card's
    total, which another process on the same GPU may be using."""
    free, total = torch.cuda.mem_get_info(device)
    have = free + torch.cuda.memory_reserved(device)
    # A cap set with torch.cuda.set_per_process_memory_fraction is invisible to mem_get_info:
    # past it the caching allocator raises out-of-memory however much the card has free.
    fraction = getattr(torch.cuda, "get_per_process_memory_fraction", None)
    if fraction is not None:
        have = min(have, int(fraction(device) * total))
    return int(have * DEFAULT_DEVICE_SHARE)


class MemoryPool:
    """One memory budget (host or device) shared by the buffers of a query. Thread-safe.

    Whoever buffers reserves (STYLE rule 6): ``try_grow`` else spill, then retry; a
    reservation that cannot be met even after spilling raises one line naming the operator,
    what it needed, the budget and the setting to raise."""

    def __init__(self, limit: int, setting: str = "host_memory_limit", kind: str = "host",
                 cap: int | None | bool = True) -> None:
        self.limit = limit
        # The resident-set cap (``resident_cap``; host pools only; ``cap=None``: none).
        self.cap = (resident_cap() if cap is True else cap or None) if kind == "host" else None
        # The anonymous resident memory when the pool was made: with every byte reserved since,
        # a lower bound on what the process will hold (reservations come before their memory).
        self._base = anonymous_resident_bytes() if self.cap is not None else 0
        # (the cgroup's limit less the margin, its memory.stat) where one limits this process
        found = limiting_cgroup() if self.cap is not None else None
        self._cgroup = None if found is None else (
            found[0] - max(RESIDENT_MARGIN_MIN, int(RESIDENT_MARGIN_SHARE * found[0])), found[1])
        self._cg = self._cg_used = 0
        self._cg_at = -1.0
        self._cg_near = True
        room = limit if self.cap is None else min(limit, max(0, self.cap - self._base))
        self._floor = max(int(RESIDENT_FLOOR_SHARE * room), min(limit // 8, RESIDENT_FLOOR_MIN))
        self._trimming = threading.Lock()
        self._rss = self._rss_used = 0
        self._rss_at = -1.0
        self._rss_near = True  # read every RESIDENT_CHECK_INTERVAL (far below the cap: 10x less often)
        self.resident_refusals = 0  # reservations refused for the resident set, not the budget
        self.setting = setting
        self.kind = kind
        self.used = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._spillers: list = []  # consumers that can give memory back (materializers filling up)
        self._released = 0
        self._trimmed_at = 0.0
        self._reservations: weakref.WeakSet = weakref.WeakSet()
        # Held by whoever must go past the budget to make progress at all (a decode that needs
        # more than is left for its smallest step): one at a time, the others wait.
        self.overdraft = threading.Lock()
        # Holders of memory kept only because it was free (the connection's decoded-column
        # cache): counted in ``used``, but given back before any reservation is refused.
        self._evictable: list = []

    def under_pressure(self) -> bool:
        """Whether the pool has come near its budget, or the process near its resident cap (then
        freed memory goes back to the OS)."""
        if self.peak - self.evictable_bytes >= TRIM_PRESSURE * self.limit:
            return True
        room = self._resident_room()
        return room is not None and room < RESIDENT_PRESSURE_SHARE * self.cap

    def resident_near_limit(self) -> bool:
        """Whether the process's resident set (what a memory cgroup sees: also memory no pool
        accounts, such as allocator heaps) has come near this pool's budget."""
        return self.under_pressure() or resident_bytes() >= TRIM_PRESSURE * self.limit

    def reservation(self, owner: str) -> "Reservation":
        r = Reservation(self, owner)
        self._reservations.add(r)
        return r

    def holders(self, top: int = 3) -> list[tuple[str, int]]:
        """The largest reservations: (owner, bytes)."""
        by: dict[str, int] = {}
        for r in list(self._reservations):
            if r.size:
                by[r.owner] = by.get(r.owner, 0) + r.size
        return sorted(by.items(), key=lambda kv: -kv[1])[:top]

    def add_evictable(self, holder) -> None:
        """``holder`` keeps memory of this pool only while nobody else needs it: ``holder.size``
        (bytes it holds here) and ``holder.evict(need) -> int`` (give back at least ``need``
        bytes if it has them; the bytes given back). A reservation that does not fit has it
        give back what is missing first, and :attr:`available` counts its bytes as free."""
        with self._lock:
            self._evictable.append(holder)

    def remove_evictable(self, holder) -> None:
        with self._lock:
            if holder in self._evictable:
                self._evictable.remove(holder)

    @property
    def evictable_bytes(self) -> int:
        """Bytes the evictable holders hold in this pool (part of ``used``)."""
        return sum(h.size for h in list(self._evictable))

    def evict(self, need: int) -> int:
        """Have the evictable holders give back ``need`` bytes (least recently used first, as
        each holder orders its own); the bytes given back. Never called with the pool's lock held."""
        freed = 0
        for h in list(self._evictable):
            if freed >= need:
                break
            freed += h.evict(need - freed)
        return freed

    def register(self, spiller) -> None:
        """``spiller.spill_for(need) -> bool`` may be asked to free memory for others."""
        self._spillers.append(spiller)

    def unregister(self, spiller) -> None:
        if spiller in self._spillers:
            self._spillers.remove(spiller)

    def reclaim(self, need: int, requester=None) -> bool:
        """Ask other consumers to spill, largest holder first, until ``need`` bytes are free."""
        others = sorted((s for s in self._spillers if s is not requester), key=lambda s: -s.held_bytes)
        for s in others:
            if self.available >= need:
                break
            s.spill_for(need)
        return self.available >= need

    @property
    def available(self) -> int:
        avail = self.limit - self.used
        room = self._resident_room()
        return max(0, avail if room is None else min(avail, room)) + self.evictable_bytes

    def _resident_room(self) -> int | None:
        """Bytes the resident set has left under ``cap`` (None: no cap): read at most every
        RESIDENT_CHECK_INTERVAL, in between the last reading moved by what the pool grew or
        shrank since; never more than its reservations leave, never less than the floor does."""
        if self.cap is None:
            return None
        now = time.monotonic()
        if now - self._rss_at >= RESIDENT_CHECK_INTERVAL * (1 if self._rss_near else 10):
            self._rss, self._rss_used, self._rss_at = anonymous_resident_bytes(), self.used, now
            self._rss_near = self._rss >= RESIDENT_FAR_SHARE * self.cap
        # Reserved bytes not yet allocated are not in the reading: the pool's own account (its
        # start plus what it holds reserved) bounds the resident set from below.
        held = max(self._rss + (self.used - self._rss_used), self._base + self.used)
        room = self.cap - held
        if self._cgroup is not None:
            room = min(room, self._cgroup_room(now))
        return max(room, self._floor - self.used)

    def _cgroup_room(self, now: float) -> int:
        """Bytes the cgroup has left under its limit less the margin (CGROUP_CHECK_INTERVAL)."""
        limit, stat = self._cgroup
        if now - self._cg_at >= CGROUP_CHECK_INTERVAL * (1 if self._cg_near else 10):
            cg = cgroup_held_bytes(stat)
            if cg is None:  # gone (the process moved): the per-process cap alone
                self._cgroup = None
                return limit
            self._cg, self._cg_used, self._cg_at = cg, self.used, now
            self._cg_near = cg >= RESIDENT_FAR_SHARE * limit
        return limit - (self._cg + max(0, self.used - self._cg_used))

    def _resident_allows(self, n: int) -> bool:
        """Whether ``n`` more bytes fit under the resident cap; if not, freed heap memory goes
        back to the OS (at most every TRIM_INTERVAL) and the resident set is read again."""
        room = self._resident_room()
        if room is None or n <= room:
            return True
        if self.trim_for_room() and n <= self._resident_room():
            return True
        self.resident_refusals += 1
        return False

    def trim_for_room(self) -> bool:
        """Hand freed heap memory back to the OS (one thread at a time, at most every
        TRIM_INTERVAL) and read the resident set again; False if it was not done now."""
        if self.cap is None or time.monotonic() - self._trimmed_at < TRIM_INTERVAL:
            return False
        if not self._trimming.acquire(blocking=False):
            return False
        try:
            self._trimmed_at = time.monotonic()
            release_to_os()
            self._rss_at = self._cg_at = -1.0
        finally:
            self._trimming.release()
        return True

    def _grow(self, n: int, resident: bool = True, evict: bool = True) -> bool:
        """Reserve ``n`` bytes if the budget -- and, with ``resident``, the resident cap -- allow,
        after the evictable holders gave back what is missing (unless ``evict`` is false: a
        holder growing itself)."""
        if self._add(n, resident):
            return True
        if not evict or not self._evictable:
            return False
        self.evict(max(self.used + n - self.limit, 0) or n)
        return self._add(n, resident)

    def _add(self, n: int, resident: bool) -> bool:
        if resident and self.cap is not None and (self.used + n > self.limit or not self._resident_allows(n)):
            return False  # (the budget first: a request it refuses anyway pays for no trim)
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            self.peak = max(self.peak, self.used)
            return True

    def _force(self, n: int) -> None:
        if self._evictable and self.used + n > self.limit:  # bytes that exist: the cache makes room
            self.evict(self.used + n - self.limit)
        with self._lock:
            self.used += n
            self.peak = max(self.peak, self.used)
        # Bytes that exist past the resident cap (a merge window, a chunk being worked on): what
        # the allocators keep freed goes back now (at most every TRIM_INTERVAL), not only when
        # a reservation is refused -- a 2-rank SF 10 sort's merge, forcing its windows, sat
        # 300 MiB of freed memory past its cap and its cgroup was killed.
        if self.cap is not None:
            room = self._resident_room()
            if room is not None and room < 0:
                self.trim_for_room()

    def _release(self, n: int) -> None:
        with self._lock:
            self.used -= n
            self._released += n
            if self._released < TRIM_BYTES or self.kind != "host" or not self.under_pressure():
                return
            now = time.monotonic()
            if now - self._trimmed_at < TRIM_INTERVAL:
                return
            self._released, self._trimmed_at = 0, now
        release_to_os()


class Reservation:
    """Bytes one operator holds in a pool; released with ``free`` or at the end of a ``with``."""

    def __init__(self, pool: MemoryPool, owner: str) -> None:
        self.pool = pool
        self.owner = owner
        self.size = 0
        self.peak = 0

    def try_grow(self, n: int, resident: bool = True, evict: bool = True) -> bool:
        """Grow by ``n`` bytes if they fit (evictable holders giving back what is missing, unless
        ``evict`` is false); False otherwise (the caller spills or waits)."""
        if n <= 0:
            return True
        if not self.pool._grow(n, resident, evict):
            return False
        self.size += n
        self.peak = max(self.peak, self.size)
        return True

    def grow(self, n: int, what: str = "") -> None:
        """Grow or raise ResourcesExhausted (the caller has nothing left to spill). The budget
        alone decides here: the resident cap only makes callers that can spill or wait do so."""
        if not self.try_grow(n, resident=False):
            raise budget_error(self.owner, n, self.pool, what)

    def force(self, n: int) -> None:
        """Account bytes that already exist (a chunk being worked on), even past the budget."""
        if n > 0:
            self.pool._force(n)
            self.size += n
            self.peak = max(self.peak, self.size)

    def shrink(self, n: int) -> None:
        n = min(n, self.size)
        if n > 0:
            self.pool._release(n)
            self.size -= n

    def resize(self, n: int) -> bool:
        """Set the reservation to ``n`` bytes; False (unchanged) if growing does not fit."""
        if n > self.size:
            return self.try_grow(n - self.size, resident=False)
        self.shrink(self.size - n)
        return True

    def free(self) -> None:
        self.shrink(self.size)

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, *exc) -> None:
        self.free()


def budget_error(owner: str, need: int, pool: MemoryPool, what: str = ""):
    detail = f" ({what})" if what else ""
    held = ", ".join(f"{o} {fmt_bytes(n)}" for o, n in pool.holders())
    return ResourcesExhausted(
        f"{owner} needs {fmt_bytes(need)} more{detail} but the {pool.kind} memory budget of "
        f"{fmt_bytes(pool.limit)} is used (held by {held or 'nothing'}) and nothing more can be spilled; "
        f"raise it with --set {pool.setting}=...")
