"""Storage stage of a scan: read the byte ranges of the selected column chunks, then let
pyarrow decode from memory.

Separating the two makes the storage read measurable on its own (bytes, time, bandwidth)
and keeps decoding off the disk.
"""

from __future__ import annotations

import os
import threading

import pyarrow.parquet as pq

#: Ranges closer than this are read with one request (fewer syscalls, a little more data).
COALESCE_GAP = 64 << 10


def column_chunk_ranges(md: pq.FileMetaData, row_groups: list[int], columns: list[str]) -> list[tuple[int, int]]:
    """(offset, length) of each selected column chunk, merged when close together."""
    names = md.schema.names
    idx = [names.index(c) for c in columns]
    spans = []
    for rg in row_groups:
        r = md.row_group(rg)
        for j in idx:
            cc = r.column(j)
            start = cc.data_page_offset
            if cc.has_dictionary_page and cc.dictionary_page_offset and cc.dictionary_page_offset < start:
                start = cc.dictionary_page_offset
            spans.append((start, cc.total_compressed_size))
    spans.sort()
    merged: list[list[int]] = []
    for off, ln in spans:
        if merged and off <= merged[-1][0] + merged[-1][1] + COALESCE_GAP:
            end = max(merged[-1][0] + merged[-1][1], off + ln)
            merged[-1][1] = end - merged[-1][0]
        else:
            merged.append([off, ln])
    return [(o, ln) for o, ln in merged]


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
