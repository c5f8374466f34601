"""Window functions: one registration each (:func:`window_function`), computed over whole
partitions sorted by (partition, order) keys with whole-tensor kernels (``kernels/window.py``).

:class:`~sluice.exec.window.WindowOp` hands each batch of complete partitions here; a function
reads what it needs from :class:`Rows` -- row indexes, partition and peer segments, its argument,
its frame and the non-NULL count in it -- so nothing is computed that the function does not use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import torch

from sluice.chunk import Chunk, Column, NestedValues, computable, concat_columns, lookup, unify_dictionaries
from sluice.errors import ExecutionError, InternalError, UnsupportedError
from sluice.expr.evaluate import evaluate
from sluice.expr.functions.common import dictionary_rank, to_type
from sluice.kernels import window as K
from sluice.kernels.bits import bits_from_positions
from sluice.kernels.interpolate import interpolate_float, interpolate_real, interpolate_scaled
from sluice.kernels.keys import float_from_order_key, float_order_key, sortable
from sluice.plan.logical import MOMENTS, WindowCall
from sluice.types import FLOAT64, INT64
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


#: Frame bounds a RANGE frame measures from the row's ORDER BY value.
OFFSET_BOUNDS = ("preceding", "following")


class Rows:
    """What a window function computes over: whole partitions of ``data``, sorted by
    (partition, order) -- row indexes, partitions and peer groups as segments, the RANGE key --
    and, per call, its argument and frame, each made when a function first asks."""

    def __init__(self, call: WindowCall, data: Chunk, idx, part: K.Segments, peers: K.Segments, dev, key=None):
        self.call, self.data, self.idx, self.part, self.peers, self.dev, self.key = call, data, idx, part, peers, dev, key
        self.n = data.num_rows
        self.t = call.type
        self.lo = self.hi = None  # a framed function's frame per row (set before it runs)

    @cached_property
    def x(self) -> Column | None:
        """The first argument, evaluated over every row."""
        return computable(evaluate(self.call.args[0], self.data)).expand(self.n) if self.call.args else None

    @cached_property
    def count(self) -> torch.Tensor:
        """Non-NULL values of the argument in each row's frame."""
        valid = self.x.valid
        ones = valid if valid is not None else torch.ones(self.n, dtype=torch.bool, device=self.dev)
        return K.frame_count(ones, self.lo, self.hi)

    @property
    def has(self) -> torch.Tensor:
        return self.count > 0

    def nulls(self) -> torch.Tensor | None:
        """The validity of a frame aggregate: NULL where its frame holds no value."""
        has = self.has
        return None if bool(has.all()) else has


@dataclass(frozen=True)
class WindowFunction:
    """One window function's computation; ``framed``: over each row's frame (lo, hi), which
    an EXCLUDE cuts into pieces (aggregates only: the binder allows no other)."""

    compute: Callable[[Rows], Column]
    framed: bool


#: Every window function by name: its one registration (the binder, ``sql/windows.py``, checks
#: arguments; ``WindowCall.type`` gives the result's type).
WINDOW_FUNCTIONS: dict[str, WindowFunction] = {}


def window_function(*names: str, framed: bool = False):
    """Register the decorated computation for ``names``."""
    def register(fn: Callable[[Rows], Column]):
        for name in names:
            WINDOW_FUNCTIONS[name] = WindowFunction(fn, framed)
        return fn
    return register


def compute(call: WindowCall, data: Chunk, idx, part: K.Segments, peers: K.Segments, dev, key=None) -> Column:
    """``call`` over the rows of ``data`` (whole partitions, sorted)."""
    fn = WINDOW_FUNCTIONS.get(call.func)
    if fn is None:
        raise InternalError(f"window function {call.func} has no computation")
    r = Rows(call, data, idx, part, peers, dev, key)
    if fn.framed:
        kind, start, end = call.frame
        r.lo, r.hi = K.frame(kind, start, end, part, peers, r.n, dev, key)
        if call.exclude:
            return _excluding(call.func, r.x, r.t, K.exclusion_pieces(call.exclude, r.lo, r.hi, idx, peers),
                              part, r.n, dev)
    out = fn.compute(r)
    if call.once:  # (WindowCall.once) NULL but on each partition's first row
        first = part.first == idx
        valid = first if out.valid is None else out.valid.expand(r.n) & first
        out = Column(out.data.expand(r.n) if out.is_const else out.data, out.type, valid, out.dictionary, out.wide)
    return out


# ---------------------------------------------------------------- ranking and distribution


@window_function("row_number")
def _row_number(r: Rows) -> Column:
    return Column(r.idx - r.part.first + 1, r.t)


@window_function("rank")
def _rank(r: Rows) -> Column:
    return Column(r.peers.first - r.part.first + 1, r.t)


@window_function("dense_rank")
def _dense_rank(r: Rows) -> Column:
    return Column(r.peers.ident - r.peers.ident[r.part.first] + 1, r.t)


@window_function("percent_rank")
def _percent_rank(r: Rows) -> Column:
    size = (r.part.last - r.part.first).to(torch.float64)
    rk = (r.peers.first - r.part.first).to(torch.float64)
    return Column(torch.where(size > 0, rk / size.clamp(min=1), torch.zeros_like(rk)), r.t)


@window_function("cume_dist")
def _cume_dist(r: Rows) -> Column:
    size = (r.part.last - r.part.first + 1).to(torch.float64)
    return Column((r.peers.last - r.part.first + 1).to(torch.float64) / size, r.t)


@window_function("ntile")
def _ntile(r: Rows) -> Column:
    return Column(K.ntile(int(r.call.params[0]), r.idx, r.part), r.t)


# ---------------------------------------------------------------- offsets and lists


@window_function("lag", "lead")
def _lag_lead(r: Rows) -> Column:
    call, x, idx, part, n = r.call, r.x, r.idx, r.part, r.n
    k = int(call.params[0])
    lag = call.func == "lag"
    j = idx - k if lag else idx + k
    if call.ignore_nulls and x.valid is not None and k > 0:
        j = _nth_valid(x.valid, k if lag else -k)
    inside = (j >= part.first) & (j <= part.last)
    got = x.take(j.clamp(0, max(n - 1, 0)))
    default = evaluate(call.args[1], r.data).expand(n) if len(call.args) > 1 else None
    return _choose(inside, got, default, r.t, n, r.dev)


@window_function("string_agg")
def _string_agg_call(r: Rows) -> Column:
    return _string_agg(r.x, str(r.call.params[0]), bool(r.call.params[1]), r.part, r.t, r.n)


@window_function("bitstring_agg")
def _bitstring_agg(r: Rows) -> Column:
    """Each partition's BIT of ``hi - lo + 1`` bits with bit ``x - lo`` set per non-NULL x, on
    every row of the partition; NULL for a partition without values. One array of characters
    for all partitions (kernels/bits.py), no loop over them."""
    lo, hi = (int(p) for p in r.call.params)
    x, n = r.x, r.n
    ident = r.part.ident.cpu()
    keep = torch.ones(n, dtype=torch.bool) if x.valid is None else x.valid.expand(n).cpu()
    v = (x.data.expand(n) if x.is_const else x.data).cpu().to(torch.int64)[keep]
    outside = (v < lo) | (v > hi)
    if bool(outside.any()):
        bad = int(v[outside][0])
        raise ExecutionError(f"Value {bad} is outside of provided min and max range ({lo} <-> {hi})")
    nparts = int(ident[-1]) + 1 if n else 0
    width = hi - lo + 1
    if width <= 0:
        raise ExecutionError(f"Invalid range for BITSTRING_AGG: min {lo} is larger than max {hi}")
    if width * max(nparts, 1) > 2 ** 31:
        raise UnsupportedError(f"BITSTRING_AGG of {width} bits over {nparts} groups (more than 2**31 bits)")
    kid = ident[keep]
    counts = torch.bincount(kid, minlength=nparts)
    text = bits_from_positions(None, np.full(nparts, width, np.int64), (v - lo).numpy(), kid.numpy())
    valid = (counts > 0)[ident]
    dev = x.data.device
    return Column(ident.to(torch.int32).to(dev), r.t, None if bool(valid.all()) else valid.to(dev), text)


@window_function("list")
def _list_agg(r: Rows) -> Column:
    """Each partition's values in row order (NULLs kept) as one list, on every row of the
    partition: the values are the list's elements as they stand, the partitions its offsets
    -- no copy per row. DISTINCT: a value equal to the previous one in its partition (sorted
    by it; NULL equal to NULL) is skipped."""
    x, n, dev, ident = r.x, r.n, r.dev, r.part.ident
    rows = torch.arange(n, device=dev)
    if bool(r.call.params[0]) and n > 1:
        v = sortable(x)
        valid = torch.ones(n, dtype=torch.bool, device=dev) if x.valid is None else x.valid.expand(n)
        same = ((v[1:] == v[:-1]) & valid[1:] & valid[:-1]) | (~valid[1:] & ~valid[:-1])
        dup = torch.zeros(n, dtype=torch.bool, device=dev)
        dup[1:] = same & (ident[1:] == ident[:-1])
        rows = rows[~dup]
    nparts = int(ident[-1]) + 1 if n else 0
    counts = torch.bincount(ident[rows], minlength=nparts)
    offsets = torch.zeros(nparts + 1, dtype=torch.int64, device=dev)
    torch.cumsum(counts, 0, out=offsets[1:])
    return Column(ident.to(torch.int64), r.t, None, NestedValues((x.take(rows),), offsets, nparts))


@window_function("histogram")
def _histogram(r: Rows) -> Column:
    """Each partition (sorted by the value) as a map from each non-NULL value to its count:
    a run of peers is one entry; NULL for a partition without values. On every row."""
    x, n, dev, part, peers = r.x, r.n, r.dev, r.part, r.peers
    first = (peers.first == r.idx) if x.valid is None else (peers.first == r.idx) & x.valid.expand(n)
    runs = torch.nonzero(first).flatten()
    nparts = int(part.ident[-1]) + 1 if n else 0
    counts = torch.bincount(part.ident[runs], minlength=nparts)
    offsets = torch.zeros(nparts + 1, dtype=torch.int64, device=dev)
    torch.cumsum(counts, 0, out=offsets[1:])
    keys = x.take(runs)
    keys = Column(keys.data, keys.type, None, keys.dictionary)  # (valid: runs of values only)
    sizes = Column(peers.last[runs] - runs + 1, INT64)
    valid = (counts > 0)[part.ident]
    return Column(part.ident.to(torch.int64), r.t, None if bool(valid.all()) else valid,
                  NestedValues((keys, sizes), offsets, nparts))


# ---------------------------------------------------------------- over each row's frame


@window_function("first_value", "last_value", "nth_value", framed=True)
def _value(r: Rows) -> Column:
    f, x, idx, lo, hi, n = r.call.func, r.x, r.idx, r.lo, r.hi, r.n
    j = lo if f == "first_value" else hi if f == "last_value" else lo + int(r.call.params[0]) - 1
    if r.call.ignore_nulls and x.valid is not None:  # the frame's first (last) non-NULL row
        if f == "first_value":
            nxt = torch.where(x.valid, idx, torch.full_like(idx, n)).flip(0).cummin(0).values.flip(0)
            j = nxt[lo.clamp(0, max(n - 1, 0))]
        else:
            prv = torch.where(x.valid, idx, torch.full_like(idx, -1)).cummax(0).values
            j = prv[hi.clamp(0, max(n - 1, 0))]
            inside = (lo <= hi) & (j >= lo)
            return _choose(inside, x.take(j.clamp(0, max(n - 1, 0))), None, r.t, n, r.dev)
    inside = (lo <= hi) & (j <= hi)
    return _choose(inside, x.take(j.clamp(0, max(n - 1, 0))), None, r.t, n, r.dev)


@window_function("count_star", framed=True)
def _count_star(r: Rows) -> Column:
    return Column(K.frame_count(None, r.lo, r.hi), r.t)


@window_function("count", framed=True)
def _count(r: Rows) -> Column:
    return Column(r.count, r.t)


@window_function("sum", "avg", framed=True)
def _sum_avg(r: Rows) -> Column:
    x, t = r.x, r.t
    data_ = x.data.to(torch.int64) if x.type.kind == "bool" else \
        x.data.to(torch.float64) if x.type.is_float else x.data  # REAL sums in DOUBLE, as DuckDB
    s = K.frame_sum(data_, x.valid, r.lo, r.hi, r.part)
    if r.call.func == "sum":
        return Column(s.to(torch.float64 if t.is_float else torch.int64), t, r.nulls())
    avg = s.to(torch.float64) / r.count.clamp(min=1).to(torch.float64)
    if x.type.kind == "decimal":
        avg = avg / (10 ** x.type.scale)
    return Column(avg, t, r.nulls())


@window_function(*sorted(MOMENTS), framed=True)
def _moments_call(r: Rows) -> Column:
    return _moments(r.call.func, r.x, r.count, r.lo, r.hi, r.part, r.t)


@window_function("min", "max", framed=True)
def _min_max(r: Rows) -> Column:
    x, t, n, dev = r.x, r.t, r.n, r.dev
    _, start, end = r.call.frame
    is_max = r.call.func == "max"
    if x.type.kind == "string":  # over the strings' sort ranks
        d, (codes,) = unify_dictionaries([x])
        if len(d) == 0:
            return Column(torch.zeros(n, dtype=torch.int32, device=dev), t, torch.zeros(n, dtype=torch.bool,
                                                                                      device=dev), d)
        rank = dictionary_rank(d).to(dev)
        best = K.frame_minmax(lookup(rank, codes), x.valid, r.lo, r.hi, start, end, r.part, is_max)
        code_of_rank = torch.argsort(rank)
        out = code_of_rank[best.clamp(0, len(d) - 1)].to(torch.int32)
        return Column(out, t, r.nulls(), d)
    m = K.frame_minmax(x.data, x.valid, r.lo, r.hi, start, end, r.part, is_max)
    return Column(m, t, r.nulls(), x.dictionary)


@window_function("quantile_cont", "quantile_disc", framed=True)
def _quantile_call(r: Rows) -> Column:
    return _quantile(r.call.func, float(r.call.params[0]), r.x, r.count, r.part, r.has, r.t, r.n)


@window_function("mode", framed=True)
def _mode_call(r: Rows) -> Column:
    return _mode(r.x, r.idx, r.part, r.peers, r.t, r.n)


@window_function("entropy", framed=True)
def _entropy_call(r: Rows) -> Column:
    return _entropy(r.x, r.idx, r.part, r.peers, r.n)


def _entropy(x: Column, idx, part: K.Segments, peers: K.Segments, n: int) -> Column:
    """ENTROPY of each partition sorted by x: a run of c equal non-NULL values among the
    partition's N adds -(c/N) log2(c/N) -- summed as each of its rows' -(1/N) log2(c/N); 0
    without values (DuckDB's)."""
    dev = idx.device
    valid = torch.ones(n, dtype=torch.bool, device=dev) if x.valid is None else x.valid.expand(n)
    nparts = int(part.ident.max()) + 1 if n else 0
    total = torch.zeros(nparts, dtype=torch.float64, device=dev).scatter_add(0, part.ident, valid.to(torch.float64))
    big_n = total[part.ident].clamp(min=1)
    run = (peers.last - peers.first + 1).to(torch.float64)
    term = torch.where(valid, -(torch.log2(run / big_n)) / big_n, torch.zeros(n, dtype=torch.float64, device=dev))
    per_part = torch.zeros(nparts, dtype=torch.float64, device=dev).scatter_add(0, part.ident, term)
    return Column(per_part[part.ident], FLOAT64)


def _excluding(f: str, x: Column | None, t, pieces, part: K.Segments, n: int, dev) -> Column:
    """COUNT, SUM, AVG, MIN, MAX over a frame with an EXCLUDE: over each of its ``pieces``
    (:func:`sluice.kernels.window.exclusion_pieces`), combined."""
    if f == "count_star":
        return Column(sum(K.frame_count(None, a, b) for a, b in pieces), t)
    valid = x.valid
    ones = valid if valid is not None else torch.ones(n, dtype=torch.bool, device=dev)
    counts = [K.frame_count(ones, a, b) for a, b in pieces]
    count = sum(counts)
    if f == "count":
        return Column(count, t)
    has = count > 0
    nulls = None if bool(has.all()) else has
    if f in ("sum", "avg"):
        data_ = x.data.to(torch.int64) if x.type.kind == "bool" else \
            x.data.to(torch.float64) if x.type.is_float else x.data
        s = sum(K.frame_sum(data_, valid, a, b, part) for a, b in pieces)
        if f == "sum":
            return Column(s.to(torch.float64 if t.is_float else torch.int64), t, nulls)
        avg = s.to(torch.float64) / count.clamp(min=1).to(torch.float64)
        return Column(avg / (10 ** x.type.scale) if x.type.kind == "decimal" else avg, t, nulls)
    is_max = f == "max"
    d = None
    if x.type.kind == "string":  # over the strings' sort ranks
        d, (codes,) = unify_dictionaries([x])
        if len(d) == 0:
            return Column(torch.zeros(n, dtype=torch.int32, device=dev), t, torch.zeros(n, dtype=torch.bool, device=dev), d)
        rank = dictionary_rank(d).to(dev)
        values = lookup(rank, codes)
    else:
        values = float_order_key(x.data) if x.data.is_floating_point() else x.data
    bounded = (("preceding", 1), ("following", 1))  # any [lo, hi]: the sparse-table path
    out, got = None, None
    for (a, b), c in zip(pieces, counts):
        m = K.frame_minmax(values, valid, a, b, *bounded, part, is_max)
        if out is None:
            out, got = m, c > 0
            continue
        best = torch.maximum(out, m) if is_max else torch.minimum(out, m)
        out = torch.where(got & (c > 0), best, torch.where(c > 0, m, out))
        got = got | (c > 0)
    if d is not None:
        out = torch.argsort(rank)[out.clamp(0, len(d) - 1)].to(torch.int32)
    elif x.data.is_floating_point():
        out = float_from_order_key(out, x.data.dtype)
    return Column(out, t, nulls, d)


def _mode(x: Column, idx, part: K.Segments, peers: K.Segments, t, n: int) -> Column:
    """MODE of each partition, sorted by x with NULLs last: the first of its longest runs of
    peers (equal values), so the least value among those tied; NULL without any value."""
    dev = idx.device
    valid = torch.ones(n, dtype=torch.bool, device=dev) if x.valid is None else x.valid.expand(n)
    run = torch.where(valid, peers.last - peers.first + 1, torch.zeros_like(idx))
    nparts = int(part.ident.max()) + 1 if n else 0
    longest = torch.zeros(nparts, dtype=run.dtype, device=dev).scatter_reduce(0, part.ident, run, "amax")
    best = (run == longest[part.ident]) & valid
    first = torch.full((nparts,), n, dtype=idx.dtype, device=dev).scatter_reduce(
        0, part.ident, torch.where(best, idx, torch.full_like(idx, n)), "amin")
    pick = first[part.ident]
    got = x.take(pick.clamp(0, max(n - 1, 0)))
    has = pick < n
    v = has if got.valid is None else (got.valid & has)
    return Column(got.data, t, None if bool(v.all()) else v, got.dictionary)


def _quantile(f: str, q: float, x: Column, count, part: K.Segments, has, t, n: int) -> Column:
    """The q-quantile of each partition, whose rows are sorted by x with NULLs last (so its
    ``count`` non-NULL values come first), by DuckDB's rules: QUANTILE_DISC takes the value at
    max(1, c - floor(c - q c)) - 1; QUANTILE_CONT interpolates at (c - 1) q between its
    neighbours (decimals in their scaled integers, the result truncated toward zero)."""
    c = count.to(torch.float64)
    last = max(n - 1, 0)
    valid = None if bool(has.all()) else has
    if f == "quantile_disc":
        k = (torch.clamp(c - torch.floor(c - q * c), min=1) - 1).to(torch.int64)
        got = x.take((part.first + k).clamp(0, last))
        return Column(got.data, t, valid, got.dictionary)
    rn = (c - 1).clamp(min=0) * q
    lo_i, hi_i = torch.floor(rn), torch.ceil(rn)
    lo = x.data[(part.first + lo_i.to(torch.int64)).clamp(0, last)]
    hi = x.data[(part.first + hi_i.to(torch.int64)).clamp(0, last)]
    d = rn - lo_i
    # DuckDB's interpolations (kernels/interpolate.py): within the double range at its ends,
    # and a decimal's scaled integers through one fused double operation
    if x.type.kind == "decimal":
        return Column(torch.where(hi_i > lo_i, interpolate_scaled(lo, d, hi), lo), t, valid)
    if x.type.kind == "float32":
        return Column(torch.where(hi_i > lo_i, interpolate_real(lo, d, hi), lo), t, valid)
    lo, hi = lo.to(torch.float64), hi.to(torch.float64)
    return Column(torch.where(hi_i > lo_i, interpolate_float(lo, d, hi), lo), t, valid)


def _string_agg(x: Column, sep: str, distinct: bool, part: K.Segments, t, n: int) -> Column:
    """Each partition's non-NULL values in row order joined by ``sep`` (DISTINCT: a value
    equal to the previous kept one in its partition, which is sorted by it, is skipped), on
    every row of the partition; NULL for a partition without values. One pyarrow list join
    over all partitions, no loop over them."""
    dev = x.data.device
    ident = part.ident.cpu()
    keep = torch.ones(n, dtype=torch.bool) if x.valid is None else x.valid.cpu()
    d = x.dictionary if x.dictionary.type == pa.string() else x.dictionary.cast(pa.string())
    vals = d.take(pa.array(x.data.cpu()[keep].numpy()))
    kid = ident[keep]
    if distinct and len(vals) > 1:
        same = torch.from_numpy(pc.equal(vals.slice(1), vals.slice(0, len(vals) - 1))
                                .to_numpy(zero_copy_only=False).copy())
        dup = torch.zeros(len(vals), dtype=torch.bool)
        dup[1:] = same & (kid[1:] == kid[:-1])
        vals, kid = vals.filter(pa.array((~dup).numpy())), kid[~dup]
    nparts = int(ident[-1]) + 1 if n else 0
    counts = torch.bincount(kid, minlength=nparts)
    offsets = np.zeros(nparts + 1, dtype=np.int32)
    np.cumsum(counts.numpy(), out=offsets[1:])
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), vals), sep)
    valid = (counts > 0)[ident]
    return Column(ident.to(torch.int32).to(dev), t, None if bool(valid.all()) else valid.to(dev), joined)


def _nth_valid(valid: torch.Tensor, k: int) -> torch.Tensor:
    """Per row, the index of the k-th valid row before it (k > 0) or the -k-th after it
    (k < 0), or -1 when there is none (LAG / LEAD ... IGNORE NULLS; the caller keeps the
    result inside the row's partition)."""
    n = valid.numel()
    pos = valid.nonzero().squeeze(1)
    m = int(pos.numel())
    upto = torch.cumsum(valid.to(torch.int64), 0)  # valid rows at or before each row
    target = (upto - valid.to(torch.int64) - k) if k > 0 else (upto - 1 - k)
    ok = (target >= 0) & (target < m)
    if m == 0:
        return torch.full((n,), -1, dtype=torch.int64, device=valid.device)
    return torch.where(ok, pos[target.clamp(0, m - 1)], torch.full_like(target, -1))


def _choose(inside: torch.Tensor, got: Column, default: Column | None, t, n: int, dev) -> Column:
    """``got`` where ``inside``, else ``default`` (NULL when there is none)."""
    valid = inside if got.valid is None else inside & got.valid
    if default is None:
        return Column(got.data, t, None if bool(valid.all()) else valid, got.dictionary)
    if default.type.kind == "string" or got.type.kind == "string":
        both = concat_columns([got, default])
        data = torch.where(inside, both.data[:n], both.data[n:])
        dict_ = both.dictionary
    else:
        data = torch.where(inside, got.data, default.data.to(got.data.dtype))
        dict_ = None
    dvalid = default.valid if default.valid is not None else torch.ones(n, dtype=torch.bool, device=dev)
    v = torch.where(inside, valid, dvalid)
    return Column(data, t, None if bool(v.all()) else v, dict_)


def _moments(f: str, x: Column, count: torch.Tensor, lo, hi, part, t) -> Column:
    """VAR_SAMP / VAR_POP / STDDEV_SAMP / STDDEV_POP over each frame. Whole partitions: two
    passes (the partition's mean, then squared deviations). Other frames: (count, mean, M2)
    of power-of-two blocks merged with Chan et al.'s formula along each frame -- never
    sum(x^2) - sum(x)^2 / n, which loses a small spread next to a large value (1e20 and 3, 1).
    An infinity or NaN with other values gives NaN, a lone value 0, as in DuckDB; too few rows
    give NULL."""
    v = to_type(x, FLOAT64)
    n = v.numel()
    valid = torch.ones(n, dtype=torch.bool, device=v.device) if x.valid is None else x.valid
    lo_c, hi_c = lo.clamp(0, max(n - 1, 0)), hi.clamp(0, max(n - 1, 0))
    if n and bool(((lo_c == part.first) & (hi_c == part.last)).all()):
        groups = int(part.ident[-1]) + 1
        zeros = torch.zeros(groups, dtype=torch.float64, device=v.device)
        vv = torch.where(valid, v, torch.zeros_like(v))
        size = zeros.index_add(0, part.ident, valid.to(torch.float64))
        mean = (zeros.index_add(0, part.ident, vv) / size.clamp(min=1))[part.ident]
        dev = torch.where(valid, v - mean, torch.zeros_like(v))
        m2 = zeros.index_add(0, part.ident, dev * dev)[part.ident]
    else:
        _, _, m2 = _block_moments(v, valid, lo_c, (hi - lo + 1).clamp(min=0))
    nf = count.to(torch.float64)
    pop = f.endswith("_pop")
    var = m2 / (nf if pop else (nf - 1)).clamp(min=1)
    odd = valid & ~torch.isfinite(v)
    if n and bool(odd.any()):  # with other values, an infinity or NaN makes the frame NaN (DuckDB)
        var = torch.where(K._range_total(K._prefix(odd.to(torch.int64)), lo, hi) > 0,
                          torch.full_like(var, float("nan")), var)
    var = torch.where(count == 1, torch.zeros_like(var), var)  # one value (even inf) varies by 0
    out = torch.sqrt(var) if f.startswith("stddev") else var
    has = count > (0 if pop else 1)
    return Column(out, t, None if bool(has.all()) else has)


def _merge_moments(a, b):
    """Chan et al.: two (count, mean, M2) states as one; an empty side leaves the other."""
    na, ma, qa = a
    nb, mb, qb = b
    nn = na + nb
    delta = mb - ma
    mean = ma + delta * (nb / nn.clamp(min=1))
    m2 = qa + qb + delta * delta * (na * nb / nn.clamp(min=1))
    a_empty, b_empty = na == 0, nb == 0
    return (nn, torch.where(a_empty, mb, torch.where(b_empty, ma, mean)),
            torch.where(a_empty, qb, torch.where(b_empty, qa, m2)))


def _block_moments(v: torch.Tensor, valid: torch.Tensor, lo: torch.Tensor, width: torch.Tensor):
    """(count, mean, M2) of the valid values in v[lo : lo + width] per row, from power-of-two
    blocks (as :func:`sluice.kernels.window._block_sums`), two levels alive at a time."""
    n = v.numel()
    zero = torch.zeros_like(v)
    level = (valid.to(torch.float64), torch.where(valid, v, zero), zero.clone())
    acc = (zero.clone(), zero.clone(), zero.clone())
    pos = lo.clone()
    widest = int(width.max()) if n else 0
    k = 0
    while (1 << k) <= widest:
        take = ((width >> k) & 1).bool()
        idx = pos.clamp(max=n - 1)
        got = tuple(torch.where(take, a.index_select(0, idx), zero) for a in level)
        acc = _merge_moments(acc, got)
        pos = pos + take.to(pos.dtype) * (1 << k)
        step = 1 << k
        if step < n:
            shifted = tuple(torch.cat([a[step:], torch.zeros(step, dtype=a.dtype, device=a.device)]) for a in level)
            level = _merge_moments(level, shifted)
        k += 1
    return acc
