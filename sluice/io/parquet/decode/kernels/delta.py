"""DELTA_BINARY_PACKED integers: a header (block size, miniblocks per block, value count, first
value as zigzag varints), then blocks of (zigzag min delta, one bit width per miniblock, the
miniblocks bit-packed). Blocks differ in size, so one program per page walks them in order (a
scalar loop over blocks and miniblocks, as libcudf's delta decoder does with one warp) and the
block unpacks a miniblock's values at once; each value is the previous plus ``min delta +
unpacked``, a prefix sum carried across miniblocks, wrapping in 64 bits as the format says (an
INT32 column keeps the low 32 bits: the same as wrapping in 32)."""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 128
_MAX = 1 << 31


@triton.jit
def _varint(buf, pos, end):
    """(value, bytes, whether it ended inside ``end`` within 10 bytes) of the ULEB128 at pos,
    its bytes read as one vector."""
    ar = tl.arange(0, 16)
    ok = (ar < 10) & (pos + ar < end)
    b = tl.load(buf + pos + ar, mask=ok, other=0).to(tl.int64)
    stop = tl.min(tl.where((b >= 128) | ~ok, 16, ar), 0)
    v = tl.sum(tl.where(ar <= stop, (b & 127) << (7 * ar), 0), 0)
    return v, stop + 1, stop < 10


@triton.jit
def _unzig(u):
    return ((u >> 1) & 0x7FFFFFFFFFFFFFFF) ^ (-(u & 1))


@triton.jit
def _delta(buf, vstart_p, end_p, count_p, off_p, out_p, err_p, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    pos = tl.load(vstart_p + p)
    end = tl.load(end_p + p)
    count = tl.load(count_p + p)
    off = tl.load(off_p + p)
    lanes = tl.arange(0, BLOCK)
    err = tl.zeros((), tl.int32)
    block, l1, ok1 = _varint(buf, pos, end)
    pos += l1
    minis, l2, ok2 = _varint(buf, pos, end)
    pos += l2
    total, l3, ok3 = _varint(buf, pos, end)
    pos += l3
    fz, l4, ok4 = _varint(buf, pos, end)
    pos += l4
    first = _unzig(fz)
    good = ok1 & ok2 & ok3 & ok4 & (block > 0) & (minis > 0) & (block < 2147483648) & (total < 2147483648)
    minis_s = tl.maximum(minis, 1)
    per = block // minis_s
    good = good & (block % minis_s == 0) & (per % 8 == 0)
    err = tl.where(good, err, 8)
    err = tl.where((err == 0) & (total != count), 9, err)
    has = (err == 0) & (total > 0)
    tl.store(out_p + off, first.to(out_p.dtype.element_ty), mask=has)
    last = first
    k = tl.zeros((), tl.int64) + 1
    while (k < total) & (err == 0):
        md, lm, okm = _varint(buf, pos, end)
        err = tl.where(okm & (pos + lm + minis <= end), err, 10)
        mind = _unzig(md)
        wpos = pos + lm
        data = wpos + minis
        mi = tl.zeros((), tl.int64)
        while (mi < minis) & (k < total) & (err == 0):
            w = tl.load(buf + wpos + mi, mask=wpos + mi < end, other=0).to(tl.int64)
            err = tl.where(w > 64, 10, err)
            w = tl.minimum(w, 64)
            take = tl.minimum(per, total - k)
            wmask = tl.where(w >= 64, -1, (tl.full((), 1, tl.int64) << tl.minimum(w, 63)) - 1)
            j = tl.zeros((), tl.int64)
            while (j < take) & (err == 0):
                q = j + lanes
                m = q < take
                bit = data * 8 + q * w
                byte = bit >> 3
                s = bit & 7
                lo = tl.zeros((BLOCK,), tl.int64)
                for b in tl.static_range(0, 8):
                    lo |= tl.load(buf + byte + b, mask=m & (byte + b < end), other=0).to(tl.int64) << (8 * b)
                hi = tl.load(buf + byte + 8, mask=m & (byte + 8 < end), other=0).to(tl.int64)
                # logical shift right of lo by s, then the ninth byte's bits above it
                v = tl.where(s > 0, ((lo >> s) & ((tl.full((BLOCK,), 1, tl.int64) << (64 - s)) - 1)), lo)
                v = v | tl.where(s > 0, hi << (64 - tl.maximum(s, 1)), 0)
                v = v & wmask
                bad = m & (((bit + w + 7) >> 3) > end)
                err = tl.where(tl.max(bad.to(tl.int32), 0) > 0, 10, err)
                d = tl.where(m, mind + v, 0)
                vals = last + tl.cumsum(d, 0)
                tl.store(out_p + off + k + q, vals.to(out_p.dtype.element_ty), mask=m & (err == 0))
                last = last + tl.sum(d, 0)
                j += BLOCK
            data += (per * w) >> 3
            k += take
            mi += 1
        pos = data
    tl.store(err_p + p, err)


def decode(buf, desc, vstart, counts, out, err) -> None:
    """DELTA_BINARY_PACKED pages of ``desc`` (values from ``vstart``, ``counts`` non-NULL values
    each, which their headers must say) to ``out`` at each page's slot offset."""
    if desc.pages:
        _delta[(desc.pages,)](buf, vstart, desc.end, counts, desc.slot, out, err, BLOCK=BLOCK)
