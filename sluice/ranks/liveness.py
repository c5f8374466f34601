"""Is every rank of the job still alive and getting somewhere? A watchdog per rank, over the job's
own c10d store (the rendezvous' key-value store torchrun or the local launcher set up: nothing
of ours to deploy), so that a rank that hangs ends the query everywhere within
``dist_timeout_s`` instead of leaving its peers in a collective for half an hour.

Why not the collectives' own timeout: a gloo collective waits for its slowest peer, so a
timeout short enough to catch a hang (a minute) fails a query whose ranks are merely busy
between two collectives for longer (a large sort, a slow disk), and aborting a gloo group does
not wake a rank blocked in one (measured: it returned only when the peer exited). So each rank
publishes, every ``timeout / 6`` seconds (at most 1 s), one record::

    beat   a counter its watchdog thread advances: a stopped (SIGSTOP), killed or unreachable
           process stops advancing it;
    state  idle (no query), busy (running one) or waiting (in a collective, or handing rows to
           its caller: slowness that is someone else's);
    stale  seconds since it last made progress, while busy: a chunk out of any operator, or the
           process's CPU time moving (one operation over a large input -- a join fanning out --
           makes no chunk for long but computes all the while; a read that never returns
           computes nothing).
    scan   the query's number on this rank, the bytes its scans have read and the bytes they
           will read: rank 0's progress bar sums them over the ranks (:meth:`Liveness.job_scan`),
           so it shows the job's work, not rank 0's share.

While this rank runs a query (:meth:`Liveness.armed`) it judges every peer, and itself: a peer
whose beat has not moved for ``timeout`` seconds is lost; a rank busy with no progress for
``timeout`` seconds is hung (an NFS read that never returns). Then ``on_lost`` runs with one
line naming the rank -- the process cannot raise into a thread blocked in a collective, so the
callbacks end the process (the local launcher's worker writes its status first, and the
launcher stops what is left; see :mod:`sluice.launch`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Callable

#: How often a record is published, as a share of the timeout (at most once a second): six beats
#: fit in the timeout, so a rank a thread scheduler delays by a beat or two is not taken for lost.
BEATS_PER_TIMEOUT = 6

_KEY = "sluice/live/{}"
#: The share of a beat's interval the process must have computed (CPU time, all its threads) to
#: count as progress: far above what the watchdog's own store calls cost (well under 1 %).
CPU_BUSY_SHARE = 0.05


class Liveness:
    """This rank's watchdog (see the module docstring)."""

    def __init__(self, store, rank: int, world: int, timeout_s: float,
                 on_lost: Callable[[str, int], None], clock: Callable[[], float] = time.monotonic,
                 cpu_clock: Callable[[], float] = time.process_time) -> None:
        self.store = store
        self.rank = rank
        self.world = world
        self.timeout_s = float(timeout_s)
        self.interval = min(1.0, self.timeout_s / BEATS_PER_TIMEOUT)
        self.on_lost = on_lost
        self.clock = clock
        self.cpu_clock = cpu_clock
        self.host = f"{socket.gethostname()}:{os.getpid()}"
        self._beat = 0
        self._armed = 0
        self._waiting = 0
        self._progress = clock()
        self._cpu = cpu_clock()
        self._seen: dict[int, tuple[str, float]] = {}  # peer -> (its last beat, when it changed here)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: str | None = None
        self._store_errors = 0
        self._query = 0  # this rank's query count: records of the same query are summed
        self._scanned = 0
        self._to_scan = 0
        self._peers: dict[int, str] = {}  # the peers' last records (read by the watchdog)

    # ---------------------------------------------------------------- what this rank says

    def begin_scan(self, to_scan: int) -> None:
        """A query starts on this rank; its scans will read ``to_scan`` bytes."""
        with self._lock:
            self._query += 1
            self._scanned, self._to_scan = 0, int(to_scan)

    def scanned(self, nbytes: int) -> None:
        """The scans read ``nbytes`` more (the engine's progress callback)."""
        self._scanned += int(nbytes)

    def job_scan(self) -> tuple[int, int]:
        """(bytes read, bytes to read) by every rank's scans in this query, as far as the peers'
        last records tell (each published within a beat)."""
        done, total = self._scanned, self._to_scan
        for rec in self._peers.values():
            f = rec.split()
            if len(f) >= 7 and f[4] == str(self._query):
                done += int(f[5])
                total += int(f[6])
        return done, total

    def tick(self) -> None:
        """Progress: a chunk or a read task done (cheap: called per chunk)."""
        self._progress = self.clock()

    @contextlib.contextmanager
    def armed(self):
        """A query runs on this rank: peers (and this rank) are judged meanwhile."""
        with self._lock:
            self._armed += 1
            self._progress = self.clock()
            self._seen.clear()  # a peer's beat is timed from now: it may have been idle long
        try:
            yield
        finally:
            with self._lock:
                self._armed -= 1

    @contextlib.contextmanager
    def waiting(self):
        """This rank waits for others (a collective) or for its caller: not its own hang."""
        with self._lock:
            self._waiting += 1
        try:
            yield
        finally:
            with self._lock:
                self._waiting -= 1
                self._progress = self.clock()

    def _record(self) -> str:
        now = self.clock()
        state = "idle" if not self._armed else "waiting" if self._waiting else "busy"
        stale = now - self._progress if state == "busy" else 0.0
        return f"{self._beat} {state} {stale:.3f} {self.host} {self._query} {self._scanned} {self._to_scan}"

    # ---------------------------------------------------------------- judging

    def check(self) -> str | None:
        """One round: publish this rank's record, read the peers'; the line naming a lost or
        hung rank, or None."""
        self._beat += 1
        cpu = self.cpu_clock()
        if cpu - self._cpu > CPU_BUSY_SHARE * self.interval:
            self.tick()
        self._cpu = cpu
        own = self._record()
        self.store.set(_KEY.format(self.rank), own)
        if not self._armed:
            return None
        state, stale = own.split()[1:3]
        if state == "busy" and float(stale) > self.timeout_s:
            return self._line(self.rank, "made no progress")
        now = self.clock()
        self._peers = self._peer_records()
        for r, rec in self._peers.items():
            beat, state, stale = (rec.split() + ["", "", "0"])[:3]
            last = self._seen.get(r)
            if last is None or last[0] != beat:
                self._seen[r] = (beat, now)
            elif now - last[1] > self.timeout_s:
                return self._line(r, "stopped answering")
            if state == "busy" and float(stale) > self.timeout_s:
                return self._line(r, "made no progress")
        return None

    def _peer_records(self) -> dict[int, str]:
        """The peers' last records ('' for a peer that has not published one yet: its beat is
        timed like a record that does not change). A store get waits for a missing key, so
        keys are checked first."""
        peers = [r for r in range(self.world) if r != self.rank]
        keys = [_KEY.format(r) for r in peers]
        if keys and self.store.check(keys):
            values = self.store.multi_get(keys)
        else:
            values = [self.store.get(k) if self.store.check([k]) else b"" for k in keys]
        return {r: v.decode() if isinstance(v, bytes) else str(v) for r, v in zip(peers, values)}

    def _line(self, r: int, what: str) -> str:
        return (f"rank {r} {what} for {self.timeout_s:g} s; the query stopped on every rank "
                "(dist_timeout_s sets how long a rank may show no sign of life)")

    # ---------------------------------------------------------------- the thread

    def start(self) -> "Liveness":
        self._thread = threading.Thread(target=self._run, name="sluice-liveness", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                line = self.check()
            except Exception as e:  # noqa: BLE001 - the store is gone (its launcher died)
                self._store_errors += 1
                if not self._armed or self._store_errors * self.interval <= self.timeout_s:
                    continue
                line = (f"rank {self.rank} lost the job's store for {self.timeout_s:g} s "
                        f"({str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__}); "
                        "the query stopped")
            else:
                self._store_errors = 0
            if line is not None:
                self.lost = line
                self.on_lost(line, int(line.split()[1]))
                return


_WATCH: Liveness | None = None


def watch(store, rank: int, world: int, timeout_s: float, on_lost: Callable[[str, int], None]) -> Liveness:
    """Start this process's watchdog (once), on its own connection to the store where the store
    can be cloned (the main thread's store calls are not serialised behind its beats)."""
    global _WATCH
    if _WATCH is None:
        try:
            store = store.clone()
        except Exception:  # noqa: BLE001 - a store without clone (HashStore, older torch)
            pass
        _WATCH = Liveness(store, rank, world, timeout_s, on_lost).start()
    return _WATCH


def current() -> Liveness | None:
    return _WATCH


def tick() -> None:
    """Progress on this rank (nothing outside a job)."""
    if _WATCH is not None:
        _WATCH.tick()


@contextlib.contextmanager
def waiting():
    """This rank waits on its peers or its caller (nothing outside a job)."""
    if _WATCH is None:
        yield
        return
    with _WATCH.waiting():
        yield


@contextlib.contextmanager
def armed():
    """A query runs on this rank (nothing outside a job)."""
    if _WATCH is None:
        yield
        return
    with _WATCH.armed():
        yield
