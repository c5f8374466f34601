"""Where each page's definition levels and values lie in the page buffer.

A v2 page says so in its header (the levels are stored uncompressed ahead of the values); a v1
page leads its decompressed body with the levels' 4-byte length, which only the decompressed
bytes hold -- read here, on the device, so no page is read back to the host. One program per
block of pages (the work is a few loads a page).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _locate(buf, at_p, end_p, v1_p, lvstart_p, lvend_p, defs_p, defe_p, vstart_p, err_p, P,
            HAS_DEF: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < P
    at = tl.load(at_p + i, mask=m, other=0)
    end = tl.load(end_p + i, mask=m, other=0)
    v1 = tl.load(v1_p + i, mask=m, other=0) != 0
    # v2: the header's ranges (checked on the host)
    lvs = tl.load(lvstart_p + i, mask=m, other=0)
    lve = tl.load(lvend_p + i, mask=m, other=0)
    if HAS_DEF:
        room = m & v1 & (at + 4 <= end)
        dl = tl.load(buf + at, mask=room, other=0).to(tl.int64)
        dl |= tl.load(buf + at + 1, mask=room, other=0).to(tl.int64) << 8
        dl |= tl.load(buf + at + 2, mask=room, other=0).to(tl.int64) << 16
        dl |= tl.load(buf + at + 3, mask=room, other=0).to(tl.int64) << 24
        bad = m & v1 & ((at + 4 > end) | (at + 4 + dl > end))
        ds = tl.where(v1, at + 4, lvs)
        de = tl.where(v1, at + 4 + dl, lve)
        de = tl.where(bad, ds, de)
        vs = tl.where(v1, tl.where(bad, end, at + 4 + dl), lve)
        tl.store(defs_p + i, ds, mask=m)
        tl.store(defe_p + i, de, mask=m)
        tl.store(err_p + i, tl.where(bad, 1, 0).to(tl.int32), mask=m)
    else:
        vs = tl.where(v1, at, lve)
    tl.store(vstart_p + i, vs, mask=m)


def locate(buf, desc, has_def: bool, defs, defe, vstart, err) -> None:
    """Fill ``defs``/``defe`` (definition levels' range, with ``has_def``) and ``vstart`` (where
    the values start) of every page described by ``desc`` (a :class:`~..layout.Descriptors`)."""
    P = desc.pages
    if P == 0:
        return
    _locate[(triton.cdiv(P, BLOCK),)](buf, desc.at, desc.end, desc.v1, desc.lv_start, desc.lv_end,
                                      defs, defe, vstart, err, P, HAS_DEF=has_def, BLOCK=BLOCK)
