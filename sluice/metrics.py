"""Instrumentation: per-operator and per-scan counters, and a timeline of stage events.

Stages of the data path (PystachIO §4): ``read`` (storage -> host bytes, I/O threads),
``decode`` (Parquet pages -> Arrow -> host tensors, I/O threads), ``h2d`` (host -> device
copies) and ``compute`` (operators on the consumer thread, i.e. not waiting for a scan);
``network`` (an exchange's transfer between ranks, from its issue to its completion).
Events are cheap tuples appended under a lock: a few per row-group task and per chunk.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

STAGES = ("read", "decode", "h2d", "compute", "wait", "spill_write", "spill_read", "network")


@dataclass
class Event:
    stage: str
    start: float
    end: float
    nbytes: int
    thread: str
    label: str = ""


class Recorder:
    """Collects stage events of one query run (times relative to ``t0``)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.wall0 = time.time()  # t0 on the wall clock: ranks' timelines are aligned on it
        self.t_end: float | None = None
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def add(self, stage: str, start: float, end: float, nbytes: int = 0, label: str = "") -> None:
        ev = Event(stage, start - self.t0, end - self.t0, nbytes, threading.current_thread().name, label)
        with self._lock:
            self.events.append(ev)

    def finish(self) -> None:
        self.t_end = time.perf_counter() - self.t0

    @property
    def wall(self) -> float:
        return self.t_end if self.t_end is not None else time.perf_counter() - self.t0

    def busy(self, stage: str) -> float:
        return sum(e.end - e.start for e in self.events if e.stage == stage)

    def total_bytes(self, stage: str) -> int:
        return sum(e.nbytes for e in self.events if e.stage == stage)

    def timeline(self, bins: int = 200) -> tuple[list[float], dict[str, list[float]], dict[str, list[float]]]:
        """Bin centres, bandwidth per stage (bytes/s) and busy fraction per stage, per bin."""
        wall = max(self.wall, 1e-6)
        width = wall / bins
        centres = [(i + 0.5) * width for i in range(bins)]
        bw = {s: [0.0] * bins for s in STAGES}
        util = {s: [0.0] * bins for s in STAGES + ("main_other",)}
        for e in self.events:
            if e.stage not in bw:  # operator spans and mode switches: trace only
                continue
            dur = max(e.end - e.start, 1e-9)
            first = max(0, int(e.start / width))
            last = min(bins - 1, int(e.end / width))
            for b in range(first, last + 1):
                lo, hi = b * width, (b + 1) * width
                ov = max(0.0, min(hi, e.end) - max(lo, e.start))
                if ov <= 0:
                    continue
                bw[e.stage][b] += e.nbytes * (ov / dur) / width
                util[e.stage][b] += ov / width
                if e.thread == "MainThread" and e.stage != "network":  # a transfer flies beside compute
                    util["main_other"][b] += ov / width  # consumer thread not computing
        return centres, bw, util

    def chrome_trace(self, pid: int = 1, shift_s: float = 0.0) -> dict:
        """Chrome / Perfetto trace (``chrome://tracing``, ui.perfetto.dev): this run's events as
        process ``pid``, ``shift_s`` seconds later (a rank's timeline beside rank 0's)."""
        tids: dict[str, int] = {}
        out = []
        for e in self.events:
            tid = tids.setdefault(e.thread, len(tids) + 1)
            if e.stage == "mode":  # a scan's mode decision: an instant event
                out.append({"name": e.label, "cat": "mode", "ph": "i", "s": "t", "pid": pid, "tid": tid,
                            "ts": (e.start + shift_s) * 1e6})
                continue
            out.append({"name": e.label or e.stage, "cat": e.stage, "ph": "X", "pid": pid, "tid": tid,
                        "ts": (e.start + shift_s) * 1e6, "dur": (e.end - e.start) * 1e6, "args": {"bytes": e.nbytes}})
        for name, tid in tids.items():
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        return {"traceEvents": out, "displayTimeUnit": "ms"}


@dataclass
class ScanStats:
    """Per scan: what was read, decoded and skipped."""

    table: str
    row_groups: int = 0
    pruned: int = 0
    bytes_read: int = 0      # compressed bytes of the selected column chunks
    bytes_decoded: int = 0   # host tensor bytes produced
    rows: int = 0
    wait_s: float = 0.0      # consumer time blocked waiting for data
    peak_buffered: int = 0   # most decoded bytes held ahead of the consumer
    peak_in_flight: int = 0  # most read tasks queued or running at once (overlapped scans)
    merged: int = 0          # tasks merged onto the task before them into one chunk (coalesce_rows)
    modes: dict = field(default_factory=dict)   # data-movement mode -> ModeStats
    switches: list = field(default_factory=list)  # the mode policy's decisions (adapt.scan_policy.Switch)
    decoder: str = "arrow"   # which decoder decoded the pages (io.parquet.decoders)
    fallbacks: dict = field(default_factory=dict)  # column -> why the device decoder left it to pyarrow
    pages_device_decompressed: int = 0  # pages the device decoder had nvCOMP decompress on the GPU
    pages_host_decompressed: int = 0    # ... and decompressed on the host (pyarrow's codecs)
    host_decompress_why: dict = field(default_factory=dict)  # codec -> why its pages stayed on the host
    reads: str = ""                     # how the device decoder read column chunks (kvikio / posix)
    pages_selected: int = 0      # data pages staging gave the device decoder a row selection for
    pages_skipped: int = 0       # ... of which none of the rows was kept: not decompressed, not decoded
    page_bytes_skipped: int = 0  # their compressed bytes
    cache_hits: int = 0          # row groups of columns served from the column cache (io.column_cache)
    cache_misses: int = 0        # ... decoded (a column the cache may keep, missing there)
    cache_hit_bytes: int = 0     # bytes served from the cache
    cache_stored_bytes: int = 0  # bytes this scan put in the cache


@dataclass
class ModeStats:
    """Slices one scan moved in one mode: input rows, rows passed on, end-to-end seconds."""

    slices: int = 0
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.rows_in / self.seconds if self.seconds > 0 else 0.0


@dataclass
class OperatorStats:
    name: str
    rows: int = 0
    chunks: int = 0
    nbytes: int = 0
    inclusive_s: float = 0.0


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_rate(bps: float) -> str:
    return fmt_bytes(bps) + "/s"


def merged_trace(recorder: Recorder, rank_stats: list) -> dict:
    """One Chrome trace of a run over several ranks: each rank a process (pid = rank, named
    "rank N"), its timeline placed by its start on the wall clock beside rank 0's (the
    machines' clocks agree as far as NTP keeps them). ``rank_stats``: the ranks' summaries
    (:func:`sluice.exec.exchange.rank_summary`), which carry their events when reads were
    measured; alone, ``recorder``'s own trace."""
    if not rank_stats:
        return recorder.chrome_trace()
    out = []
    wall0 = rank_stats[0].get("wall0", recorder.wall0)
    for rank, st in enumerate(rank_stats):
        events = st.get("events")
        if events is None:
            continue
        shifted = Recorder.__new__(Recorder)  # the rank's events, as plain data again
        shifted.events = [Event(*e) for e in events]
        out += shifted.chrome_trace(pid=rank, shift_s=st["wall0"] - wall0)["traceEvents"]
        out.append({"name": "process_name", "ph": "M", "pid": rank, "args": {"name": f"rank {rank}"}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": rank, "args": {"sort_index": rank}})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


@dataclass
class MaterializeStats:
    """What one operator's materialization did (shown by --analyze)."""

    peak_reserved: int = 0
    partitions: int = 0          # partitions in use (0: never partitioned)
    spilled_partitions: int = 0
    spilled_bytes: int = 0
    spilled_pages: int = 0
    read_bytes: int = 0
    read_pages: int = 0
    levels: int = 0              # deepest recursive repartitioning
    compactions: int = 0         # partitions compacted in memory instead of spilled
    files: list = field(default_factory=list)

    def merge(self, other: "MaterializeStats") -> None:
        self.peak_reserved = max(self.peak_reserved, other.peak_reserved)
        self.partitions = max(self.partitions, other.partitions)
        self.spilled_partitions += other.spilled_partitions
        self.spilled_bytes += other.spilled_bytes
        self.spilled_pages += other.spilled_pages
        self.read_bytes += other.read_bytes
        self.read_pages += other.read_pages
        self.levels = max(self.levels, other.levels)
        self.compactions += other.compactions
