"""DELTA_BINARY_PACKED integers and the two delta string encodings built on it.

A delta stream: a header (block size, miniblocks per block, value count, first value), then
blocks of (min delta, one bit width per miniblock, the miniblocks bit-packed). Blocks differ in
size, so they are found with :func:`bits.follow`; every value is then the first value plus a
segmented prefix sum of ``min delta + unpacked`` (wrapping, as the format specifies).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.io.parquet.decode.bits import chain_heads, gather, spans, unpack, varint, zigzag
from sluice.io.parquet.thrift import CompactReader


@dataclass(slots=True)
class DeltaHeader:
    block: int
    minis: int
    total: int
    first: int
    blocks_at: int  # offset of the first block

    @property
    def per_mini(self) -> int:
        return self.block // self.minis

    @property
    def nblocks(self) -> int:
        return -(-(self.total - 1) // self.block) if self.total > 1 else 0


def read_header(host, pos: int) -> DeltaHeader:
    r = CompactReader(host, pos)
    block, minis, total = r.varint(), r.varint(), r.varint()
    first = r.zigzag()
    if block <= 0 or minis <= 0 or block % minis or (block // minis) % 8:
        raise ValueError("corrupt DELTA_BINARY_PACKED header")
    return DeltaHeader(block, minis, total, first, r.pos)


def decode_delta(buf: torch.Tensor, host, starts: list[int], ends: list[int], most: list[int]
                 ) -> tuple[torch.Tensor, list[DeltaHeader], torch.Tensor]:
    """Decode delta streams starting at ``starts`` (within ``ends``), each of at most
    ``most[i]`` values (its page's). Returns all values concatenated (int64), the headers
    (value counts: ``h.total``), and where each stream ends (int64 tensor: the encoded strings
    of DELTA_LENGTH_BYTE_ARRAY start there)."""
    dev = buf.device
    hdrs = [read_header(host, s) for s in starts]
    if any(h.total > m or h.blocks_at > e for h, m, e in zip(hdrs, most, ends)):
        raise ValueError("a DELTA_BINARY_PACKED header claims more values than its page holds")
    mmax = max((h.minis for h in hdrs), default=1)
    # The blocks' region, bounded by the most a stream's blocks can take.
    b_starts = [h.blocks_at for h in hdrs]
    b_ends = [min(e, h.blocks_at + h.nblocks * (10 + h.minis + h.block * 8)) for h, e in zip(hdrs, ends)]
    total = sum(h.total for h in hdrs)
    counts = torch.tensor([h.total for h in hdrs], dtype=torch.long, device=dev)
    offsets = torch.cumsum(counts, 0) - counts
    firsts = torch.tensor([h.first for h in hdrs], dtype=torch.long, device=dev)
    if total == 0:
        return torch.zeros(0, dtype=torch.long, device=dev), hdrs, torch.tensor(b_starts, device=dev)
    m_t = torch.tensor([h.minis for h in hdrs], dtype=torch.long, device=dev)
    vpm_t = torch.tensor([h.per_mini for h in hdrs], dtype=torch.long, device=dev)
    bs_t = torch.tensor([h.block for h in hdrs], dtype=torch.long, device=dev)
    nb_t = torch.tensor([h.nblocks for h in hdrs], dtype=torch.long, device=dev)

    pos, sid, first = spans(b_starts, b_ends, dev)
    have_blocks = any(h.nblocks for h in hdrs)
    if have_blocks:
        mind, hl = varint(buf, pos)
        m = m_t[sid]
        wcol = torch.arange(mmax, device=dev)
        widths = gather(buf, (pos + hl)[:, None] + wcol).long() * (wcol < m[:, None])
        widths = torch.clamp(widths, max=65)  # a corrupt width (checked below, on the blocks used)
        nxt_abs = pos + hl + m + widths.sum(1) * vpm_t[sid] // 8
        heads = chain_heads(nxt_abs, sid, first, b_starts, b_ends, max(h.nblocks for h in hdrs))
        h_sid = sid[heads]
        h_rank = torch.arange(heads.numel(), device=dev) - (
            torch.zeros(len(hdrs), dtype=torch.long, device=dev).scatter_reduce(
                0, h_sid, torch.arange(heads.numel(), device=dev), "amin", include_self=False))[h_sid]
        keep = h_rank < nb_t[h_sid]
        heads, h_sid = heads[keep], h_sid[keep]
        if int(heads.numel()) != sum(h.nblocks for h in hdrs):
            raise ValueError("DELTA_BINARY_PACKED blocks run past their page")
        h_min = zigzag(mind[heads])
        h_w = widths[heads]
        if bool((h_w > 64).any()):
            raise ValueError("a DELTA_BINARY_PACKED miniblock is wider than 64 bits")
        h_data = pos[heads] + hl[heads] + m_t[h_sid]
        h_cum = torch.cumsum(h_w, 1) - h_w  # widths of the miniblocks before each
        s_head0 = torch.cumsum(nb_t, 0) - nb_t
    # Every value: 0 is the first value, k >= 1 the (k-1)th delta.
    vsid = torch.repeat_interleave(torch.arange(len(hdrs), device=dev), counts)
    k = torch.arange(total, device=dev) - offsets[vsid]
    vals = firsts[vsid].clone()
    if have_blocks:
        d = torch.clamp(k - 1, min=0)
        bs = bs_t[vsid]
        vpm = vpm_t[vsid]
        hb = torch.clamp(s_head0[vsid] + d // bs, max=max(int(heads.numel()) - 1, 0))
        mini = (d % bs) // vpm
        w = h_w[hb, mini]
        bit = h_data[hb] * 8 + h_cum[hb, mini] * vpm + (d % vpm) * w
        delta = h_min[hb] + unpack(buf, bit, w)
        vals = torch.where(k > 0, delta, vals)
    c = torch.cumsum(vals, 0)
    out = c - (c[offsets] - vals[offsets])[vsid]
    # Where each stream ends: after its last block's miniblocks that hold values.
    ends_t = torch.tensor(b_starts, dtype=torch.long, device=dev)
    if have_blocks:
        last = s_head0 + nb_t - 1
        has = nb_t > 0
        lastc = torch.clamp(last, min=0)
        rem = (counts - 1) - (nb_t - 1) * bs_t
        needed = (rem + vpm_t - 1) // vpm_t
        lw = h_w[lastc]
        used = (lw * (torch.arange(mmax, device=dev) < needed[:, None])).sum(1)
        ends_t = torch.where(has, h_data[lastc] + used * vpm_t // 8, ends_t)
        if bool((ends_t > torch.tensor(ends, dtype=torch.long, device=dev)).any()):
            raise ValueError("DELTA_BINARY_PACKED values run past their page")
    return out, hdrs, ends_t
