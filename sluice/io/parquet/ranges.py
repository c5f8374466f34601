"""Which bytes of a Parquet file a scan reads: each column chunk's span, close spans merged
(read by :mod:`sluice.io.parquet.fetch`)."""

from __future__ import annotations

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
