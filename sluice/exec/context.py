"""What every operator can reach while running: settings, device, the shared I/O pool,
the metadata cache, the memory budget and spill files, the timeline recorder and
each operator's run record. One context per query run; operators are not changed after
lowering and keep their run state in their :class:`OperatorRun` (or in their generators),
never on themselves. A run record is found by the operator object itself (operators compare
and hash by identity), never by a memory address that a later object could reuse."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import torch

from sluice.adapt.scan_policy import Coordinator
from sluice.adapt.spill_codec import SpillCodec
from sluice.config import Config
from sluice.errors import InternalError, SluiceError, internal_error, is_resource_error
from sluice.metrics import MaterializeStats, OperatorStats, Recorder
from sluice.exec.minmax_bounds import MinMaxBound
from sluice.exec.runtime_filter import RuntimeFilter
from sluice.io.memory import MemoryPool, default_device_limit, default_host_limit
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.spill import HostPages, SpillManager
from sluice.ranks import liveness


@dataclass(eq=False)
class OperatorRun:
    """One operator's record of one run: what it counted (rows and time, memory and spill, the
    scan's reader with its statistics, an exchange's traffic) and the result it keeps for a
    second pull (a shared subplan's rows, an exchange's received partitions)."""

    stats: OperatorStats | None = None
    reader: object | None = None  # a scan's ScanReader
    memory: MaterializeStats | None = None
    exchange: object | None = None  # an exchange's ExchangeStats
    result: object | None = None


@dataclass(frozen=True, eq=False)
class ExecContext:
    """Frozen: what a run is given is fixed when it starts; what it produces goes into the
    containers it holds (``runs``, ``filters``, ``rank_stats``, ...), never into new fields."""

    config: Config
    device: torch.device
    pool: ThreadPoolExecutor
    cache: MetadataCache
    recorder: Recorder = field(default_factory=Recorder)
    runs: dict[object, OperatorRun] = field(default_factory=dict)  # operator -> its run record
    progress: Callable[[int], None] | None = None
    memory: MemoryPool | None = None                              # the host budget
    device_memory: MemoryPool | None = None                       # the device budget (CUDA)
    device_tier: bool = False                                     # simulate the device tier on the CPU (tests)
    scan_count: int = 1                                            # scans in the plan (they share read-ahead memory)
    dist: object | None = None                                     # the DistGroup of a distributed run
    filters: dict[object, RuntimeFilter] = field(default_factory=dict)  # RuntimeFilterSpec -> this run's filter
    bounds: dict[object, MinMaxBound] = field(default_factory=dict)  # MinMaxBoundSpec -> this run's bound
    recursive_work: dict[str, list] = field(default_factory=dict)  # recursive CTE -> rows of its last step
    scan_coordinator: Coordinator = field(default_factory=Coordinator)  # one adaptive scan samples at a time
    rank_stats: list = field(default_factory=list)                 # rank 0 of a distributed run: each rank's summary
    _spill: list = field(default_factory=list)                     # this run's SpillManager, once created
    oom_reruns: list = field(default_factory=list)                 # device budgets of reruns after the GPU ran out
    column_cache: object | None = None                             # the connection's ColumnCache (io.column_cache)
    _cache_hold: list = field(default_factory=list)                # its hold on this run's scan pool, once attached

    def __post_init__(self) -> None:
        # The budgets are derived from the config once, here (frozen: set through object).
        if self.memory is None:
            limit = self.config.host_memory_limit or default_host_limit()
            object.__setattr__(self, "memory", MemoryPool(limit, "host_memory_limit", "host"))
        if self.device_memory is None and (self.device.type == "cuda" or self.device_tier):
            limit = self.config.device_memory_limit or (
                default_device_limit(self.device) if self.device.type == "cuda" else self.memory.limit)
            object.__setattr__(self, "device_memory", MemoryPool(limit, "device_memory_limit", "device"))
        if self.column_cache is not None:
            # The decoded-column cache is charged to the pool the scans' decoded columns live in.
            pool = self.scan_pool
            limit = self.config.column_cache_limit(self.device.type, pool.limit)
            if limit > 0:
                self._cache_hold.append(self.column_cache.attach(pool, limit))

    @property
    def scan_pool(self) -> MemoryPool:
        """The budget scans' decoded columns are in: the device's on a GPU, the host's otherwise."""
        return self.device_memory if self.device.type == "cuda" else self.memory

    @property
    def cache_on(self) -> bool:
        """Whether this run's scans use the connection's column cache."""
        return bool(self._cache_hold)

    def run(self, op) -> OperatorRun:
        """``op``'s run record (created on first use)."""
        r = self.runs.get(op)
        if r is None:
            r = self.runs[op] = OperatorRun()
        return r

    def runtime_filter(self, spec) -> RuntimeFilter:
        """This run's filter for a RuntimeFilterSpec (created empty on first use)."""
        rf = self.filters.get(spec)
        if rf is None:
            rf = self.filters[spec] = RuntimeFilter(spec.join, spec.column, bloom=spec.bloom, topk=spec.topk,
                                                   deep=spec.deep)
        return rf

    def minmax_bound(self, spec) -> MinMaxBound:
        """This run's MIN / MAX bound for a MinMaxBoundSpec (created empty on first use)."""
        b = self.bounds.get(spec)
        if b is None:
            b = self.bounds[spec] = MinMaxBound(spec)
        return b

    def memory_stats(self, op):
        """``op``'s MaterializeStats (created on first use)."""
        r = self.run(op)
        if r.memory is None:
            r.memory = MaterializeStats()
        return r.memory

    def readers(self) -> list:
        """The scan readers of this run, in the order the scans started."""
        return [r.reader for r in self.runs.values() if r.reader is not None]

    def spilled_bytes(self) -> int:
        """Bytes every operator of this run wrote to spill."""
        return sum(r.memory.spilled_bytes for r in self.runs.values() if r.memory is not None)

    @property
    def state_pool(self) -> MemoryPool:
        """Where operator state lives: device memory on a GPU (spilling to host, then disk),
        host memory on the CPU (spilling to disk)."""
        return self.device_memory if self.device_memory is not None else self.memory

    def spill_target(self, label: str):
        """Where a partition goes when it leaves ``state_pool``: host memory on a GPU (the tier
        above disk), a spill file otherwise."""
        if self.device_memory is not None:
            return HostPages(self, label)
        return self.spills().new_file(label)

    def spills(self) -> SpillManager:
        """This query's spill files (created on first use)."""
        if not self._spill:
            codec = SpillCodec(self.config.spill_compression)
            self._spill.append(SpillManager(self.config.spill_dirs(), codec, self.recorder,
                                            self.config.page_dictionaries))
        return self._spill[0]

    @property
    def spill_manager(self) -> SpillManager | None:
        return self._spill[0] if self._spill else None

    def close(self) -> None:
        """Remove every spill file of the run (on success, error or interrupt); the column cache
        stops being charged to this run's budget."""
        if self._spill:
            self._spill[0].close()
        while self._cache_hold:
            self.column_cache.detach(self._cache_hold.pop())


def timed(gen, st: OperatorStats, recorder=None, device: torch.device | None = None):
    """Wrap a chunk generator: count rows/chunks/bytes and inclusive time producing them.

    An unexpected exception leaves as an InternalError naming the operator that raised it (the
    innermost one: its parents see a SluiceError and let it pass). With ``device``, a chunk
    with a column elsewhere is an InternalError too: on a GPU a CPU column would meet CUDA
    columns in the parent's kernels (literal rows once did), so it is caught where it is made."""
    it = iter(gen)
    while True:
        t0 = time.perf_counter()
        try:
            chunk = next(it)
        except StopIteration:
            st.inclusive_s += time.perf_counter() - t0
            return
        except SluiceError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in this operator: say which one
            if is_resource_error(e):
                raise
            raise internal_error(f"operator {st.name}", e) from e
        t1 = time.perf_counter()
        st.inclusive_s += t1 - t0
        if recorder is not None:  # an operator span in --trace (nested in its parent's)
            recorder.add("operator", t0, t1, 0, st.name)
        if device is not None:
            check_device(chunk, device, st.name)
        liveness.tick()  # progress, for the ranks' watchdog (nothing outside a job)
        st.rows += chunk.num_rows
        st.chunks += 1
        st.nbytes += chunk.nbytes
        yield chunk


def check_device(chunk, device: torch.device, who: str) -> None:
    """Every tensor of ``chunk`` (and the chunk itself, when it has no column) on ``device``."""
    if chunk.device != device:
        raise InternalError(f"operator {who} made a chunk on {chunk.device}, the query runs on {device}")
    for name, c in chunk.columns.items():
        if c.data.device != device or (c.valid is not None and c.valid.device != device):
            raise InternalError(f"operator {who} made column {name} on {c.data.device}, "
                                f"the query runs on {device}")
