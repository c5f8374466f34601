"""The RLE / bit-packed hybrid encoding (definition levels, dictionary indices, booleans).

A stream is a sequence of runs, each headed by a ULEB128 varint: low bit 0 -- an RLE run of
``header >> 1`` copies of one value stored in ceil(width / 8) bytes; low bit 1 -- ``header >> 1``
groups of 8 values bit-packed LSB first. All runs of all streams are found at once
(:func:`bits.follow`), then every value is computed from its run in one pass.
"""

from __future__ import annotations

import torch

from sluice.kernels.buffers import to_device
from sluice.io.parquet.decode.bits import PAD, chain_heads, le_bytes, small, spans, unpack, varint


def decode_hybrid(buf: torch.Tensor, starts: list[int], ends: list[int], widths: torch.Tensor,
                  counts: torch.Tensor, most: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Decode streams ``buf[starts[i]:ends[i]]`` of bit width ``widths[i]`` into their first
    ``counts[i]`` values each (``most``: a bound on any stream's value count, which bounds its
    runs; default its bytes). Returns the values (int64) of all streams concatenated, and the
    offset of each stream's values in them."""
    dev = buf.device
    # Every byte a run header (a varint of up to 5 bytes) is read from lies in the buffer and
    # its padding: a stream outside it (levels' lengths from a corrupt header) is an error
    # here, on the host, not a gather past the buffer (on CUDA, a device-side assert).
    if any(s > e or (s < e and not 0 <= s < e <= buf.numel() - PAD) for s, e in zip(starts, ends)):
        raise ValueError("an RLE/bit-packed stream lies outside the page buffer")
    counts = to_device(counts, dev).long()
    offsets = torch.cumsum(counts, 0) - counts
    pos, sid, first = spans(starts, ends, dev)
    if pos.numel() == 0:
        # No run in any stream: pages that say they hold values are corrupt (callers size
        # their gathers by the counts, so returning no values would overrun on a GPU).
        if counts.numel() and bool((counts > 0).any()):
            raise ValueError("RLE/bit-packed streams hold fewer values than their pages say")
        return torch.zeros(0, dtype=torch.long, device=dev), offsets
    widths = to_device(widths, dev).long()
    w = widths[sid]
    head, hl = varint(buf, pos, 5)
    packed = (head & 1) == 1
    n = head >> 1
    body = torch.where(packed, n * w, (w + 7) >> 3)
    longest = max(e - s for s, e in zip(starts, ends))
    heads = chain_heads(pos + hl + body, sid, first, starts, ends, min(longest, most or longest))
    r_sid, r_packed, r_n, r_w, r_hl, r_pos = sid[heads], packed[heads], n[heads], w[heads], hl[heads], pos[heads]
    # Each run's values, cut to what its stream still needs (a run claiming more -- the last
    # bit-packed group's padding, or garbage in a corrupt page -- never allocates past it).
    cmax = counts.max() if counts.numel() else torch.zeros((), dtype=torch.long, device=dev)
    r_claim = torch.minimum(torch.where(r_packed, r_n * 8, r_n), cmax)
    csum = torch.cumsum(r_claim, 0)
    s_first = torch.zeros(len(starts), dtype=torch.long, device=dev).scatter_reduce(
        0, r_sid, csum - r_claim, "amin", include_self=False)
    r_in_stream = csum - r_claim - s_first[r_sid]
    r_count = torch.clamp(torch.minimum(r_claim, counts[r_sid] - r_in_stream), min=0)
    r_first = torch.cumsum(r_count, 0) - r_count
    need = torch.where(r_packed, r_n * r_w, (r_w + 7) >> 3)  # the bytes each run says it holds
    ends_t = small(ends, dev)
    # An RLE run's value lies in ceil(width / 8) bytes; bits above the width mean a corrupt run
    # (pyarrow reads the whole bytes and refuses the level or index they make).
    r_value = le_bytes(buf, r_pos + r_hl, 4) & ((1 << (((r_w + 7) >> 3) * 8)) - 1)
    # Every check of the runs, and the values' total, cross to the host together: one
    # synchronisation per call on a GPU (they were six), before anything is gathered.
    # (The value reads above stay in the buffer's padding: every stream lies in the buffer.)
    total = r_count.sum()
    checks = torch.stack([(((r_pos + r_hl + need) > ends_t[r_sid]).any() | (r_w > 32).any()).long(),
                          (total != counts.sum()).long(),
                          ((r_value >> r_w) != 0).logical_and_(~r_packed).any().long(),
                          total]).tolist()
    if checks[0]:
        raise ValueError("a run of RLE/bit-packed values runs past its stream")
    if checks[1]:
        raise ValueError("RLE/bit-packed streams hold fewer values than their pages say")
    if checks[2]:
        raise ValueError("an RLE run's value does not fit its bit width")
    total = checks[3]
    run = torch.repeat_interleave(torch.arange(heads.numel(), device=dev), r_count, output_size=total)
    j = torch.arange(total, device=dev) - r_first[run]
    packed_v = r_packed[run]
    bitpos = torch.where(packed_v, (r_pos[run] + r_hl[run]) * 8 + j * r_w[run], 0)
    vals = torch.where(packed_v, unpack(buf, bitpos, r_w[run], wide=False), r_value[run])
    return vals, offsets

