"""The RLE / bit-packed hybrid: definition levels, and dictionary indices fused with the
dictionary gather (or, for strings, turned into codes into the host dictionary).

A stream is runs, each headed by a ULEB128 varint: low bit 0 -- an RLE run of ``h >> 1`` copies
of one value in ceil(width / 8) bytes; low bit 1 -- ``h >> 1`` groups of 8 values bit-packed LSB
first. Where a run starts depends on every run before it, so, as in libcudf, one lane walks the
run headers and the block expands each run: here the program's scalar loop reads a header and
the whole block (``BLOCK`` lanes) writes the run's values, a block at a time. No run boundaries
are precomputed on the host: they live in the decompressed page, which may never reach the host
(nvCOMP), and the walk is a few loads per run (a bit-packed run holds up to 504 values as Arrow
writes them, an RLE run any number), so one program per page keeps the kernel simple and the
host out of it. The bit width is a run-time argument, or, for dictionary indices, the byte that
leads the stream.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 512

LEVELS, CODES, GATHER = 0, 1, 2


@triton.jit
def _hybrid(buf, start_p, end_p, count_p, off_p, chunk_p, base_p, size_p, dict_p, out_p, sum_p, err_p,
            width_arg, MODE: tl.constexpr, WIDTH_FIRST: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.program_id(0)
    pos = tl.load(start_p + s)
    end = tl.load(end_p + s)
    count = tl.load(count_p + s)
    off = tl.load(off_p + s)
    lanes = tl.arange(0, BLOCK)
    err = tl.zeros((), tl.int32)
    w = tl.zeros((), tl.int64) + width_arg
    if WIDTH_FIRST:
        has = pos < end
        w = tl.load(buf + pos, mask=has, other=0).to(tl.int64)
        pos = tl.where(has, pos + 1, pos)
    err = tl.where(w > 32, 11, err)
    w = tl.minimum(w, 32)
    base = tl.zeros((), tl.int64)
    size = tl.zeros((), tl.int64) + 2
    if MODE != 0:
        c = tl.load(chunk_p + s)
        base = tl.load(base_p + c)
        size = tl.load(size_p + c)
    vb = (w + 7) >> 3
    wmask = (tl.full((), 1, tl.int64) << w) - 1
    total = tl.zeros((), tl.int64)
    i = tl.zeros((), tl.int64)
    ar8 = tl.arange(0, 8)
    while (i < count) & (pos < end) & (err == 0):
        # the run header: a varint of up to 5 bytes, read as one vector of 8
        hb = tl.load(buf + pos + ar8, mask=(ar8 < 5) & (pos + ar8 < end), other=0).to(tl.int64)
        stop = tl.min(tl.where((hb >= 128) | (ar8 >= 5) | (pos + ar8 >= end), 8, ar8), 0)
        h = tl.sum(tl.where(ar8 <= stop, (hb & 127) << (7 * ar8), 0), 0)
        hl = stop + 1
        err = tl.where(stop >= 5, 2, err)
        n = h >> 1
        packed = (h & 1) == 1
        body = pos + hl
        nvals = tl.where(packed, n * 8, n)
        take = tl.minimum(nvals, count - i)
        # an RLE run's value: ceil(width / 8) bytes
        rb = tl.load(buf + body + ar8, mask=(ar8 < vb) & (body + ar8 < end), other=0).to(tl.int64)
        rv = tl.sum(rb << (8 * ar8), 0)
        bad_rle = ~packed & ((body + vb > end) | ((rv >> w) != 0))
        err = tl.where(bad_rle, tl.where(body + vb > end, 2, 4), err)
        j = tl.zeros((), tl.int64)
        while j < take:
            k = j + lanes
            m = k < take
            bit = body * 8 + k * w
            byte = (bit >> 3)[:, None] + ar8[None, :]
            raw = tl.load(buf + byte, mask=m[:, None] & packed & (byte < end) & (ar8[None, :] < 5), other=0)
            word = tl.sum(raw.to(tl.int64) << (8 * ar8)[None, :], 1)
            pv = (word >> (bit & 7)) & wmask
            v = tl.where(packed, pv, rv)
            bad = m & packed & (((bit + w + 7) >> 3) > end)
            if MODE == 0:
                bad_v = m & (v >= size)
            else:
                bad_v = m & (v >= size)
            flags = tl.max(tl.where(bad, 2, 0) + tl.where(bad_v, 16, 0), 0)
            err = tl.where((err == 0) & (flags >= 16), 13 if MODE == 0 else 5, err)
            err = tl.where((err == 0) & ((flags & 2) != 0), 2, err)
            dst = off + i + k
            if MODE == 0:
                tl.store(out_p + dst, v.to(out_p.dtype.element_ty), mask=m)
                total += tl.sum(tl.where(m, v, 0), 0)
            elif MODE == 1:
                tl.store(out_p + dst, (v + base).to(out_p.dtype.element_ty), mask=m)
            else:
                got = tl.load(dict_p + base + v, mask=m & (v < size), other=0)
                tl.store(out_p + dst, got, mask=m)
            j += BLOCK
        i += take
        pos = tl.where(packed, body + n * w, body + vb)
    err = tl.where((err == 0) & (i < count), 3, err)
    if MODE == 0:
        tl.store(sum_p + s, total)
    tl.store(err_p + s, err)


def decode(buf, starts, ends, counts, offsets, out, err, *, mode: int, width: int = 1, width_first: bool = False,
           chunk=None, base=None, size=None, dictionary=None, sums=None) -> None:
    """Decode stream ``s`` (bytes ``[starts[s], ends[s])`` of ``buf``; ``counts[s]`` values) to
    ``out[offsets[s]:]``. ``mode``: LEVELS (the values, < 2, their sum to ``sums``), CODES
    (``base[chunk[s]] + index``, each index below ``size[chunk[s]]``) or GATHER
    (``dictionary[base[chunk[s]] + index]``). All arguments but ``mode``, ``width`` and
    ``width_first`` are tensors on ``buf``'s device."""
    S = int(starts.numel())
    if S == 0:
        return
    dummy = starts
    _hybrid[(S,)](buf, starts, ends, counts, offsets, chunk if chunk is not None else dummy,
                  base if base is not None else dummy, size if size is not None else dummy,
                  dictionary if dictionary is not None else out, out, sums if sums is not None else dummy, err,
                  width, MODE=mode, WIDTH_FIRST=width_first, BLOCK=BLOCK)
