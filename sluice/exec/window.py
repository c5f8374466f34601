"""Window operator: window functions over a stream sorted by (partition, order) keys.

The child is a Sort (which spills past the memory budget), so the rows of one partition
arrive together. Chunks are held only until their partitions are complete: when a chunk
starts a new partition, every row before that point is computed at once (whole-tensor
kernels in ``kernels/window.py``) and emitted. Held rows count against the memory budget;
a single partition larger than the budget is the one thing that cannot be spilled here, and
ends the query with a line naming the operator and the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, Column, concat_chunks, lookup, unify_dictionaries
from sluice.expr.evaluate import evaluate
from sluice.kernels import window as K
from sluice.kernels.keys import float_from_order_key, float_order_key
from sluice.kernels.interpolate import interpolate_float, interpolate_real, interpolate_scaled
from sluice.expr.functions.common import dictionary_rank, to_type
from sluice.types import FLOAT64
from sluice.exec.operators import Operator
from sluice.expr.nodes import Expr
from sluice.plan.logical import MOMENTS, SortKey, WindowCall


@dataclass(eq=False)
class WindowOp(Operator):
    child: Operator
    partition: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    calls: tuple[tuple[str, WindowCall], ...]
    label = "Window"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        part = ", ".join(str(e) for e in self.partition)
        order = ", ".join(f"{k.expr}{'' if k.ascending else ' desc'}" for k in self.order)
        calls = ", ".join(f"{n}={c}" for n, c in self.calls)
        return f"Window partition=[{part}] order=[{order}] [{calls}]"

    def execute(self, ctx) -> Iterator[Chunk]:
        pending: list[Chunk] = []
        with ctx.memory.reservation(f"{self.label} partition") as res:
            for chunk in self.child.stream(ctx):
                n = chunk.num_rows
                if n == 0:
                    continue
                res.grow(chunk.nbytes, "rows of one window partition")
                cut = self._last_partition_start(pending, chunk) if self.partition else 0
                if cut == 0:
                    pending.append(chunk)
                    continue
                done = pending + ([chunk.slice(0, cut)] if cut < n else [chunk])
                pending = [chunk.slice(cut, n)] if cut < n else []
                yield from self._compute(concat_chunks(done))
                res.resize(sum(c.nbytes for c in pending))
            if pending:
                yield from self._compute(concat_chunks(pending))

    def _last_partition_start(self, pending: list[Chunk], chunk: Chunk) -> int:
        """Index in ``chunk`` of the last row that starts a partition (0: none after row 0 or
        row 0 continues the held rows); rows before it complete every held partition."""
        n = chunk.num_rows
        cols = [evaluate(e, chunk).expand(n) for e in self.partition]
        starts = K.row_starts(cols, n, chunk.device)
        if pending:
            prev = pending[-1]
            edge = concat_chunks([prev.slice(prev.num_rows - 1, prev.num_rows), chunk.slice(0, 1)])
            two = [evaluate(e, edge).expand(2) for e in self.partition]
            starts[0] = bool(K.row_starts(two, 2, chunk.device)[1])
        else:
            starts[0] = False
        hits = torch.nonzero(starts).flatten()
        return int(hits[-1]) if hits.numel() else 0

    def _compute(self, data: Chunk) -> Iterator[Chunk]:
        n = data.num_rows
        dev = data.device
        pcols = [evaluate(e, data).expand(n) for e in self.partition]
        part_starts = K.row_starts(pcols, n, dev)
        part = K.Segments.of(part_starts)
        ocols = [evaluate(k.expr, data).expand(n) for k in self.order]
        peers = K.Segments.of(part_starts | K.row_starts(ocols, n, dev))
        idx = torch.arange(n, device=dev)
        key = None
        if any(c.frame[0] == "range" and (c.frame[1][0] in _OFFSET or c.frame[2][0] in _OFFSET)
               for _, c in self.calls):
            key = K.range_key(ocols[0], self.order[0].ascending, self.order[0].nulls_first)
        cols = dict(data.columns)
        for name, call in self.calls:
            cols[name] = _call(call, data, idx, part, peers, dev, key)
        yield Chunk(cols, n, data.seq, dev)


_OFFSET = ("preceding", "following")


def _call(call: WindowCall, data: Chunk, idx, part: K.Segments, peers: K.Segments, dev, key=None) -> Column:
    f, n = call.func, data.num_rows
    t = call.type
    if f == "row_number":
        return Column(idx - part.first + 1, t)
    if f == "rank":
        return Column(peers.first - part.first + 1, t)
    if f == "dense_rank":
        return Column(peers.ident - peers.ident[part.first] + 1, t)
    if f == "percent_rank":
        size = (part.last - part.first).to(torch.float64)
        r = (peers.first - part.first).to(torch.float64)
        return Column(torch.where(size > 0, r / size.clamp(min=1), torch.zeros_like(r)), t)
    if f == "cume_dist":
        size = (part.last - part.first + 1).to(torch.float64)
        return Column((peers.last - part.first + 1).to(torch.float64) / size, t)
    if f == "ntile":
        return Column(K.ntile(int(call.params[0]), idx, part), t)
    x = evaluate(call.args[0], data).expand(n) if call.args else None
    if f in ("lag", "lead"):
        k = int(call.params[0])
        j = idx - k if f == "lag" else idx + k
        if call.ignore_nulls and x.valid is not None and k > 0:
            j = _nth_valid(x.valid, k if f == "lag" else -k)
        inside = (j >= part.first) & (j <= part.last)
        got = x.take(j.clamp(0, max(n - 1, 0)))
        default = evaluate(call.args[1], data).expand(n) if len(call.args) > 1 else None
        return _choose(inside, got, default, t, n, dev)
    if f == "string_agg":
        return _string_agg(x, str(call.params[0]), bool(call.params[1]), part, t, n)
    kind, start, end = call.frame
    lo, hi = K.frame(kind, start, end, part, peers, n, dev, key)
    if call.exclude:
        return _excluding(f, x, t, K.exclusion_pieces(call.exclude, lo, hi, idx, peers), part, n, dev)
    if f in ("first_value", "last_value", "nth_value"):
        j = lo if f == "first_value" else hi if f == "last_value" else lo + int(call.params[0]) - 1
        if call.ignore_nulls and x.valid is not None:  # the frame's first (last) non-NULL row
            if f == "first_value":
                nxt = torch.where(x.valid, idx, torch.full_like(idx, n)).flip(0).cummin(0).values.flip(0)
                j = nxt[lo.clamp(0, max(n - 1, 0))]
            else:
                prv = torch.where(x.valid, idx, torch.full_like(idx, -1)).cummax(0).values
                j = prv[hi.clamp(0, max(n - 1, 0))]
                inside = (lo <= hi) & (j >= lo)
                return _choose(inside, x.take(j.clamp(0, max(n - 1, 0))), None, t, n, dev)
        inside = (lo <= hi) & (j <= hi)
        return _choose(inside, x.take(j.clamp(0, max(n - 1, 0))), None, t, n, dev)
    if f == "count_star":
        return Column(K.frame_count(None, lo, hi), t)
    valid = x.valid
    count = K.frame_count(valid if valid is not None else torch.ones(n, dtype=torch.bool, device=dev), lo, hi)
    if f == "count":
        return Column(count, t)
    has = count > 0
    if f in ("sum", "avg"):
        data_ = x.data.to(torch.int64) if x.type.kind == "bool" else \
            x.data.to(torch.float64) if x.type.is_float else x.data  # REAL sums in DOUBLE, as DuckDB
        s = K.frame_sum(data_, valid, lo, hi, part)
        if f == "sum":
            return Column(s.to(torch.float64 if t.is_float else torch.int64), t, None if bool(has.all()) else has)
        avg = s.to(torch.float64) / count.clamp(min=1).to(torch.float64)
        if x.type.kind == "decimal":
            avg = avg / (10 ** x.type.scale)
        return Column(avg, t, None if bool(has.all()) else has)
    if f in MOMENTS:
        return _moments(f, x, count, lo, hi, part, t)
    if f in ("min", "max") and x.type.kind == "string":  # over the strings' sort ranks
        d, (codes,) = unify_dictionaries([x])
        if len(d) == 0:
            return Column(torch.zeros(n, dtype=torch.int32, device=dev), t, torch.zeros(n, dtype=torch.bool,
                                                                                      device=dev), d)
        rank = dictionary_rank(d).to(dev)
        best = K.frame_minmax(lookup(rank, codes), valid, lo, hi, start, end, part, f == "max")
        code_of_rank = torch.argsort(rank)
        out = code_of_rank[best.clamp(0, len(d) - 1)].to(torch.int32)
        return Column(out, t, None if bool(has.all()) else has, d)
    if f in ("min", "max"):
        m = K.frame_minmax(x.data, valid, lo, hi, start, end, part, f == "max")
        return Column(m, t, None if bool(has.all()) else has, x.dictionary)
    if f in ("quantile_cont", "quantile_disc"):
        return _quantile(f, float(call.params[0]), x, count, part, has, t, n)
    if f == "mode":
        return _mode(x, idx, part, peers, t, n)
    raise AssertionError(f"window function {f}")


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
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
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
        from sluice.chunk import concat_columns
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
