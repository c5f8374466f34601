"""PLAIN fixed-width values: ``W`` bytes a value, little-endian (INT32, INT64, FLOAT, DOUBLE; the
float bits are kept as integers and viewed as floats by the caller), big-endian two's complement
(FIXED_LEN_BYTE_ARRAY decimals: the low 8 bytes become an int64, wider values must be their
sign's extension -- sluice's decimals fit 18 digits), or one bit a value (BOOLEAN). One program
per tile of a page (grid: pages x the most tiles a page has, from the headers); a page's values
are checked to lie inside it by its first tile."""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _plain(buf, vstart_p, end_p, count_p, off_p, out_p, err_p, W: tl.constexpr, BE: tl.constexpr,
           BITS: tl.constexpr, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    t = tl.program_id(1)
    vs = tl.load(vstart_p + p)
    end = tl.load(end_p + p)
    n = tl.load(count_p + p)
    off = tl.load(off_p + p)
    k = t * BLOCK + tl.arange(0, BLOCK)
    m = k < n
    if BITS:
        fits = vs * 8 + n <= end * 8
    else:
        fits = vs + n * W <= end
    m = m & fits
    if BITS:
        bit = vs * 8 + k
        v = ((tl.load(buf + (bit >> 3), mask=m, other=0) >> (bit & 7).to(tl.uint8)) & 1).to(tl.int64)
        err = tl.zeros((), tl.int32)
    elif BE:
        at = vs + k * W
        v = tl.zeros((BLOCK,), tl.int64)
        LOW: tl.constexpr = W if W < 8 else 8
        for b in tl.static_range(W - LOW, W):
            v |= tl.load(buf + at + b, mask=m, other=0).to(tl.int64) << (8 * (W - 1 - b))
        if W < 8:
            neg = (tl.load(buf + at, mask=m, other=0) & 0x80) != 0
            v = tl.where(neg, v - (tl.full((), 1, tl.int64) << (8 * W)), v)
        bad = tl.zeros((BLOCK,), tl.int1)
        if W > 8:
            fill = tl.where(v < 0, 255, 0)
            for b in tl.static_range(0, W - 8):
                bad = bad | (m & (tl.load(buf + at + b, mask=m, other=0).to(tl.int32) != fill))
        err = tl.where(tl.max(bad.to(tl.int32), 0) > 0, 7, 0)
    else:
        at = vs + k * W
        v = tl.zeros((BLOCK,), tl.int64)
        for b in tl.static_range(0, W):
            v |= tl.load(buf + at + b, mask=m, other=0).to(tl.int64) << (8 * b)
        err = tl.zeros((), tl.int32)
    tl.store(out_p + off + k, v.to(out_p.dtype.element_ty), mask=m)
    if t == 0:
        err = tl.where((n > 0) & ~fits, 6, err)
    if err != 0:
        tl.atomic_max(err_p + p, err)


def decode(buf, desc, vstart, counts, out, err, width: int, big_endian: bool = False, bits: bool = False,
           most: int | None = None) -> None:
    """Values of every page of ``desc`` (its ``end``, ``slot`` offsets and the host-known most
    values of a page, ``desc.most``) starting at ``vstart``, ``counts`` of them, to ``out``
    (int32 or int64) at each page's slot offset; ``width`` bytes a value (``bits``: booleans)."""
    P = desc.pages
    most = desc.most if most is None else most
    if P == 0 or most == 0:
        return
    _plain[(P, triton.cdiv(most, BLOCK))](buf, vstart, desc.end, counts, desc.slot, out, err, W=width,
                                          BE=big_endian, BITS=bits, BLOCK=BLOCK)
