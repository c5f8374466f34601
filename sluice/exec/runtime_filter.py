"""Runtime filters: a join's build side, once read, tells the probe side's scan which key
values can match -- the key range and a Bloom filter -- so the scan skips row groups whose
statistics fall outside the range (in every mode) and, in pushdown mode, drops the rows the
range and the Bloom filter rule out on the I/O threads, before they are shipped or reach the
join. (Applying them on the consumer would repeat the join's own probe: measured slower.)

Which joins get one and which scan it reaches is decided when the plan is lowered
(:mod:`sluice.physical.filter_placement`: only where it cannot change an answer). NULL keys
never match, so dropping them is right too.

The Bloom filter: ``m`` bits (a power of two, about 16 per distinct build key, at most 2**24),
two probes per key from one multiplicative hash -- under 1 % false positives, built and probed
with tensor ops. A probe scan applies its filters one after another to the survivors, the most
selective so far first.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from sluice.chunk import Column, computable
from sluice.kernels.keys import GOLDEN, bit_set, packed_bits
from sluice.metrics import fmt_bytes
from sluice.ranks import liveness
import numpy as np

_MAX_BITS = 1 << 24
_COUNTS = threading.Lock()
#: A build side whose keys span at most this many values (and no more than EXACT_PER_KEY per key)
#: gets an exact bitmap over [lo, hi] instead of a Bloom filter: one subtraction and one gather a
#: probe instead of a hash and two, and no false positives. TPC-H SF 1 Q17 (204 part keys over
#: 197 K values) probed by 12 M lineitem rows: 75 ms of Bloom probes a query; 1 M orderkeys
#: against 150 K keys over 6 M values: 19.6 -> 7.9 ms on one thread.
EXACT_MAX_SPAN = 1 << 24
EXACT_PER_KEY = 256
#: ... and whatever the keys, up to this span (a 4 MiB bitmap): Q17's 204 keys over 197 K values
#: went to a Bloom filter under the per-key rule alone, 13.2 ms per million probes against 0.8
#: (one thread), 40 % of the query's samples.
EXACT_MIN_SPAN = 1 << 22
#: ... up to this span as packed bits (8 values a byte: a shift and a mask more a probe), still
#: faster than a Bloom filter and exact: TPC-H SF 10 orderkeys (573 K keys over 60 M values,
#: 7.5 MiB) probed by 1 M rows: 13.8 ms with the Bloom filter, 7.6 ms.
EXACT_MAX_SPAN_PACKED = 1 << 27
#: Tests: the GPU's deferred build statistics (``RuntimeFilter._defer``) on the host too.
DEFER_ON_CPU = False
#: On a GPU, build keys stay on the device until this many bytes have come, then cross to pinned
#: host memory in one copy: a pinned buffer per build chunk (allocated fresh, since each is held
#: to the end of the build) costs a cudaHostAlloc each, which can wait for the device (TPC-H q10
#: at SF 10 on an H200: 0.86 s under cProfile in the per-chunk copies).
DEFER_FLUSH_BYTES = 64 << 20


def _keys64(col: Column) -> tuple[torch.Tensor, torch.Tensor | None]:
    col = computable(col)
    return col.data.to(torch.int64).reshape(-1), None if col.valid is None else col.valid.reshape(-1)


def _to_host_async(t: torch.Tensor) -> torch.Tensor:
    """A host copy of ``t``: from a GPU into pinned memory without waiting (valid once the
    stream has reached it); a host tensor is cloned (the deferred path forced on the CPU)."""
    if t.device.type == "cpu":
        return t.clone()
    out = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    out.copy_(t, non_blocking=True)
    return out


def _slots(v: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two Bloom slots per key by multiplicative (Fibonacci) hashing: one multiply and two
    shifts. It replaced a splitmix64 finaliser, which took 2-3.5x as long to probe 30 M keys
    with no fewer false positives on integer keys (sequential or sampled: 0.1-0.8 %)."""
    h = v * GOLDEN
    # On the host the mask as a 0-d tensor: ``int64 & python_int`` takes 0.67 ms per million
    # on one thread, against a 0-d tensor's 0.14 (on a GPU a Python int: no copy to wait for).
    mask = torch.tensor(bits - 1, dtype=torch.int64) if v.device.type == "cpu" else bits - 1
    return (h >> 40).bitwise_and_(mask), (h >> 20).bitwise_and_(mask)


@dataclass(frozen=True, eq=False)
class RuntimeFilterSpec:
    """What lowering decides: a filter from one join key, or a top-k's bound (``join`` names
    it), for one scan column, with or without a Bloom filter. The join (or sort) and the scan
    hold the same spec; each run has its own :class:`RuntimeFilter` for it
    (``ExecContext.runtime_filter``), so a plan runs again -- a recursive CTE's step, a second
    query -- from an empty filter."""

    join: str
    column: str  # the scan's file column
    bloom: bool = True
    topk: bool = False  # a top-k's bound (it narrows as the top-k fills: never idle)
    #: the scan's rows reach the join through an aggregation: rows read before the filter was
    #: ready are filtered when the scan hands them over (else the aggregate takes them all in)
    deep: bool = False


@dataclass(frozen=True, eq=False)
class FilterSlot:
    """A runtime filter an operator fills (its ``publishes``): a join's or an exchange's from
    the values of ``key`` (a build-key expression) as its build rows pass, a top-k's (``key``
    None) from its k-th row. Scans hold the specs they apply (``ScanOp.runtime_filters``)."""

    spec: RuntimeFilterSpec
    key: object = None  # an Expr evaluated over the build side's chunks; None: a top-k's bound


@dataclass
class RuntimeFilter:
    """One run's filter for a spec: built from the join key's build-side values; applied to the
    scan column."""

    join: str
    column: str                   # the scan's file column
    lo: int | None = None
    hi: int | None = None
    bits: torch.Tensor | None = None
    exact: bool = False           # ``bits`` is a bitmap over [lo, hi], not a Bloom filter
    _full: bool | None = None     # every key of [lo, hi] in the bitmap (None: not yet known)
    _moved: torch.Tensor | None = None  # ``bits`` on the probing device (a GPU), copied once
    keys: int = 0
    bloom: bool = True            # build a Bloom filter (only pushdown uses it: else range only)
    topk: bool = False            # a top-k's bound: it narrows as the top-k fills, so it never goes idle
    deep: bool = False            # reaches its join through an aggregation (RuntimeFilterSpec.deep)
    ready: bool = False
    rows_in: int = 0
    rows_removed: int = 0
    idle: bool = False            # measured to remove almost nothing: no longer applied
    groups_skipped: int = 0
    bytes_skipped: int = 0
    _chunks: list = field(default_factory=list)
    _pending: list = field(default_factory=list)  # on a GPU: (lo, hi, count) device scalars per chunk
    _device_keys: list = field(default_factory=list)  # ... keys (with validity) not yet copied to the host
    _device_bytes: int = 0
    _host_keys: list = field(default_factory=list)  # ... keys and validity copied to pinned memory

    # ---------------------------------------------------------------- build

    def add(self, col: Column, n: int) -> None:
        """Take one build chunk's key values (NULLs never match: left out). On a GPU nothing is
        read back here: each chunk's low, high and count stay device scalars (its keys go to
        pinned host memory without a wait) until :meth:`publish` reads them all at once -- a
        wait per build chunk for its min and max, and a copy of its keys, held the host back
        (TPC-H q10 at SF 10 on an H200: 0.54 s in ``max``)."""
        v, valid = _keys64(col.expand(n) if col.is_const else col)
        if v.device.type != "cpu" or DEFER_ON_CPU:
            self._defer(v, valid)
            return
        if valid is not None:
            v = v[valid]
        if v.numel() == 0:
            return
        lo, hi = int(v.min()), int(v.max())
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        if self.bloom:
            self._chunks.append(v.cpu())
        self.keys += int(v.numel())

    def _defer(self, v: torch.Tensor, valid: torch.Tensor | None) -> None:
        if v.numel() == 0:
            return
        i64 = torch.iinfo(torch.int64)
        if valid is None:
            lo, hi = torch.aminmax(v)
            count = torch.full((), v.numel(), dtype=torch.int64, device=v.device)
        else:  # NULL keys count as neither end
            lo = torch.where(valid, v, i64.max).min()
            hi = torch.where(valid, v, i64.min).max()
            count = valid.sum()
        self._pending.append((lo, hi, count))
        if self.bloom:  # the keys, batched on the device, then copied to the host without a wait
            # (copies: the build's own tensors may change in place once handed on)
            self._device_keys.append((v.clone(), None if valid is None else valid.clone()))
            self._device_bytes += v.numel() * v.element_size() + (0 if valid is None else valid.numel())
            if self._device_bytes >= DEFER_FLUSH_BYTES:
                self._flush()

    def _flush(self) -> None:
        """The batched device keys to pinned host memory, in one copy (as the stream reaches
        them: valid once :meth:`_settle` has read back)."""
        if not self._device_keys:
            return
        vs = [v for v, _ in self._device_keys]
        v = torch.cat(vs) if len(vs) > 1 else vs[0]
        valid = None
        if any(m is not None for _, m in self._device_keys):
            valid = torch.cat([m if m is not None else torch.ones(x.numel(), dtype=torch.bool, device=x.device)
                               for x, m in self._device_keys])
        self._host_keys.append((_to_host_async(v), None if valid is None else _to_host_async(valid)))
        self._device_keys, self._device_bytes = [], 0

    def _settle(self) -> None:
        """Fold the deferred chunks into lo, hi, keys and the host key chunks: one read-back
        (which also waits for the keys' copies queued before it)."""
        self._flush()
        if self._pending:
            stats = torch.stack([torch.stack(x) for x in self._pending]).cpu()
            for lo, hi, count in stats.tolist():
                if not count:
                    continue
                self.lo = lo if self.lo is None else min(self.lo, lo)
                self.hi = hi if self.hi is None else max(self.hi, hi)
                self.keys += count
        for v, valid in self._host_keys:
            v = v if valid is None else v[valid]
            if v.numel():
                self._chunks.append(v)
        self._pending, self._host_keys = [], []

    def publish(self) -> None:
        """The build side is complete: make the Bloom filter, then let scans use it."""
        self._settle()
        if self._chunks and self.keys:
            self.bits = self._table(self.keys)
        self._chunks = []
        self.ready = True

    def _bits_on(self, device: torch.device) -> torch.Tensor:
        """The bits on ``device``, copied there once (an exact bitmap is up to 4 MiB: it was
        copied to the GPU for every probed chunk)."""
        if self.bits.device == device:
            return self.bits
        moved = self._moved
        if moved is None or moved.device != device:
            moved = self._moved = self.bits.to(device)
        return moved

    def covers(self, lo, hi) -> bool:
        """Whether every key in [lo, hi] (a row group's statistics) is a build key: the filter
        can then remove none of its non-NULL rows (a dimension joined whole: TPC-DS q99's
        ship modes, warehouses and call centers cost 12 ns a row of probes that removed
        nothing but NULLs, which the join drops anyway)."""
        if not (self.ready and self.exact and self.lo is not None and lo is not None and hi is not None):
            return False
        try:
            if not (self.lo <= lo and hi <= self.hi):
                return False
        except TypeError:
            return False
        full = self._full
        if full is None:  # (fewer build keys than values in [lo, hi]: not full, without a pass)
            b = self.bits
            full = self._full = bool(b is not None and b.dtype == torch.bool and 2 < b.numel() <= self.keys + 2
                                     and bool(b[1:-1].all()))
        return full

    def _exact_span(self, keys: int) -> int | None:
        """The bitmap's size when the keys' range is small enough for one, else None (the same
        on every rank once lo, hi and keys are merged)."""
        if self.lo is None:
            return None
        span = self.hi - self.lo + 1
        return span if span <= min(EXACT_MAX_SPAN_PACKED, max(EXACT_PER_KEY * keys, EXACT_MIN_SPAN)) else None

    def _table(self, keys: int) -> torch.Tensor:
        """The Bloom bits of this rank's keys, sized for ``keys`` keys in all -- or the exact
        bitmap over [lo, hi] where the range allows."""
        span = self._exact_span(keys)
        self.exact = span is not None
        if span is not None and span <= EXACT_MAX_SPAN:
            # Padded: slot 0 stands for every key below lo, slot span + 1 for every key above
            # hi (both False), so a probe is a clamp and a gather, no range compares (mask).
            table = torch.zeros(span + 2, dtype=torch.bool)
            for v in self._chunks:
                table[(v - self.lo) + 1] = True  # (lo - 1 itself may not fit int64)
            return table
        if span is not None:  # packed, little-endian bit order (bit i of byte j: value 8j + i)
            if not self._chunks:  # a rank without build keys of its own: zeros, OR-ed with the others'
                return torch.zeros((span + 7) // 8, dtype=torch.uint8)
            return packed_bits(torch.unique(torch.cat(self._chunks) - self.lo), span)
        bits = 1
        while bits < 16 * keys and bits < _MAX_BITS:
            bits <<= 1
        table = torch.zeros(bits, dtype=torch.bool)
        for v in self._chunks:
            a, b = _slots(v, bits)
            table[a] = True
            table[b] = True
        return table

    def narrow(self, lo: int | None = None, hi: int | None = None) -> None:
        """A top-k's bound (ORDER BY key LIMIT k): once k rows are known, no row whose key is
        beyond the k-th one's can make the result. The range only narrows; it applies from here
        on (row groups not yet read are skipped by their statistics, in pushdown mode rows are
        dropped on the I/O threads)."""
        i64 = torch.iinfo(torch.int64)
        if lo is not None and (self.lo is None or lo > self.lo or not self.ready):
            self.lo = lo
        if hi is not None and (self.hi is None or hi < self.hi or not self.ready):
            self.hi = hi
        if self.lo is None:
            self.lo = i64.min
        if self.hi is None:
            self.hi = i64.max
        self.ready = True

    def publish_across(self, group) -> None:
        """A build side spread over ranks (each saw a part): merge every rank's range (min of
        the lows, max of the highs) and Bloom bits (OR), sized by the keys of all ranks, then
        publish the same filter on every rank. Collectives: every rank calls this in the same
        order (the exchange stage that feeds it)."""
        with liveness.waiting():
            self._merge_across(group)

    def _merge_across(self, group) -> None:
        self._settle()
        i64 = torch.iinfo(torch.int64)
        lo = torch.tensor([self.lo if self.lo is not None else i64.max], dtype=torch.int64)
        hi = torch.tensor([self.hi if self.hi is not None else i64.min], dtype=torch.int64)
        keys = torch.tensor([self.keys], dtype=torch.int64)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=group)
        dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=group)
        dist.all_reduce(keys, op=dist.ReduceOp.SUM, group=group)
        self.keys = int(keys)
        self.lo, self.hi = (int(lo), int(hi)) if self.keys else (None, None)
        if self.bloom and self.keys:
            table = self._table(self.keys)
            if table.dtype == torch.uint8:  # an exact bitmap's packed bits
                dist.all_reduce(table, op=dist.ReduceOp.BOR, group=group)
                self.bits = table
            else:
                packed = torch.from_numpy(np.packbits(table.numpy()))
                dist.all_reduce(packed, op=dist.ReduceOp.BOR, group=group)
                self.bits = torch.from_numpy(np.unpackbits(packed.numpy())[:table.numel()].astype(bool))
        self._chunks = []
        self.ready = True

    # ---------------------------------------------------------------- probe

    def excludes_range(self, lo, hi) -> bool:
        """Whether row-group statistics [lo, hi] hold no key this filter passes."""
        if not self.ready or lo is None or hi is None:
            return False
        if self.lo is None:  # no build keys at all: nothing can match
            return True
        try:
            return hi < self.lo or lo > self.hi
        except TypeError:
            return False

    #: After this many probed rows, a filter that removed less than IDLE_SHARE of them stops
    #: being applied to rows (every probe row was going to match anyway); ranges still prune.
    IDLE_AFTER = 1 << 18
    IDLE_SHARE = 0.02

    @property
    def active(self) -> bool:
        return self.ready and not self.idle

    def mask(self, col: Column, n: int) -> torch.Tensor:
        """Rows of ``col`` whose key may match (False for NULL keys). The caller counts what
        it kept (:meth:`count`)."""
        if self.lo is not None and self.exact and self.bits is not None and self.bits.dtype == torch.bool:
            c = col.expand(n) if col.is_const else col
            bits = self._bits_on(c.data.device)
            # The padded bitmap: keys clamped to [lo - 1, hi + 1], in the column's own integer
            # type where those bounds fit it (no int64 copy; the clamped offset cannot wrap).
            v = c.data.reshape(-1)
            if v.dtype in (torch.int32, torch.int64) and \
                    torch.iinfo(v.dtype).min <= self.lo - 1 and self.hi + 1 <= torch.iinfo(v.dtype).max:
                x = v.clamp(self.lo - 1, self.hi + 1).sub_(self.lo - 1)
            else:  # other types, or lo - 1 / hi + 1 beyond int64 (keys at its very ends)
                v = v.to(torch.int64)
                inside = (v >= self.lo) & (v <= self.hi)
                x = torch.where(inside, v - self.lo + 1, 0)  # (a wrapped difference is never picked)
            keep = bits.index_select(0, x)
            return keep if c.valid is None else keep.logical_and_(c.valid.reshape(-1))
        v, valid = _keys64(col.expand(n) if col.is_const else col)
        if self.lo is None:
            keep = torch.zeros(n, dtype=torch.bool, device=v.device)
        else:
            keep = (v >= self.lo) & (v <= self.hi)
            if self.bits is not None and self.exact:  # packed bits over [lo, hi]
                bits = self._bits_on(v.device)
                # a key outside [lo, hi] reads slot 0 and is dropped by ``keep`` anyway
                x = (v - self.lo).clamp_(0, self.hi - self.lo)
                byte = bits.index_select(0, x >> 3)
                keep &= bit_set(byte, x)
            elif self.bits is not None:
                bits = self._bits_on(v.device)
                a, b = _slots(v, bits.numel())
                # index_select, not bits[a]: 0.24 against 0.38 ms per 113,000 probes (2 threads)
                keep &= bits.index_select(0, a).logical_and_(bits.index_select(0, b))
        if valid is not None:
            keep &= valid
        return keep

    def count(self, n: int, kept: int) -> None:
        """``n`` rows probed, ``kept`` of them passed; a filter that removes almost nothing
        goes idle."""
        with _COUNTS:  # I/O threads and the consumer (a deep filter's late rows) count together
            self.rows_in += n
            self.rows_removed += n - kept
        if not self.topk and self.rows_in >= self.IDLE_AFTER and self.rows_removed < self.IDLE_SHARE * self.rows_in:
            self.idle = True

    def describe(self) -> str:
        if not self.ready:
            return f"runtime filter from {self.join} on {self.column}: not ready before the scan ended"
        i64 = torch.iinfo(torch.int64)
        rng = "no keys" if self.lo is None else f"[{self.lo}, {self.hi}]"
        if self.topk and self.lo is not None:
            rng = f">= {self.lo}" if self.hi == i64.max else f"<= {self.hi}"
        size = self.bits.numel() * (8 if self.bits is not None and self.bits.dtype == torch.uint8 else 1) \
            if self.bits is not None else 0
        bloom = "" if self.bits is None else (f", exact bitmap {size // 8 // 1024} KiB" if self.exact
                                             else f", Bloom {self.bits.numel() // 8 // 1024} KiB")
        idle = " (then stopped: it removed too little)" if self.idle else ""
        return (f"runtime filter from {self.join} on {self.column} {rng}{bloom}: removed "
                f"{self.rows_removed:,} of {self.rows_in:,} rows{idle}, skipped {self.groups_skipped} row groups "
                f"({fmt_bytes(self.bytes_skipped)})")
