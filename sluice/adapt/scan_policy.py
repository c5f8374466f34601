"""Which data-movement mode a scan uses for its next slice (A-Scan, Algorithm 1).

The three modes (:mod:`sluice.io.parquet.scan_modes`) give the same rows; which is fastest
depends on selectivity, column widths, where the bottleneck sits and what else runs, and it
changes within one query. So the policy measures instead of modelling:

- **sample**: a short burst of slices (in scan order, no work duplicated) goes to each mode
  in turn, mode at a time -- modes share the interconnect and the cores, so routing slices to
  several at once would measure their interference, not them;
- **exploit**: every later slice goes to the best measured mode, whose rate keeps being
  measured;
- **re-sample** when the rate over the last few slices falls more than ``drift`` below the
  smoothed estimate -- which moves slowly (``alpha`` 0.05, some 20 slices) so that the
  window leads it: at 0.2 it followed a threefold fall as fast as the window did and the fall
  went unseen -- (a phase change: a sorted column leaving its selective range, another
  query taking the disk) *and* no longer clearly beats what the other modes were measured at
  (within ``headroom`` of the best of them): a mode three times faster than the others that
  dips by a fifth is still the best, and sampling the others again costs slices at a third of
  its rate (SSB Q2.1 at SF 10, pushdown with runtime filters: re-sampled every 28 slices,
  auto 1.4x pushdown's time). The first window after a decision is held to twice the drift
  (the round measured each mode on two slices only) and otherwise becomes the estimate. With **hysteresis**: after re-sampling the mode changes only if
  the best beats the current one by ``margin``.

A slice's rate is end to end: its input rows over the wall time from the consumption of the
slice before it to its own consumption by the parent operators (which includes what they did
with its chunks), so decode, transfer, filtering and downstream back-pressure all count, and
so does contention between threads. The first ``warm`` slices of each burst only fill the
pipeline with the mode (the reader keeps few slices in flight) and are not counted. Scans of one query stagger their sampling through a shared :class:`Coordinator`
(one samples at a time; the others keep their mode).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

MODES = ("direct", "pushdown", "staging")


@dataclass
class Switch:
    """One decision, for ``--analyze`` and the timeline."""

    slice: int
    mode: str
    reason: str  # sample | exploit | drift | keep | filter (a runtime filter became ready) | drop
    rates: dict[str, float] = field(default_factory=dict)


class Coordinator:
    """Lets one scan of a query sample at a time (staggered sampling)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: object | None = None

    def acquire(self, who: object) -> bool:
        with self._lock:
            if self._owner is None or self._owner is who:
                self._owner = who
                return True
            return False

    def release(self, who: object) -> None:
        with self._lock:
            if self._owner is who:
                self._owner = None


class ScanPolicy:
    """Assigns a mode to each slice of one scan and learns from their measured rates."""

    def __init__(self, modes: tuple[str, ...] = MODES, *, burst: int = 4, warm: int = 2, alpha: float = 0.05,
                 window: int = 8, drift: float = 0.15, margin: float = 0.05, headroom: float = 0.25,
                 coordinator: Coordinator | None = None) -> None:
        self.modes = tuple(modes)
        self.burst = max(2, burst)
        self.warm = min(max(1, warm), self.burst - 1)
        self.alpha = alpha
        self.window = window
        self.drift = drift
        self.headroom = headroom
        self.margin = margin
        self.coordinator = coordinator
        self.estimate: dict[str, float] = {}        # smoothed rows/s per mode
        self._cost: dict[str, float] = {}           # ... kept as smoothed seconds per row
        self.current = self.modes[0]
        self.switches: list[Switch] = []
        self._plan: deque[str] = deque()           # modes of the slices still to assign in this sample
        self._sampling = False
        self._sample_rates: dict[str, list[tuple[int, float]]] = {}  # (rows, seconds) per sampled slice
        self._awaiting: dict[int, str] = {}        # sample slices assigned, not yet measured
        self._recent: deque[tuple[int, float]] = deque(maxlen=window)  # (rows, seconds)
        self._since_exploit = 0
        self._warm: set[int] = set()               # first slices of each burst: not measured
        if len(self.modes) > 1:
            self._start_sampling(0)

    # ------------------------------------------------------------------ decisions

    def _start_sampling(self, slice_idx: int) -> None:
        if self.coordinator is not None and not self.coordinator.acquire(self):
            return  # another scan is sampling: keep the current mode, try again later
        self._sampling = True
        self._last_sampled = None
        self._sample_rates = {m: [] for m in self.modes}
        # After a drift, a mode last measured at under half the current one's fallen rate is
        # not sampled again: it is far behind still, and its burst would cost the most (SSB
        # Q2.1: direct at 7.6 Mrows/s sampled again beside pushdown at 25 and staging at 18).
        skip = {m for m, r in self.estimate.items()
                if self._drift_rate and m != self.current and r * 2 < self._drift_rate}
        self._drift_rate = 0.0
        order = list(self.modes)
        if self._filters_first and "direct" in order and len(order) > 1:
            # A runtime filter just became ready: the modes that apply it go first, so the
            # slices right after it are filtered even when the scan ends before direct's turn
            # (TPC-DS q72 at SF 1: inventory's 6 slices, the round restarted at slice 3 with
            # direct and no slice ever applied the filters of its 46 K-row join).
            order.remove("direct")
            order.append("direct")
        self._filters_first = False
        self._plan = deque(m for m in order if m not in skip for _ in range(self.burst))
        # The scan's first slices also pay for starting up (threads, footers, the pipeline
        # filling from empty): measured on SF 10 lineitem, the first mode sampled showed 13
        # Mrows/s against 19 over its later slices. The first burst of a scan warms up twice.
        self._first_burst = slice_idx == 0 and not self.estimate
        self._first_mode = self._plan[0] if self._plan else self.modes[0]  # (drop_mode may change modes mid-round)
        if self._first_burst:
            self._plan.extendleft([self._first_mode] * self.warm)

    def assign(self, slice_idx: int) -> str:
        """The mode of slice ``slice_idx`` (slices are assigned in scan order)."""
        if self._plan:
            mode = self._plan.popleft()
            if mode != self._last_sampled:
                self._burst_pos = 0
                self.switches.append(Switch(slice_idx, mode, "sample"))
            if self._burst_pos < self.warm * (2 if self._first_burst and mode == self._first_mode else 1):
                self._warm.add(slice_idx)
            self._burst_pos += 1
            self._last_sampled = mode
            self._awaiting[slice_idx] = mode
            return mode
        if not self._sampling and len(self.modes) > 1 and (self._pending_resample or not self.estimate):
            # a drift asked for new samples, or the first sampling never got the coordinator
            # (another scan was sampling): try now
            self._pending_resample = False
            self._start_sampling(slice_idx)
            if self._plan:
                return self.assign(slice_idx)
        if self._sampling:
            # The round's slices are all out, its last ones not yet measured: the slices in
            # between go to the best mode measured so far, not to the one the round may replace
            # (SSB Q2.1: three more slices of direct at a third of pushdown's rate).
            rates = {m: _rate(r) for m, r in self._sample_rates.items() if r}
            if rates:
                return max(rates, key=rates.get)
        return self.current

    _pending_resample = False
    _drift_rate = 0.0
    _first_burst = False
    _first_mode: str | None = None
    _last_sampled: str | None = None
    _burst_pos = 0

    def observe(self, slice_idx: int, mode: str, rows: int, seconds: float) -> None:
        """Slice ``slice_idx`` (of ``rows`` input rows, in ``mode``) reached the parent
        ``seconds`` after the previous one (end-to-end incremental time)."""
        # Rates are rows over time summed across slices, and smoothing runs over the time per
        # row: a slice that was ready the moment it was asked for (its decode overlapped the
        # slices before it) has a near-zero time, and a mean of per-slice rates would take
        # that for a mode ten times faster (seen: staging "96 Mrows/s" beside 10 for the others
        # on SF 10 lineitem, then a drift and two more rounds of sampling).
        seconds = max(seconds, 1e-9)
        if slice_idx in self._awaiting:
            del self._awaiting[slice_idx]
            if slice_idx not in self._warm and mode in self._sample_rates:  # (a dropped mode: not)
                self._sample_rates[mode].append((rows, seconds))
            self._warm.discard(slice_idx)
            if not self._awaiting and not self._plan and self._sampling:
                self._decide(slice_idx)
            return
        if mode != self.current or self._sampling or rows <= 0:
            return
        prev = self.estimate.get(mode)
        per_row = seconds / rows
        cost = self._cost.get(mode)
        self._cost[mode] = per_row if cost is None else (1 - self.alpha) * cost + self.alpha * per_row
        self.estimate[mode] = 1 / self._cost[mode]
        self._recent.append((rows, seconds))
        self._since_exploit += 1
        if len(self._recent) < self.window or self._since_exploit < self.window or prev is None:
            return
        now = _rate(self._recent)
        fall = self.drift
        if self._since_exploit == self.window:
            # The first full window after a decision: the estimate it is compared with comes
            # from the round's two measured slices, noisier than a window. Only a fall of twice
            # the drift there is a phase change; a smaller one is that noise, and the window
            # becomes the estimate (SSB Q1.2 at SF 10: pushdown sampled at 49 Mrows/s, ran
            # at 42, and a drift re-sampled staging at two thirds of that).
            fall = 2 * self.drift
            if now >= (1 - fall) * prev:
                self._cost[mode] = 1 / max(now, 1e-9)
                self.estimate[mode] = now
                return
        if (now < (1 - fall) * prev
                and now < (1 + self.headroom) * max((r for m, r in self.estimate.items() if m != mode), default=now)):
            self.switches.append(Switch(slice_idx, mode, "drift", dict(self.estimate)))
            self._pending_resample = True
            self._drift_rate = now

    def _decide(self, slice_idx: int) -> None:
        rates = {m: _rate(r) for m, r in self._sample_rates.items() if r}
        self._sampling = False
        if self.coordinator is not None:
            self.coordinator.release(self)
        if not rates:
            return
        for m, r in rates.items():
            self.estimate[m] = r
            self._cost[m] = 1 / r
        best = max(rates, key=rates.get)
        had = bool(self.switches) and any(s.reason in ("exploit", "keep") for s in self.switches)
        if had and best != self.current and self.current in rates and \
                rates[best] < (1 + self.margin) * rates[self.current]:
            self.switches.append(Switch(slice_idx, self.current, "keep", rates))
        else:
            self.current = best
            self.switches.append(Switch(slice_idx, best, "exploit", rates))
        self._recent.clear()
        self._since_exploit = 0

    def invalidate(self, slice_idx: int, reason: str = "filter") -> None:
        """What was measured no longer holds: a runtime filter became ready, so pushdown and
        staging slices now drop the rows it rules out while direct ones still ship them. A scan starts
        reading while its joins' build sides are still being read, so its first sampling ran
        without the filters (SSB Q2.1 at SF 10: auto kept direct, 1.5x pushdown's time). The
        round in progress, if any, is dropped and a new one starts with the next slice."""
        if len(self.modes) < 2:
            return
        self.switches.append(Switch(slice_idx, self.current, reason))
        self._drift_rate = 0.0  # every mode is sampled again
        if self._sampling:
            self._sampling = False
            self._plan.clear()
            self._awaiting.clear()
            self._warm.clear()
            if self.coordinator is not None:
                self.coordinator.release(self)
        self._pending_resample = True
        self._filters_first = reason == "filter"

    _filters_first = False

    def prefer(self, mode: str) -> None:
        """Use ``mode`` until the next round of sampling decides (a Bloom runtime filter became
        ready: direct cannot apply it, and a scan waiting for its turn to sample would go on
        shipping every row)."""
        if mode in self.modes and not self._sampling:
            self.current = mode

    def drop_mode(self, mode: str, slice_idx: int) -> None:
        """``mode`` is no longer a choice for this scan (the last one left stays). The reader
        drops ``direct`` once a Bloom runtime filter is measured to remove most rows: direct
        ships them all, and what the operators between the scan and the filter's join keep for
        them (an aggregate's groups) costs at the end, after the slice rates were measured
        (TPC-H q17 at SF 10: direct ran 32 slices into an aggregate of 2 M groups, 2.2 s, where
        pushdown and staging keep 1.4 % of the rows)."""
        if mode not in self.modes or len(self.modes) < 2:
            return
        self.modes = tuple(m for m in self.modes if m != mode)
        self.estimate.pop(mode, None)
        self._cost.pop(mode, None)
        self._sample_rates.pop(mode, None)
        self._plan = deque(m for m in self._plan if m != mode)
        self.switches.append(Switch(slice_idx, mode, "drop"))
        if self.current == mode:
            self.current = self.modes[0]
            if not self._sampling:
                self._pending_resample = True

    @property
    def sampling(self) -> bool:
        return self._sampling

    def close(self) -> None:
        """The scan ended (or stopped early, under a LIMIT): let another scan sample. A scan
        that ended while sampling used to keep the coordinator, and no other scan of the query
        could ever sample (SSB Q2.1 at SF 10: lineorder stayed in direct mode, 2x slower)."""
        self._sampling = False
        self._plan.clear()
        if self.coordinator is not None:
            self.coordinator.release(self)


def _rate(slices) -> float:
    """Rows per second over ``(rows, seconds)`` slices: their rows over their summed time."""
    return sum(r for r, _ in slices) / max(sum(t for _, t in slices), 1e-9)
