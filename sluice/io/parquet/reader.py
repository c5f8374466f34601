"""A scan's pipeline: its read tasks run ahead of the consumer with bounded read-ahead (PystachIO §4-5).

Each task (row groups batched to about ``chunk_rows`` rows by ``sluice.io.parquet.read_plan``)
is loaded on an I/O thread by its mode's strategy (``sluice.io.parquet.scan_modes``: fetch,
decompress and decode with the scan's decoder, filter where the mode says, ship to the device)
and handed over here, where late runtime filters apply and tasks are merged or sliced.

Overlapped (default): tasks run on the connection's shared I/O pool, ahead of the consumer,
as long as the decoded bytes held for this scan stay within ``scan_buffer_bytes`` (adaptive
regulation: when the consumer falls behind, no new reads start, so memory is bounded by the
setting, not by the table). With ``reader_combining`` every scan of a plan starts reading when
the query starts. Blocking (``pipeline=blocking``): the scan reads its whole table in the
consumer's thread, then yields.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Callable, Iterator

import torch

from sluice.chunk import Chunk, Column, concat_chunks
from sluice.config import Config
from sluice.io.parquet.cached_decode import CachedDecoder
from sluice.io.parquet.decoders import DecodeContext, make_decoder
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.parquet.read_plan import ReadPlan
from sluice.io.parquet.scan_modes import MODES, Loaded, SliceIO, nothing
from sluice.io.parquet.slice_filter import SliceFilter
from sluice.io.memory import release_thread_cache, release_to_os
from sluice.io.pinned import columns_nbytes, wait_for
from sluice.metrics import ModeStats, Recorder, ScanStats

#: With scan_mode=auto, at most this many slices more than the I/O pool's threads are in
#: flight (3 at least): the policy assigns a mode when a slice is queued, so a deep queue would
#: act on old measurements -- but a queue shallower than the pool leaves threads idle. (A fixed
#: 3 kept an H200 machine's 8 I/O threads 18 % busy on TPC-H SF 10 q01: the consumer waited
#: 0.86 s of 1.23 s.)
POLICY_AHEAD = 1
#: Rows a Bloom runtime filter must have probed (removing at least half) before an adaptive
#: scan stops choosing direct, which cannot apply it (ScanPolicy.drop_mode).
DROP_DIRECT_AFTER = 1 << 16

#: A scan gives freed memory back to the OS after consuming this many decoded bytes.
SCAN_TRIM_BYTES = 128 << 20

#: Tests and the fuzzer: a scan that merges tasks (``coalesce_rows``) first waits for those in
#: flight, as a consumer slower than its I/O threads finds them, so every merge path runs.
WAIT_TO_COALESCE = False

#: Rows per dictionary entry a string column needs for its task to be merged (below: plain
#: strings, whose bytes the merge would copy on the host, paid for by the consumer rather than
#: the I/O threads). The fuzzer sets 0 to merge every string column.
MERGE_ROWS_PER_ENTRY = 8


def _mergeable(cols: dict[str, Column] | None, n: int) -> bool:
    """Whether a task's decoded columns (``n`` rows) may take part in a merge
    (``coalesce_rows``), by their string columns' dictionaries (:data:`MERGE_ROWS_PER_ENTRY`)."""
    for col in (cols or {}).values():
        if col.dictionary is not None and len(col.dictionary) * MERGE_ROWS_PER_ENTRY > n:
            return False
    return True


def _sliced(whole: Chunk | None, step: int) -> Iterator[Chunk]:
    """``whole`` (None: nothing) in chunks of at most ``step`` rows."""
    if whole is None:
        return
    n = whole.num_rows
    for start in range(0, n, step):
        stop = min(n, start + step)
        yield whole if (start == 0 and stop == n) else whole.slice(start, stop)


def _merge_next(pending: deque, mode: str) -> bool:
    """Whether the next pending task can join a merge of slices in ``mode``: loaded without an
    error (one is raised in its turn, not early), in the same mode (the adaptive policy compares
    modes by their slices' costs) and not of plain strings."""
    fut, _i, _est, its_mode = pending[0]
    if not fut.done() or its_mode != mode or fut.exception() is not None:
        return False
    cols, _event, _nread, n, _filtered = fut.result()
    return _mergeable(cols, n)


class ScanReader:
    """One scan's read pipeline; iterate it for chunks."""

    def __init__(self, spec, reads: ReadPlan, *, config: Config, pool: ThreadPoolExecutor, cache: MetadataCache,
                 device: torch.device, recorder: Recorder | None = None, stats: ScanStats | None = None,
                 progress: Callable[[int], None] | None = None, buffer_bytes: int | None = None,
                 reservation=None, policy=None, runtime: list | None = None, decode_pool=None, host_pool=None,
                 bound=None, column_cache=None) -> None:
        # ``spec``: the ScanSpec lowering made (sluice.physical.scan); ``reads``: its read
        # tasks, or those cut to this run's read-ahead budget.
        self.spec = spec
        table = self.table = spec.table
        # The MIN / MAX bound of the aggregation above (sluice.exec.minmax_bounds): a task whose
        # row groups it rules out is read only as far as its group keys.
        self.bound = bound
        self.host_pool = host_pool  # the host budget (pinned staging on a GPU counts there)
        # Runtime filters joins publish while this scan runs (sluice.exec.runtime_filter):
        # a slice whose row groups' statistics miss a filter's key range is not read (any
        # mode); in pushdown mode the I/O thread also drops the rows they rule out. (On the
        # consumer that would repeat the join's own probe: measured slower on CPU.)
        self.runtime = runtime if runtime is not None else []
        # The pushed filter over the file's column names and the runtime filters: applied by
        # the mode of each slice (sluice.io.parquet.scan_modes), so every mode yields the same rows.
        self.filter = SliceFilter(spec.predicate, list(spec.pred_columns), self.runtime, device,
                                  config.on("selective_filters"))
        self.policy = policy  # an adaptive scan's ScanPolicy (sluice.adapt.scan_policy)
        self.mode = spec.mode
        self._last_consumed: float | None = None
        self.columns = list(spec.columns)
        self.cfg = config
        self.pool = pool
        self.in_flight = 0  # loads submitted ahead and not finished (decode_in_task asks)
        self._flight = threading.Lock()
        self.cache = cache
        self.device = device
        self.rec = recorder
        self.stats = stats or ScanStats(table.name)
        self.progress = progress
        self.buffer_bytes = config.read_ahead_bytes if buffer_bytes is None else buffer_bytes
        self.reservation = reservation  # the queue's bytes in the memory pool, freed when done
        self.tasks = [list(t) for t in reads.tasks]
        self.task_rows = list(reads.task_rows)
        self.estimates = list(reads.estimates)
        self.pending: deque[tuple[Future, int, int, str]] = deque()
        self.ahead = max(3, config.io_threads + POLICY_AHEAD)  # adaptive: slices in flight at most
        self.next_task = 0
        self.buffered = 0
        self.started = False
        self._since_trim = 0
        self._applied: dict[int, set] = {}  # slice -> ids of the runtime filters its load applied
        dctx = DecodeContext(table, device, config, cache, self.stats, self._record, host_pool, decode_pool,
                             busy=lambda: self.in_flight >= config.io_threads)
        decoder = make_decoder(spec.decoder, dctx)
        if column_cache is not None:  # the connection's decoded columns, served before decoding
            decoder = CachedDecoder(decoder, column_cache, dctx)
        self.io = SliceIO(table, self.columns, decoder, device, config, cache, self._record, self.filter)

    def _record(self, stage, t0, t1, nbytes=0):
        if self.rec is not None:
            self.rec.add(stage, t0, t1, nbytes, self.table.name)

    def load(self, i: int, mode: str = "direct") -> Loaded:
        """Read + decode (+ h2d) task ``i`` in ``mode`` (:mod:`sluice.io.parquet.scan_modes`;
        ``skip``: a runtime filter's range rules out every row group of the slice)."""
        if mode == "skip":
            return nothing()
        if self.reservation is not None and self.reservation.pool.under_pressure():
            release_thread_cache()
        task = self.tasks[i]
        if self.runtime:
            task = [rg for rg in task if not self.filter.excluded(rg)]
            if not task:
                return nothing()
        md = self.io.footer(task[0].path)
        n = sum(rg.num_rows for rg in task)
        if self.bound is not None:
            nread = self.io.bound_rules_out(self.bound, task, md, n)
            if nread is not None:
                return nothing(nread)
        strategy = MODES[mode]
        if strategy.applies_filters:  # the filters this slice applies (active now: at least these)
            self._applied[i] = {id(rf) for rf in self.runtime if rf.active}
        return strategy.load(self.io, task, md, n)

    def _load_ahead(self, i: int, mode: str):
        try:
            return self.load(i, mode)
        finally:
            with self._flight:
                self.in_flight -= 1

    # ------------------------------------------------------------------ pipeline

    def start(self) -> None:
        """Begin reading ahead (called for every scan at query start with reader combining)."""
        self.started = True
        if self.cfg.on("prefetch"):
            self._fill()

    def _fill(self) -> None:
        budget = self.buffer_bytes
        while self.next_task < len(self.tasks):
            est = self.estimates[self.next_task]
            if self.pending and self.buffered + est > budget:
                break  # the queue is full: producers wait for the consumer
            if self.policy is not None and len(self.pending) >= self.ahead:
                break  # adaptive: modes are chosen a few slices ahead of what they measure
            i = self.next_task
            mode = self._mode_of(i)
            with self._flight:
                self.in_flight += 1
            self.pending.append((self.pool.submit(self._load_ahead, i, mode), i, est, mode))
            self.buffered += est
            self.next_task += 1
            self.stats.peak_buffered = max(self.stats.peak_buffered, self.buffered)
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, len(self.pending))

    def _mode_of(self, i: int) -> str:
        mode = self._choose_mode(i)
        if self.rec is not None and self.policy is not None and mode != self._last_mode:
            now = time.perf_counter()
            self.rec.add("mode", now, now, 0, f"{self.table.name}: {mode} from slice {i}")
        self._last_mode = mode
        return mode

    _last_mode: str | None = None
    _filters_ready = 0

    def _choose_mode(self, i: int) -> str:
        if self.policy is not None and self.runtime:
            ready = sum(rf.ready for rf in self.runtime)
            if ready > self._filters_ready:  # the modes' rates change: measure them again
                self._filters_ready = ready
                self.policy.invalidate(i)
                if any(rf.active and rf.bits is not None for rf in self.runtime):
                    # until it samples (another scan may hold the turn): a mode that applies it
                    self.policy.prefer("pushdown")
            if "direct" in self.policy.modes and any(
                    rf.active and rf.bits is not None and rf.rows_in >= DROP_DIRECT_AFTER
                    and rf.rows_removed >= rf.rows_in // 2 for rf in self.runtime):
                self.policy.drop_mode("direct", i)  # it would ship the rows the filter removes
        for rf in self.runtime:
            if rf.ready and all(rf.excludes_range(*rg.stats.get(rf.column, (None, None))) for rg in self.tasks[i]):
                rf.groups_skipped += len(self.tasks[i])
                rf.bytes_skipped += sum(rg.nbytes for rg in self.tasks[i])
                return "skip"
        return self.policy.assign(i) if self.policy is not None else self.mode

    def _prepare(self, i: int, loaded, seq: int, mode: str) -> Chunk | None:
        """Task ``i`` as loaded -> its chunk of surviving rows (None: nothing decoded), with
        the direct mode's filter and the runtime filters that came too late for its load
        applied; counted in the scan's statistics."""
        cols, event, nread, n, filtered = loaded
        wait_for(event, cols)
        rows_in = self.task_rows[i]
        st = self.stats.modes.setdefault(mode, ModeStats())
        st.slices += 1
        st.rows_in += rows_in
        self.stats.bytes_read += nread
        self.stats.rows += rows_in
        if self.progress is not None:
            self.progress(nread)
        if cols is None:
            return None
        self.stats.bytes_decoded += columns_nbytes(cols)
        self._since_trim += self.estimates[i]
        if self._since_trim >= SCAN_TRIM_BYTES and (self.host_pool is None or self.host_pool.resident_near_limit()):
            # Decoded tasks come and go faster than glibc hands memory back: without this the
            # resident set of a long scan grows ~40% above what it holds (SF 10 lineitem).
            # Only with the resident set near the budget: far below it the page faults
            # after a trim cost more than the memory is worth (TPC-H SF 1, 2 threads: Q18
            # 312 -> 190 ms, Q01 255 -> 200 ms without the trims).
            self._since_trim = 0
            release_to_os()
        whole = Chunk(cols, n, seq, self.device)
        applied = self._applied.pop(i, ())
        late = [rf for rf in self.filter.probing(self.tasks[i]) if rf.active and id(rf) not in applied
                and rf.column in whole.columns]
        if not filtered and self.filter.predicate is not None:  # direct: the consumer filters
            keep = self.filter.survivors(whole.columns, n, late)  # (with the late filters below)
            late = []
            if keep is not None:
                whole = whole.take(keep)
            n = whole.num_rows
        if late and n:
            # read before its filter was ready (or by direct): filtered now rather than
            # aggregated below the join (TPC-H q17 at SF 10: 7 M rows of early slices made
            # 1.9 M groups the join then dropped) or probed by it (SSB q3.4 at SF 10: the
            # three slices read while the dimensions were built, 2.7 M rows, went through a
            # binary search per row in the join where the bitmap kept 0.8 %)
            keep = self.filter.runtime_keep(whole.columns, n, late)
            if keep is not None:
                whole = whole.take(keep)
                n = whole.num_rows
        st.rows_out += n
        return whole

    def _consumed(self, slices: list[tuple[int, str]], t_begin: float) -> None:
        """``slices`` ((task, mode) pairs) reached the consumer and it asked for more: their
        end-to-end cost -- wall time since the previous slice was consumed (their decode ran
        meanwhile, in parallel with it), so contention between the threads counts too --
        shared among them by their input rows, for the statistics and the policy."""
        now = time.perf_counter()
        cost = now - (self._last_consumed if self._last_consumed is not None else t_begin)
        self._last_consumed = now
        rows = [self.task_rows[i] for i, _ in slices]
        total = sum(rows)
        for (i, mode), r in zip(slices, rows):
            share = cost * r / total if total else cost / len(slices)
            self.stats.modes[mode].seconds += share
            if self.policy is not None:
                self.policy.observe(i, mode, r, share)

    def _chunks_of(self, i: int, loaded, seq: int, mode: str = "direct") -> Iterator[Chunk]:
        t_begin = time.perf_counter()
        yield from _sliced(self._prepare(i, loaded, seq, mode), self.cfg.chunk_rows)
        self._consumed([(i, mode)], t_begin)

    def _next_loaded(self, release: bool = True) -> tuple[int, object, str]:
        """The oldest pending task, waited for (the wait is counted), and the read-ahead
        refilled behind it; with ``release`` false its bytes stay counted in the scan's buffer
        (the caller releases them)."""
        fut, i, est, mode = self.pending.popleft()
        t0 = time.perf_counter()
        loaded = fut.result()
        t1 = time.perf_counter()
        self.stats.wait_s += t1 - t0
        if t1 - t0 > 1e-4:
            self._record("wait", t0, t1)
        if release:
            self.buffered -= est
        self._fill()  # (held bytes still count: this refills what the policy's slice count allows)
        return i, loaded, mode

    def _coalesced(self, target: int) -> Iterator[Chunk]:
        """The next task's chunk merged with the tasks after it that are loaded already, up to
        ``target`` rows and half the scan's buffer (``coalesce_rows``)."""
        t_begin = time.perf_counter()
        i, loaded, mode = self._next_loaded()
        slices = [(i, mode)]
        merging = _mergeable(loaded[0], loaded[3])
        first = self._prepare(i, loaded, i, mode)
        parts = [] if first is None or not first.num_rows else [first]
        rows = 0 if first is None else first.num_rows
        nbytes = self.estimates[i]
        held = 0  # the merged tasks' bytes: counted in the buffer until the consumer is done
        more = None
        if merging and WAIT_TO_COALESCE:
            wait([fut for fut, *_ in self.pending])
        while (merging and self.pending and _merge_next(self.pending, mode)
               and rows + self.task_rows[self.pending[0][1]] <= target
               and nbytes + self.pending[0][2] <= self.buffer_bytes // 2):
            nbytes += self.pending[0][2]
            held += self.pending[0][2]
            j, loaded, _ = self._next_loaded(release=False)
            slices.append((j, mode))
            more = self._prepare(j, loaded, j, mode)
            if more is not None and more.num_rows:
                parts.append(more)
                rows += more.num_rows
        self.stats.merged += len(slices) - 1
        whole = concat_chunks(parts, unify=False) if len(parts) > 1 else parts[0] if parts else None
        del parts, first, loaded, more  # the pieces merged: not held beside the merged chunk while it is used
        # a merged chunk goes whole (it is within the target); a task alone as without merging
        yield from _sliced(whole, target if len(slices) > 1 else self.cfg.chunk_rows)
        self.buffered -= held
        self._fill()
        self._consumed(slices, t_begin)

    def __iter__(self) -> Iterator[Chunk]:
        if not self.started:
            self.start()
        if self.cfg.pipeline == "blocking" or not self.cfg.on("prefetch"):
            try:
                if self.cfg.pipeline == "blocking":
                    yield from self._blocking()
                else:
                    for i in range(len(self.tasks)):
                        mode = self._mode_of(i)
                        yield from self._chunks_of(i, self.load(i, mode), i, mode)
            finally:
                if self.policy is not None:
                    self.policy.close()
            return
        target = self.cfg.coalesce_target(self.device.type)
        try:
            while self.pending or self.next_task < len(self.tasks):
                if not self.pending:
                    self._fill()
                if target:
                    yield from self._coalesced(target)
                    continue
                i, loaded, mode = self._next_loaded()
                yield from self._chunks_of(i, loaded, i, mode)
        finally:
            for fut, *_ in self.pending:
                fut.cancel()
            if self.reservation is not None:
                self.reservation.free()
            if self.policy is not None:
                self.policy.close()

    def _blocking(self) -> Iterator[Chunk]:
        """Read the whole table (in this thread), then compute: the papers' baseline."""
        modes = [self._mode_of(i) for i in range(len(self.tasks))]
        loaded = [self.load(i, m) for i, m in enumerate(modes)]
        self.stats.peak_buffered = sum(columns_nbytes(x[0]) for x in loaded if x[0] is not None)
        for i, x in enumerate(loaded):
            yield from self._chunks_of(i, x, i, modes[i])
