"""BYTE_STREAM_SPLIT: byte ``b`` of value ``k`` lies at ``b * n + k`` of the page's values, where
``n`` is the value bytes over the width (as pyarrow reads it); a value's bytes are
little-endian, or big-endian for FIXED_LEN_BYTE_ARRAY decimals (as :mod:`.plain` reads them).
One program per tile of a page."""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _split(buf, vstart_p, end_p, count_p, off_p, out_p, err_p, W: tl.constexpr, BE: tl.constexpr,
           BLOCK: tl.constexpr):
    p = tl.program_id(0)
    t = tl.program_id(1)
    vs = tl.load(vstart_p + p)
    end = tl.load(end_p + p)
    n = tl.load(count_p + p)
    off = tl.load(off_p + p)
    streams = (end - vs) // W
    fits = n <= streams
    k = t * BLOCK + tl.arange(0, BLOCK)
    m = (k < n) & fits
    v = tl.zeros((BLOCK,), tl.int64)
    err = tl.zeros((), tl.int32)
    if BE:
        LOW: tl.constexpr = W if W < 8 else 8
        for b in tl.static_range(W - LOW, W):
            v |= tl.load(buf + vs + b * streams + k, mask=m, other=0).to(tl.int64) << (8 * (W - 1 - b))
        if W < 8:
            neg = (tl.load(buf + vs + k, mask=m, other=0) & 0x80) != 0
            v = tl.where(neg, v - (tl.full((), 1, tl.int64) << (8 * W)), v)
        if W > 8:
            fill = tl.where(v < 0, 255, 0)
            bad = tl.zeros((BLOCK,), tl.int1)
            for b in tl.static_range(0, W - 8):
                bad = bad | (m & (tl.load(buf + vs + b * streams + k, mask=m, other=0).to(tl.int32) != fill))
            err = tl.where(tl.max(bad.to(tl.int32), 0) > 0, 7, 0)
    else:
        for b in tl.static_range(0, W):
            v |= tl.load(buf + vs + b * streams + k, mask=m, other=0).to(tl.int64) << (8 * b)
    tl.store(out_p + off + k, v.to(out_p.dtype.element_ty), mask=m)
    err = tl.where((t == 0) & (n > 0) & ~fits, 6, err)
    if err != 0:
        tl.atomic_max(err_p + p, err)


def decode(buf, desc, vstart, counts, out, err, width: int, big_endian: bool = False) -> None:
    """As :func:`..plain.decode`, for BYTE_STREAM_SPLIT pages."""
    if desc.pages == 0 or desc.most == 0:
        return
    _split[(desc.pages, triton.cdiv(desc.most, BLOCK))](buf, vstart, desc.end, counts, desc.slot, out, err,
                                                         W=width, BE=big_endian, BLOCK=BLOCK)
