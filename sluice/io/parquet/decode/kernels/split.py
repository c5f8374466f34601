"""BYTE_STREAM_SPLIT: byte ``b`` of value ``k`` lies at ``b * n + k`` of the page's values, where
``n`` is the value bytes over the width (as pyarrow reads it). One program per tile of a page."""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _split(buf, vstart_p, end_p, count_p, off_p, out_p, err_p, W: tl.constexpr, BLOCK: tl.constexpr):
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
    for b in tl.static_range(0, W):
        v |= tl.load(buf + vs + b * streams + k, mask=m, other=0).to(tl.int64) << (8 * b)
    tl.store(out_p + off + k, v.to(out_p.dtype.element_ty), mask=m)
    if (t == 0) & (n > 0) & ~fits:
        tl.store(err_p + p, 6)


def decode(buf, desc, vstart, counts, out, err, width: int) -> None:
    """As :func:`..plain.decode`, for BYTE_STREAM_SPLIT pages."""
    if desc.pages == 0 or desc.most == 0:
        return
    _split[(desc.pages, triton.cdiv(desc.most, BLOCK))](buf, vstart, desc.end, counts, desc.slot, out, err,
                                                         W=width, BLOCK=BLOCK)
