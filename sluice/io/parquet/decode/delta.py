"""DELTA_BINARY_PACKED integers and the two delta string encodings built on it.

A delta stream: a header (block size, miniblocks per block, value count, first value), then
blocks of (min delta, one bit width per miniblock, the miniblocks bit-packed). Blocks differ in
size, so they are found with :func:`bits.follow`; every value is then the first value plus a
segmented prefix sum of ``min delta + unpacked`` (wrapping, as the format specifies).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.io.parquet.decode.bits import chain_heads, gather, small, spans, unpack, varint, zigzag
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


#: Bounds of a header's fields (Arrow reads the block size, miniblock count and value count as
#: 32-bit integers): they keep every position computed from them far inside int64.
_MAX_BLOCK = 1 << 31


def read_header(host, pos: int) -> DeltaHeader:
    r = CompactReader(host, pos)
    try:
        block, minis, total = r.varint(), r.varint(), r.varint()
        first = r.zigzag()
    except IndexError:  # read past the page buffer, on the host
        raise ValueError("corrupt DELTA_BINARY_PACKED header: it runs past its page") from None
    if block <= 0 or minis <= 0 or block % minis or (block // minis) % 8 or block >= _MAX_BLOCK \
            or total >= _MAX_BLOCK:
        raise ValueError("corrupt DELTA_BINARY_PACKED header")
    first = (first + (1 << 63)) % (1 << 64) - (1 << 63)  # int64, wrapping as the format's values do
    return DeltaHeader(block, minis, total, first, r.pos)


def decode_delta(buf: torch.Tensor, host, starts: list[int], ends: list[int], most: list[int]
                 ) -> tuple[torch.Tensor, list[DeltaHeader], torch.Tensor]:
    """Decode delta streams starting at ``starts`` (within ``ends``), each of at most
    ``most[i]`` values (its page's). Returns all values concatenated (int64), the headers
    (value counts: ``h.total``), and where each stream ends (int64 tensor: the encoded strings
    of DELTA_LENGTH_BYTE_ARRAY start there).

    Nothing is gathered past a stream before its sizes are checked: the headers on the host
    (every block takes at least a byte and its miniblocks' widths), the blocks found and the
    last one's miniblocks in one check on the device, and only then are the values unpacked."""
    dev = buf.device
    hdrs = [read_header(host, s) for s in starts]
    if any(h.total > m or h.blocks_at > e or h.nblocks * (1 + h.minis) > e - h.blocks_at
           for h, m, e in zip(hdrs, most, ends)):
        raise ValueError("a DELTA_BINARY_PACKED header claims more values than its page holds")
    # The blocks' region, bounded by the most a stream's blocks can take.
    b_starts = [h.blocks_at for h in hdrs]
    b_ends = [min(e, h.blocks_at + h.nblocks * (10 + h.minis + h.block * 8)) for h, e in zip(hdrs, ends)]
    total = sum(h.total for h in hdrs)
    counts = small([h.total for h in hdrs], dev)
    offsets = torch.cumsum(counts, 0) - counts
    firsts = small([h.first for h in hdrs], dev)
    if total == 0:
        return torch.zeros(0, dtype=torch.long, device=dev), hdrs, small(b_starts, dev)
    m_t = small([h.minis for h in hdrs], dev)
    vpm_t = small([h.per_mini for h in hdrs], dev)
    bs_t = small([h.block for h in hdrs], dev)
    nb_t = small([h.nblocks for h in hdrs], dev)
    end_t = small(ends, dev)

    pos, sid, first = spans(b_starts, b_ends, dev)
    have_blocks = any(h.nblocks for h in hdrs)
    if have_blocks:
        npos = int(pos.numel())
        mind, hl = varint(buf, pos)
        m = m_t[sid]
        # Every byte read as a miniblock's bit width (a corrupt width, above 64, is counted as
        # 65: checked below, on the miniblocks that hold values), and their prefix sums: the
        # widths of a block's miniblocks, wherever it starts, without a (byte, miniblock) table.
        wb = torch.clamp(gather(buf, pos), max=65).long()
        csum = torch.cat([wb.new_zeros(1), torch.cumsum(wb, 0)])
        big = torch.cat([wb.new_zeros(1), torch.cumsum(wb > 64, 0)])
        at = torch.arange(npos, device=dev)
        wfrom = at + hl  # index (into the region's bytes) of a block's first width
        data_abs = pos + hl + m
        inside = data_abs <= gather(small(b_ends, dev), sid)
        wto = torch.where(inside, wfrom + m, wfrom).clamp_(max=npos)
        wfrom.clamp_(max=npos)
        # Where a block starting at each byte would end (its widths past the region: past it).
        nxt_abs = torch.where(inside, data_abs + gather(csum, wto).sub_(gather(csum, wfrom)) * vpm_t[sid] // 8,
                              end_t[sid])
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
        h_data = data_abs[heads]
        h_w0 = wfrom[heads]
        s_head0 = torch.cumsum(nb_t, 0) - nb_t
        # The miniblocks holding values: all of a block's but in each stream's last block.
        last = s_head0 + nb_t - 1
        has = nb_t > 0
        lastc = torch.clamp(last, min=0)
        rem = (counts - 1) - (nb_t - 1) * bs_t
        needed = torch.where(has, (rem + vpm_t - 1) // vpm_t, 0)
        used = m_t[h_sid].scatter(0, lastc[has], needed[has])
        u_to = torch.clamp(h_w0 + used, max=npos)
        # Where each stream ends: after its last block's miniblocks that hold values.
        ends_t = torch.where(has, h_data[lastc] + (csum[u_to[lastc]] - csum[h_w0[lastc]]) * vpm_t // 8,
                             small(b_starts, dev))
        # One check before any value is unpacked: every block's widths inside its region (the
        # last block's: no block follows it to say so), no miniblock holding values wider
        # than 64 bits, and the values inside the page.
        ok = torch.cat([inside[heads], big[u_to] == big[h_w0], ends_t <= end_t])
        if not bool(ok.all()):
            raise ValueError("DELTA_BINARY_PACKED values run past their page (or a miniblock is wider "
                             "than 64 bits)")
    else:
        ends_t = small(b_starts, dev)
    # Every value: 0 is the first value, k >= 1 the (k-1)th delta.
    vsid = torch.repeat_interleave(torch.arange(len(hdrs), device=dev), counts, output_size=total)
    k = torch.arange(total, device=dev) - offsets[vsid]
    vals = firsts[vsid].clone()
    if have_blocks:
        d = torch.clamp(k - 1, min=0)
        bs = bs_t[vsid]
        vpm = vpm_t[vsid]
        hb = torch.clamp(s_head0[vsid] + d // bs, max=max(int(heads.numel()) - 1, 0))
        wi = h_w0[hb] + (d % bs) // vpm  # the byte of the value's miniblock's width
        w = wb[torch.clamp(wi, max=npos - 1)]
        bit = h_data[hb] * 8 + (csum[wi] - csum[h_w0[hb]]) * vpm + (d % vpm) * w
        delta = h_min[hb] + unpack(buf, bit, w)
        vals = torch.where(k > 0, delta, vals)
    c = torch.cumsum(vals, 0)
    o = torch.clamp(offsets, max=total - 1)  # (an empty stream last: its offset is the end)
    out = c - (c[o] - vals[o])[vsid]
    return out, hdrs, ends_t
