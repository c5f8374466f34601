"""Storage stage of a scan: read the byte ranges of the selected column chunks, then let
pyarrow decode from memory.

Separating the two makes the storage read measurable on its own (bytes, time, bandwidth)
and keeps decoding off the disk.
"""

from __future__ import annotations

import bisect
import os
import threading

import pyarrow.parquet as pq

#: Ranges closer than this are read with one request (fewer syscalls, a little more data).
COALESCE_GAP = 64 << 10


def chunk_span(cc) -> tuple[int, int]:
    """(offset, length) of one column chunk, its dictionary page included."""
    start = cc.data_page_offset
    if cc.has_dictionary_page and cc.dictionary_page_offset and cc.dictionary_page_offset < start:
        start = cc.dictionary_page_offset
    return start, cc.total_compressed_size


def merge_spans(spans) -> list[tuple[int, int]]:
    """Sorted (offset, length) spans merged where they lie within COALESCE_GAP of each other."""
    merged: list[list[int]] = []
    for off, ln in sorted(spans):
        if merged and off <= merged[-1][0] + merged[-1][1] + COALESCE_GAP:
            merged[-1][1] = max(merged[-1][0] + merged[-1][1], off + ln) - merged[-1][0]
        else:
            merged.append([off, ln])
    return [(o, ln) for o, ln in merged]


def column_chunk_ranges(md: pq.FileMetaData, row_groups: list[int], columns: list[str]) -> list[tuple[int, int]]:
    """(offset, length) of each selected column chunk, merged when close together."""
    idx = [md.schema.names.index(c) for c in columns]
    return merge_spans(chunk_span(md.row_group(rg).column(j)) for rg in row_groups for j in idx)


_scratch = threading.local()


def read_ranges(path: str, ranges: list[tuple[int, int]]) -> int:
    """Read the ranges from storage into a reused per-thread scratch buffer; returns bytes
    read. This is the measured storage stage: the pages it brings in are then decoded by
    pyarrow from the page cache (a memcpy), so no file-sized buffer is ever allocated."""
    need = max((ln for _, ln in ranges), default=0)
    buf = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < need:
        buf = _scratch.buf = bytearray(max(need, 1 << 20))
    view = memoryview(buf)
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in ranges:
            got = os.preadv(fd, [view[:ln]], off)
            if got != ln:
                raise OSError(f"short read at {off}: {got} of {ln} bytes")
            total += got
    finally:
        os.close(fd)
    return total


def fetch_chunks(path: str, md: pq.FileMetaData, row_groups: list[int], columns: list[str], pinned: bool = False
                 ) -> tuple[dict[str, list[tuple[memoryview, str, int]]], int]:
    """Read the column chunks of ``columns`` in ``row_groups`` and keep their bytes, for a
    decoder of our own (the torch decoder): per column, (bytes as stored, codec, value count
    the footer gives) per row group in order, and the bytes read. Close ranges are read with one request, as above."""
    names = md.schema.names
    want = []
    for rg in row_groups:
        r = md.row_group(rg)
        for c in columns:
            cc = r.column(names.index(c))
            want.append((c, *chunk_span(cc), cc.compression, cc.num_values))
    # A chunk of no values holds no page worth reading (pyarrow writes an empty row group's
    # data page offset as 0: its "span" would be the file's first bytes).
    merged = merge_spans({(s, ln) for _, s, ln, _, nv in want if nv})
    blocks = []
    total = 0
    if pinned:
        # Into one page-locked buffer (KvikIO reads there when installed, else plain reads):
        # what the device decompression stages from.
        import torch

        from sluice.io.kvikio_read import read_ranges_into
        buf = torch.empty(max(1, sum(ln for _, ln in merged)), dtype=torch.uint8,
                          pin_memory=torch.cuda.is_available())
        total = read_ranges_into(path, merged, buf)
        arr = buf.numpy()  # keeps the tensor alive as long as a view of it lives
        at = 0
        for off, ln in merged:
            blocks.append((off, memoryview(arr[at:at + ln])))
            at += ln
        return _by_column(want, blocks, columns), total
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in merged:
            b = bytearray(ln)
            got = os.preadv(fd, [b], off)
            if got != ln:
                raise OSError(f"short read at {off}: {got} of {ln} bytes")
            blocks.append((off, memoryview(b)))
            total += got
    finally:
        os.close(fd)
    return _by_column(want, blocks, columns), total


def _by_column(want, blocks, columns) -> dict[str, list[tuple[memoryview, str, int]]]:
    out: dict[str, list[tuple[memoryview, str, int]]] = {c: [] for c in columns}
    starts = [o for o, _ in blocks]
    for c, s, ln, codec, nv in want:
        if not nv:
            out[c].append((memoryview(b""), codec, nv))
            continue
        off, mv = blocks[bisect.bisect_right(starts, s) - 1]
        out[c].append((mv[s - off:s - off + ln], codec, nv))
    return out
