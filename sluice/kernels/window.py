"""Window functions over rows sorted by (partition, order) keys, as whole-tensor operations.

Every result is computed for all rows of a batch of complete partitions at once, from:

* segments: where each partition (and each peer group: rows equal on the ORDER BY keys)
  begins and ends, from one comparison of each row with the row before it;
* frames: per row an inclusive range ``[lo, hi]`` of row indices (empty when lo > hi),
  clipped to the row's partition;
* prefix sums for COUNT / SUM / AVG over any frame (``P[hi + 1] - P[lo]``), and for MIN /
  MAX a segment reduction (whole partition), a segmented running scan (frames that start or
  end unbounded) or a sparse table of power-of-two blocks (frames bounded on both sides:
  O(n log w) for frame width w).

No Python loop runs over rows; loops run over key columns or log2 steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Column, unify_dictionaries
from sluice.errors import ExecutionError
from sluice.kernels.keys import float_from_order_key, float_order_key
from sluice.kernels.nested_keys import key_column


def _same_as_previous(col: Column, n: int) -> torch.Tensor:
    """Whether row i equals row i-1 (for i >= 1; NULL equals NULL, NaN equals NaN; nested
    values by their order keys, never their codes)."""
    col = key_column(col.expand(n))
    if col.type.kind == "string":
        _, (v,) = unify_dictionaries([col])
    else:
        v = col.data
    a, b = v[1:], v[:-1]
    eq = a == b
    if v.is_floating_point():
        eq = eq | (torch.isnan(a) & torch.isnan(b))
    if col.valid is not None:
        va, vb = col.valid[1:], col.valid[:-1]
        eq = (eq & va & vb) | (~va & ~vb)
    return eq


def row_starts(cols: list[Column], n: int, device) -> torch.Tensor:
    """True at row 0 and wherever a row differs from the one before on any of ``cols``."""
    starts = torch.zeros(n, dtype=torch.bool, device=device)
    if n == 0:
        return starts
    starts[0] = True
    for c in cols:
        starts[1:] |= ~_same_as_previous(c, n)
    return starts


@dataclass
class Segments:
    """Per row: index of the first and last row of its segment, and the segment number."""

    first: torch.Tensor
    last: torch.Tensor
    ident: torch.Tensor

    @staticmethod
    def of(starts: torch.Tensor) -> "Segments":
        n = starts.numel()
        ident = torch.cumsum(starts.to(torch.int64), 0) - 1
        begin = torch.nonzero(starts).flatten()
        end = torch.cat([begin[1:], torch.tensor([n], device=starts.device)]) - 1
        return Segments(begin[ident], end[ident], ident)


# ---------------------------------------------------------------- frames


def bound(spec: tuple[str, float], is_start: bool, kind: str, idx: torch.Tensor, part: Segments,
          peers: Segments, key: torch.Tensor | None = None) -> torch.Tensor:
    """Row index of one frame bound: ``spec`` is (unbounded|preceding|current|following, k).
    ROWS counts k rows, GROUPS k peer groups; RANGE takes the rows whose ``key`` (the ORDER
    BY value, ascending, NULLs as -inf/+inf where they sort) lies within k of the row's."""
    what, k = spec
    if what == "unbounded":
        return part.first if is_start else part.last
    if what == "current":
        if kind in ("range", "groups"):  # CURRENT ROW in RANGE / GROUPS mode: the first / last peer
            return peers.first if is_start else peers.last
        return idx
    if kind == "rows":
        return idx - int(k) if what == "preceding" else idx + int(k)
    if kind == "groups":
        return _group_bound(int(k) if what == "following" else -int(k), is_start, part, peers)
    target = key - k if what == "preceding" else key + k
    if is_start:  # the first row whose key is >= target
        return _search(key, part.first, part.last, target, strict=False)
    return _search(key, part.first, part.last, target, strict=True) - 1  # last row with key <= target


def _group_bound(shift: int, is_start: bool, part: Segments, peers: Segments) -> torch.Tensor:
    """First (start) or last (end) row of the peer group ``shift`` groups from each row's;
    past the partition's groups the bound falls outside it (an empty frame)."""
    starts = peers.first == torch.arange(peers.first.numel(), device=peers.first.device)
    begin = torch.nonzero(starts).flatten()
    finish = peers.last[begin]
    g = peers.ident + shift
    lo_g, hi_g = peers.ident[part.first], peers.ident[part.last]
    if is_start:
        row = begin[g.clamp(0, begin.numel() - 1)]
        return torch.where(g > hi_g, part.last + 1, torch.where(g < lo_g, part.first, row))
    row = finish[g.clamp(0, begin.numel() - 1)]
    return torch.where(g < lo_g, part.first - 1, torch.where(g > hi_g, part.last, row))


def _search(key: torch.Tensor, first: torch.Tensor, last: torch.Tensor, target: torch.Tensor,
            strict: bool) -> torch.Tensor:
    """Per row, the first index j in [first, last] with key[j] >= target (> when ``strict``),
    or last + 1: a binary search of all rows at once (log2 of the largest partition steps)."""
    lo, hi = first.clone(), last + 1
    n = key.numel()
    while True:
        active = lo < hi
        if not bool(active.any()):
            return lo
        mid = (lo + hi) // 2
        km = key[mid.clamp(0, max(n - 1, 0))]
        right = (km <= target) if strict else (km < target)
        lo = torch.where(active & right, mid + 1, lo)
        hi = torch.where(active & ~right, mid, hi)


def range_key(col, ascending: bool, nulls_first: bool) -> torch.Tensor:
    """The ORDER BY value of a RANGE frame as ascending float64 with NULLs at -inf / +inf
    (where they sort), so one search serves both directions and NULL rows find their peers."""
    v = col.data
    if not v.is_floating_point() and v.numel() and int(v.abs().max()) > 2 ** 53:
        raise ExecutionError("RANGE window frame over values beyond 2**53")
    v = v.to(torch.float64)
    if not ascending:
        v = -v
    if col.valid is not None:
        v = torch.where(col.valid, v, torch.full_like(v, float("-inf") if nulls_first else float("inf")))
    return v


def frame(kind: str, start: tuple[str, float], end: tuple[str, float], part: Segments, peers: Segments,
          n: int, device, key: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(lo, hi) of every row's frame, clipped to its partition (empty frames have lo > hi)."""
    idx = torch.arange(n, device=device)
    lo = torch.maximum(bound(start, True, kind, idx, part, peers, key), part.first)
    hi = torch.minimum(bound(end, False, kind, idx, part, peers, key), part.last)
    return lo, hi


def exclusion_pieces(what: str, lo: torch.Tensor, hi: torch.Tensor, idx: torch.Tensor,
                     peers: Segments) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A frame [lo, hi] less its EXCLUDE as disjoint ranges (each possibly empty: lo > hi):
    ``current row`` drops the row itself, ``group`` its peers, ``ties`` its peers but itself."""
    if what == "current row":
        a, b = idx, idx
    else:
        a, b = peers.first, peers.last
    pieces = [(lo, torch.minimum(hi, a - 1)), (torch.maximum(lo, b + 1), hi)]
    if what == "ties":  # the row itself, where the frame holds it
        inside = (lo <= idx) & (idx <= hi)
        pieces.append((torch.where(inside, idx, idx + 1), idx))
    return pieces


def _prefix(v: torch.Tensor) -> torch.Tensor:
    """[0, v0, v0+v1, ...]: n+1 prefix sums."""
    return torch.cat([torch.zeros(1, dtype=v.dtype, device=v.device), torch.cumsum(v, 0)])


def frame_count(valid: torch.Tensor | None, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """Rows (non-NULL ones when ``valid`` is given) in each frame."""
    width = (hi - lo + 1).clamp(min=0)
    if valid is None:
        return width
    p = _prefix(valid.to(torch.int64))
    return torch.where(width > 0, _range_total(p, lo, hi), torch.zeros_like(width))


def _range_total(p: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """P[hi + 1] - P[lo] from n+1 prefix sums (indices clamped: empty frames are masked)."""
    n = p.numel() - 1
    return p[(hi + 1).clamp(0, n)] - p[lo.clamp(0, n)]


def frame_sum(data: torch.Tensor, valid: torch.Tensor | None, lo: torch.Tensor, hi: torch.Tensor,
              part: Segments) -> torch.Tensor:
    """Sum of the non-NULL values in each frame (0 for none). Integer sums raise when the
    values could leave int64 (their absolute sum does), as an aggregate SUM does."""
    v = data if valid is None else torch.where(valid, data, torch.zeros_like(data))
    if not v.is_floating_point():
        v = v.to(torch.int64)
        if v.numel() and float(v.abs().to(torch.float64).sum()) >= 2.0 ** 63:
            raise ExecutionError("overflow in window SUM of int64 values (out of range)")
    else:
        return _float_frame_sum(v.to(torch.float64), lo, hi, part)
    p = _prefix(v)
    width = hi - lo + 1
    s = _range_total(p, lo, hi)
    return torch.where(width > 0, s, torch.zeros_like(s))


#: Up to this many partitions a running float sum is one cumsum per partition; past it, a
#: segmented scan whose steps are bounded by the longest partition.
_CUMSUM_PARTITIONS = 64


def _segmented_cumsum(v: torch.Tensor, part: Segments) -> torch.Tensor:
    """Inclusive prefix sums restarting at each partition."""
    groups = int(part.ident[-1]) + 1
    if groups <= _CUMSUM_PARTITIONS:
        out = torch.empty_like(v)
        begins = torch.unique_consecutive(part.first).tolist()
        for b, e in zip(begins, begins[1:] + [v.numel()]):
            out[b:e] = torch.cumsum(v[b:e], 0)
        return out
    longest = int((part.last - part.first).max()) + 1
    return _segmented_scan(v, part.ident, None, reverse=False, span=longest)


def _block_sums(v: torch.Tensor, lo: torch.Tensor, width: torch.Tensor) -> torch.Tensor:
    """Sum of v[lo : lo + width] per row as power-of-two blocks, one per set bit of the width
    (binary lifting): a difference of prefix sums would cancel ((1e20 + 3) - 1e20 = 0). Level
    k holds the sums of blocks of 2**k values, in two buffers used in turn. Costs log2 of the
    widest frame passes (1.7 s for frames of 1000 rows over 6 M rows on 2 cores, against 0.3 s
    for the prefix difference)."""
    n = v.numel()
    acc = torch.zeros_like(v)
    pos = lo.clone()
    level, spare = v.clone(), torch.empty_like(v)
    widest = int(width.max()) if n else 0
    k = 0
    while (1 << k) <= widest:
        take = ((width >> k) & 1).bool()
        part = torch.index_select(level, 0, pos.clamp(max=n - 1))
        acc += part.masked_fill_(~take, 0)
        pos.add_(take.to(pos.dtype), alpha=1 << k)
        step = 1 << k
        if step < n:
            torch.add(level[: n - step], level[step:], out=spare[: n - step])
            spare[n - step:] = level[n - step:]
            level, spare = spare, level
        k += 1
    return acc


def _float_frame_sum(v: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, part: Segments) -> torch.Tensor:
    """Float sums per frame without one query-wide prefix sum: there an infinity or NaN in one
    partition made every later frame NaN (inf - inf), and a large partition's magnitude ate a
    later small one's digits (1e20 + 1 - 1e20 = 0). The finite values are summed by a prefix
    within each partition; infinities and NaNs are counted per frame (exact integer prefix
    sums) and decide the frame as IEEE addition would: a NaN or both infinities give NaN.
    Frames over whole partitions are one sum each; frames from the partition's start, a prefix
    within it; any other frame, power-of-two blocks (:func:`_block_sums`)."""
    n = v.numel()
    width = hi - lo + 1
    if n == 0:
        return v
    lo_c, hi_c = lo.clamp(0, n - 1), hi.clamp(0, n - 1)
    finite = torch.isfinite(v)
    fv = torch.where(finite, v, torch.zeros_like(v))
    if bool(((lo_c == part.first) & (hi_c == part.last)).all()):  # whole partitions: one sum each
        groups = int(part.ident[-1]) + 1
        total = torch.zeros(groups, dtype=fv.dtype, device=fv.device).index_add_(0, part.ident, fv)[part.ident]
    elif bool((lo_c == part.first).all()):  # running frames: a prefix within each partition
        total = _segmented_cumsum(fv, part)[hi_c]
    else:
        total = _block_sums(fv, lo_c, width.clamp(min=0))
    if not bool(finite.all()):
        def count(m):
            return _range_total(_prefix(m.to(torch.int64)), lo, hi) > 0
        pos, neg = count(v == float("inf")), count(v == float("-inf"))
        total = torch.where(pos, float("inf"), torch.where(neg, float("-inf"), total))
        total = torch.where(count(torch.isnan(v)) | (pos & neg), float("nan"), total)
    return torch.where(width > 0, total, torch.zeros_like(total))


def _identity(dtype: torch.dtype, is_max: bool):
    if dtype.is_floating_point:
        return float("-inf") if is_max else float("inf")
    info = torch.iinfo(dtype)
    return info.min if is_max else info.max


def _segmented_scan(v: torch.Tensor, seg: torch.Tensor, is_max: bool | None, reverse: bool,
                    span: int | None = None) -> torch.Tensor:
    """Running max/min (``is_max`` None: sum) within segments (from the segment's start, or
    from its end): log2(n) steps of Hillis-Steele, each value combined only within its segment."""
    if reverse:
        return _segmented_scan(v.flip(0), seg.flip(0), is_max, False, span).flip(0)
    out = v.clone()
    n = v.numel()
    op = torch.add if is_max is None else torch.maximum if is_max else torch.minimum
    step = 1
    while step < min(n, span or n):  # a segment of length L is done after log2(L) steps
        same = seg[step:] == seg[:-step]
        out[step:] = torch.where(same, op(out[step:], out[:-step]), out[step:])
        step *= 2
    return out


def frame_minmax(data: torch.Tensor, valid: torch.Tensor | None, lo: torch.Tensor, hi: torch.Tensor,
                 start: tuple[str, int], end: tuple[str, int], part: Segments, is_max: bool) -> torch.Tensor:
    """MAX (or MIN) of the non-NULL values in each frame; rows whose frame has none get any
    value (the caller marks them NULL from the frame's count)."""
    if data.dtype == torch.bool:  # BOOL_AND / BOOL_OR: over 0/1
        out = frame_minmax(data.to(torch.int8), valid, lo, hi, start, end, part, is_max)
        return out.to(torch.bool)
    if data.is_floating_point():  # in DuckDB's order: NaN above +inf
        out = frame_minmax(float_order_key(data), valid, lo, hi, start, end, part, is_max)
        return float_from_order_key(out, data.dtype)
    n = data.numel()
    fill = _identity(data.dtype, is_max)
    v = data if valid is None else torch.where(valid, data, torch.full_like(data, fill))
    if n == 0:
        return v
    lo_c, hi_c = lo.clamp(0, n - 1), hi.clamp(0, n - 1)
    if start[0] == "unbounded" and end[0] == "unbounded":
        groups = int(part.ident[-1]) + 1
        red = torch.full((groups,), fill, dtype=v.dtype, device=v.device)
        red = red.scatter_reduce(0, part.ident, v, "amax" if is_max else "amin")
        return red[part.ident]
    if start[0] == "unbounded":
        return _segmented_scan(v, part.ident, is_max, reverse=False)[hi_c]
    if end[0] == "unbounded":
        return _segmented_scan(v, part.ident, is_max, reverse=True)[lo_c]
    # Both ends bounded: a sparse table up to the widest frame.
    width = int((hi - lo + 1).max()) if n else 1
    op = torch.maximum if is_max else torch.minimum
    levels = [v]
    size = 1
    while size * 2 <= width:
        prev = levels[-1]
        nxt = prev.clone()
        nxt[: n - size] = op(prev[: n - size], prev[size:])
        levels.append(nxt)
        size *= 2
    w = (hi_c - lo_c + 1).clamp(min=1)
    lvl = torch.floor(torch.log2(w.to(torch.float64))).to(torch.int64)
    table = torch.stack(levels)  # (levels, n)
    a = table[lvl, lo_c]
    b = table[lvl, (hi_c - torch.bitwise_left_shift(torch.ones_like(lvl), lvl) + 1).clamp(0, n - 1)]
    return op(a, b)


# ---------------------------------------------------------------- ranking


def ntile(buckets: int, idx: torch.Tensor, part: Segments) -> torch.Tensor:
    """NTILE(buckets): rows split into that many groups of sizes differing by at most one,
    the larger groups first."""
    if buckets <= 0:
        raise ExecutionError("NTILE needs a positive number of buckets")
    r = idx - part.first
    size = part.last - part.first + 1
    q = size // buckets
    extra = size % buckets
    big = extra * (q + 1)
    small = torch.where(q > 0, (r - big) // q.clamp(min=1) + extra, r)
    return torch.where(r < big, r // (q + 1), small) + 1
