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

BLOCK = 256

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
    while (i < count) & (pos < end) & (err == 0):
        # the run header: a varint of up to 5 bytes
        b = tl.load(buf + pos).to(tl.int64)
        h = b & 127
        hl = tl.full((), 1, tl.int64)
        going = b >= 128
        for k in tl.static_range(1, 5):
            ok = going & (pos + k < end)
            bk = tl.load(buf + pos + k, mask=ok, other=0).to(tl.int64)
            h |= tl.where(ok, (bk & 127) << (7 * k), 0)
            hl += tl.where(ok, 1, 0)
            going = ok & (bk >= 128)
        err = tl.where(going, 2, err)
        n = h >> 1
        packed = (h & 1) == 1
        body = pos + hl
        nvals = tl.where(packed, n * 8, n)
        take = tl.minimum(nvals, count - i)
        rv = tl.zeros((), tl.int64)
        if not packed:
            err = tl.where(body + vb > end, 2, err)
            for k in tl.static_range(0, 4):
                ok = (k < vb) & (body + k < end)
                rv |= tl.load(buf + body + k, mask=ok, other=0).to(tl.int64) << (8 * k)
            err = tl.where((rv >> w) != 0, 4, err)
        j = tl.zeros((), tl.int64)
        while j < take:
            k = j + lanes
            m = k < take
            bit = body * 8 + k * w
            byte = bit >> 3
            word = tl.zeros((BLOCK,), tl.int64)
            for q in tl.static_range(0, 5):
                word |= tl.load(buf + byte + q, mask=m & (byte + q < end), other=0).to(tl.int64) << (8 * q)
            pv = (word >> (bit & 7)) & wmask
            bad = m & (((bit + w + 7) >> 3) > end)
            v = tl.where(packed, pv, rv)
            err = tl.where(packed & (tl.max(bad.to(tl.int32), 0) > 0), 2, err)
            dst = off + i + k
            if MODE == 0:
                err = tl.where(tl.max((m & (v >= size)).to(tl.int32), 0) > 0, 13, err)
                tl.store(out_p + dst, v.to(out_p.dtype.element_ty), mask=m)
                total += tl.sum(tl.where(m, v, 0), 0)
            else:
                err = tl.where(tl.max((m & (v >= size)).to(tl.int32), 0) > 0, 5, err)
                okv = m & (v < size)
                if MODE == 1:
                    tl.store(out_p + dst, (v + base).to(out_p.dtype.element_ty), mask=m)
                else:
                    got = tl.load(dict_p + base + v, mask=okv, other=0)
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
