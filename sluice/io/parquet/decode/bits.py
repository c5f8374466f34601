"""Byte- and bit-level primitives over a uint8 tensor of page bytes.

Parquet's variable-length structures (RLE runs, delta blocks, length-prefixed strings) sit one
after another, so where the next one starts depends on every one before it. :func:`follow`
finds them all without a sequential loop: it computes, at every byte position that could start
one, where the next would start, and marks the positions reachable from each stream's start by
pointer doubling (log2 of the stream length steps, each a gather and a scatter over the stream).
"""

from __future__ import annotations

import torch

from sluice.kernels.buffers import to_device

#: Zero bytes appended to every page buffer so gathers a few bytes past a value stay in bounds.
PAD = 16


def small(values: list, device, dtype=torch.long) -> torch.Tensor:
    """A tensor of a few host-known numbers (page offsets, sizes, indices) on ``device``,
    without the wait of ``torch.tensor(values, device=cuda)`` (a copy from pageable memory
    waits for the stream; counted among the decoder's waits on an H200)."""
    return to_device(torch.tensor(values, dtype=dtype), torch.device(device))


def gather(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``t[idx]`` for a 1-d ``t`` and an index of any shape (index_select: about twice as fast
    as advanced indexing on CPU)."""
    return t.index_select(0, idx.reshape(-1)).reshape(idx.shape)


def le_bytes(buf: torch.Tensor, pos: torch.Tensor, n: int) -> torch.Tensor:
    """The little-endian integer of the ``n`` bytes (n <= 8) at each of ``pos``, as int64."""
    out = gather(buf, pos).long()
    for k in range(1, n):  # in place: one byte-sized and one int64 temporary per byte read
        out.bitwise_or_(gather(buf, pos + k).long().bitwise_left_shift_(8 * k))
    return out


def unpack(buf: torch.Tensor, bitpos: torch.Tensor, width: torch.Tensor, wide: bool = True) -> torch.Tensor:
    """LSB-first bit-packed values of ``width`` bits (0..64, per element) at bit ``bitpos``;
    ``wide=False`` when no width exceeds 32 (levels, dictionary indices: half the work, and no
    look at the widths, which would wait for the device)."""
    lo = _unpack32(buf, bitpos, torch.clamp(width, max=32))
    if wide:
        hi = _unpack32(buf, bitpos + 32, torch.clamp(width - 32, min=0))
        lo = torch.where(width > 32, lo | (hi << 32), lo)
    return lo


def _unpack32(buf: torch.Tensor, bitpos: torch.Tensor, width: torch.Tensor) -> torch.Tensor:
    word = le_bytes(buf, bitpos >> 3, 5) >> (bitpos & 7)
    return word & ((1 << width) - 1)


def varint(buf: torch.Tensor, pos: torch.Tensor, max_bytes: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    """ULEB128 value (int64, wrapping past 63 bits) and length in bytes at each of ``pos``."""
    value = torch.zeros_like(pos)
    length = torch.zeros_like(pos)
    going = torch.ones_like(pos, dtype=torch.bool)
    for k in range(max_bytes):
        b = gather(buf, pos + k).long()
        value |= torch.where(going, (b & 0x7F) << (7 * k), 0)
        length += going.long()
        going = going & (b >= 0x80)
    return value, length


def zigzag(v: torch.Tensor) -> torch.Tensor:
    return ((v >> 1) & 0x7FFFFFFFFFFFFFFF) ^ -(v & 1)


def spans(starts: list[int], ends: list[int], device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every byte position of the streams [starts[i], ends[i]) in one tensor, the stream of
    each, and each stream's first index in it."""
    sizes = [e - s for s, e in zip(starts, ends)]
    lengths = small(sizes, device)
    first = torch.cumsum(lengths, 0) - lengths
    total = sum(sizes)
    sid = torch.repeat_interleave(torch.arange(len(starts), device=device), lengths, output_size=total)
    st = small(starts, device)
    pos = torch.arange(total, device=device).add_(gather(st - first, sid))
    return pos, sid, first


def follow(nxt: torch.Tensor, heads: torch.Tensor, longest: int) -> torch.Tensor:
    """Mask of the indices reachable from ``heads`` by ``i -> nxt[i]``, where ``nxt`` maps into
    ``0..len(nxt)`` and ``len(nxt)`` is the end (a sentinel). Pointer doubling: after step k,
    the first 2**(k+1) members of each chain are marked; ``longest`` bounds a chain's length
    (the caller's count of records in a stream: each step is a gather and a scatter over every
    position, so the bound matters).

    Most byte positions cannot start a record (the four bytes of text read as a length run far
    past the stream's end), so the doubling runs only over the positions that can -- those
    whose successor lies inside the stream, their successors and the heads -- compacted,
    where they are under a quarter of the positions (strings; not bit-packed runs)."""
    n = int(nxt.numel())
    dev = nxt.device
    inside = nxt < n
    cand = inside.clone()
    cand.index_fill_(0, torch.clamp(nxt, max=n - 1), True)  # successors (an extra candidate is harmless)
    cand[heads] = True
    pos = torch.nonzero(cand).reshape(-1)
    m = int(pos.numel())
    if 4 * m > n:  # not worth compacting
        pos, m = None, n
        jump = torch.cat([torch.clamp(nxt, max=n), nxt.new_tensor([n])])
        on = torch.zeros(n + 1, dtype=torch.int8, device=dev)
        on[heads] = 1
    else:
        jump = torch.cat([_rank_in(pos, gather(nxt, pos)), pos.new_tensor([m])])
        on = torch.zeros(m + 1, dtype=torch.int8, device=dev)
        on[_rank_in(pos, heads)] = 1
    steps = max(1, int(longest).bit_length())
    cpu = dev.type == "cpu"
    for k in range(steps):
        if cpu:  # mark the few members found so far (a scatter over every position costs more)
            at = torch.nonzero(on).reshape(-1)
            on[gather(jump, at)] = 1
        else:    # no host sync: every position scatters its mark
            on = on.scatter_reduce(0, jump, on, "amax")
        if k + 1 < steps:
            jump = gather(jump, jump)
    if pos is None:
        return on[:n].bool()
    out = torch.zeros(n, dtype=torch.bool, device=dev)
    out[pos] = on[:m].bool()  # positions are distinct: no boolean mask (a wait on a GPU)
    return out


def _rank_in(pos: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The index in the sorted ``pos`` of each of ``x``, or ``len(pos)`` where it is not there
    (a binary search: no table over every position)."""
    m = int(pos.numel())
    i = torch.searchsorted(pos, x)
    found = gather(pos, torch.clamp(i, max=m - 1)) == x
    return i.masked_fill_(~found, m)


def chain_heads(nxt_abs: torch.Tensor, sid: torch.Tensor, first: torch.Tensor, starts: list[int],
                ends: list[int], longest: int) -> torch.Tensor:
    """The records that follow one another from each stream's start, as indices into the
    positions of :func:`spans` -- given, at every position, where a record starting there would
    end (``nxt_abs``, absolute; overwritten); ``longest`` bounds a stream's record count.

    An end at or past its stream's end ends the chain; callers compute every end as at or
    after its position (lengths are never negative, positions never wrap), so no end indexes
    before the stream: :func:`follow`'s gathers and scatters stay in bounds on garbage too."""
    dev = nxt_abs.device
    st = small(starts, dev)
    en = small(ends, dev)
    # Relative to the positions of spans, in place (``nxt_abs`` is used up: for strings these
    # run over every byte).
    nxt = nxt_abs.add_(gather(first - st, sid))
    nxt.masked_fill_(nxt >= gather(first + (en - st), sid), nxt_abs.numel())
    nonempty = [i for i, (s, e) in enumerate(zip(starts, ends)) if e > s]
    heads = first if len(nonempty) == len(starts) else first.index_select(0, small(nonempty, dev))
    return torch.nonzero(follow(nxt, heads, longest)).reshape(-1)
