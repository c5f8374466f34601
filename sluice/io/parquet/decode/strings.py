"""Byte-array values (PLAIN, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY) as (source, length).

Each value is described by where its bytes lie: for plain and delta-length strings, a start
in the page buffer; for DELTA_BYTE_ARRAY (prefix shared with the previous value + suffix),
every byte's source, resolved by pointer doubling through the chain of shared prefixes.
:func:`materialise` gathers the bytes into an Arrow string array.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.io.parquet.decode.bits import chain_heads, gather, le_bytes, small, spans
from sluice.io.parquet.decode.delta import decode_delta


def _segment_excl_cumsum(x: torch.Tensor, seg: torch.Tensor, seg_first: torch.Tensor) -> torch.Tensor:
    """Exclusive prefix sum of ``x`` restarting at each segment (``seg``: segment of each
    element, ``seg_first``: index of each segment's first element)."""
    c = torch.cumsum(x, 0) - x
    return c - c[torch.clamp(seg_first, max=max(int(x.numel()) - 1, 0))][seg] if x.numel() else c


def plain(buf: torch.Tensor, starts: list[int], ends: list[int], most: int | None = None
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Length-prefixed values in each stream: (start of each value's bytes, its length);
    ``most`` bounds any stream's value count (default: its bytes / 4)."""
    dev = buf.device
    pos, sid, first = spans(starts, ends, dev)
    if pos.numel() == 0:
        z = torch.zeros(0, dtype=torch.long, device=dev)
        return z, z
    nxt_abs = le_bytes(buf, pos, 4).add_(4).add_(pos)  # where a value starting here would end
    del pos  # (every tensor here is as long as the pages' bytes: hold as few as possible)
    longest = max(e - s for s, e in zip(starts, ends)) // 4 + 1
    heads = chain_heads(nxt_abs, sid, first, starts, ends, min(longest, most or longest))
    h_sid = sid[heads]
    del sid, nxt_abs
    st = small(starts, dev)
    at = heads + gather(st - first, h_sid)
    length = le_bytes(buf, at, 4)
    if bool((at + 4 + length > small(ends, dev)[h_sid]).any()):
        raise ValueError("a byte array runs past its page")
    return at + 4, length


def delta_length(buf: torch.Tensor, host, starts: list[int], ends: list[int], most: list[int]
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """DELTA_LENGTH_BYTE_ARRAY: the lengths (a delta stream), then the bytes back to back."""
    dev = buf.device
    lengths, hdrs, data_at = decode_delta(buf, host, starts, ends, most)
    counts = small([h.total for h in hdrs], dev)
    seg = torch.repeat_interleave(torch.arange(len(hdrs), device=dev), counts, output_size=sum(h.total for h in hdrs))
    seg_first = torch.cumsum(counts, 0) - counts
    # Each length within its page's bytes (so their sum cannot wrap past int64), then their sum:
    # one check before any byte is gathered.
    room = small(ends, dev) - data_at
    fits = (lengths >= 0) & (lengths <= room[seg])
    total = torch.zeros(len(hdrs), dtype=torch.long, device=dev).index_add_(0, seg, torch.where(fits, lengths, 0))
    if not bool(torch.cat([fits, total <= room]).all()):
        raise ValueError("DELTA_LENGTH_BYTE_ARRAY lengths run past their page")
    return data_at[seg] + _segment_excl_cumsum(lengths, seg, seg_first), lengths


def delta_bytes(buf: torch.Tensor, host, starts: list[int], ends: list[int], most: list[int]
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DELTA_BYTE_ARRAY: prefix lengths (a delta stream), then the suffixes (delta-length).
    Returns (source of every byte of every value, lengths, value offsets into the sources)."""
    dev = buf.device
    prefix, hdrs, after = decode_delta(buf, host, starts, ends, most)
    suf_start, suf_len = delta_length(buf, host, after.tolist(), ends, most)
    counts = small([h.total for h in hdrs], dev)
    if prefix.numel() != suf_len.numel():
        raise ValueError("DELTA_BYTE_ARRAY prefixes and suffixes differ in number")
    length = prefix + suf_len
    # A prefix is shared with the previous value of its page: never longer than it, none first.
    first = torch.zeros(int(prefix.numel()), dtype=torch.bool, device=dev)
    first[(torch.cumsum(counts, 0) - counts)[counts > 0]] = True
    prev_len = torch.cat([length.new_zeros(1), length[:-1]])
    if bool(((prefix < 0) | (prefix > torch.where(first, 0, prev_len))).any()):
        raise ValueError("a DELTA_BYTE_ARRAY prefix is longer than the value before it")
    total = int(length.sum())
    off = torch.cumsum(length, 0) - length
    v = torch.repeat_interleave(torch.arange(int(length.numel()), device=dev), length)
    i = torch.arange(total, device=dev) - off[v]
    # A byte inside the shared prefix is the same byte of the previous value (an index into
    # the output, marked >= 0); one in the suffix is a buffer position (encoded as -1 - pos).
    inside = i < prefix[v]
    prev = torch.clamp(v - 1, min=0)
    src = torch.where(inside, off[prev] + i, -1 - (suf_start[v] + i - prefix[v]))
    steps = max(1, int(counts.max()).bit_length()) if counts.numel() else 1
    for _ in range(steps):
        hop = src >= 0
        src = torch.where(hop, src[torch.clamp(src, min=0)], src)
    if bool((src >= 0).any()):
        raise ValueError("corrupt DELTA_BYTE_ARRAY page")
    return -1 - src, length, off


def materialise(buf: torch.Tensor, byte_src: torch.Tensor, lengths: torch.Tensor) -> pa.Array:
    """An Arrow string array of values whose bytes are ``buf[byte_src]``, ``lengths`` long."""
    data = gather(buf, byte_src).cpu().numpy() if byte_src.numel() else np.zeros(0, np.uint8)
    lens = lengths.cpu().numpy()
    if int(lens.sum()) >= 2**31:
        raise ValueError("string values over 2 GiB in one read task")
    offsets = np.zeros(len(lens) + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    arr = pa.Array.from_buffers(pa.string(), len(lens), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    arr.validate(full=True)  # UTF-8, as pyarrow checks when it reads strings
    return arr


def byte_sources(starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Every byte position of values that start at ``starts`` and are ``lengths`` long."""
    dev = starts.device
    v = torch.repeat_interleave(torch.arange(int(lengths.numel()), device=dev), lengths)
    shift = starts - (torch.cumsum(lengths, 0) - lengths)  # a value's bytes: start + (i - its offset)
    return torch.arange(int(v.numel()), device=dev).add_(gather(shift, v))
