"""NULL scatter: a page's non-NULL values, decoded back to back from its first slot, moved to the
slots whose definition level says present (zero elsewhere). One program per page walks its slots
a tile at a time, carrying the count of values placed (a tile's ranks are a prefix sum)."""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _scatter(levels_p, slot_p, n_p, comp_p, out_p, BLOCK: tl.constexpr):
    p = tl.program_id(0)
    slot = tl.load(slot_p + p)
    n = tl.load(n_p + p)
    lanes = tl.arange(0, BLOCK)
    carry = tl.zeros((), tl.int64)
    j = tl.zeros((), tl.int64)
    while j < n:
        k = j + lanes
        m = k < n
        lv = tl.load(levels_p + slot + k, mask=m, other=0).to(tl.int64)
        valid = m & (lv != 0)
        rank = carry + tl.cumsum(lv, 0) - lv
        v = tl.load(comp_p + slot + rank, mask=valid, other=0)
        tl.store(out_p + slot + k, tl.where(valid, v, tl.zeros_like(v)), mask=m)
        carry += tl.sum(lv, 0)
        j += BLOCK


def scatter(levels, desc, compact, out) -> None:
    """``out`` (as ``compact``): each page's values to its present slots (``levels`` != 0)."""
    if desc.pages:
        _scatter[(desc.pages,)](levels, desc.slot, desc.n, compact, out, BLOCK=BLOCK)
