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


def leaf_paths(md: pq.FileMetaData) -> list[str]:
    """Each leaf column's dotted path (``id``, ``s.a``, ``tags.list.element``)."""
    return [md.schema.column(j).path for j in range(md.num_columns)]


def leaf_index(md: pq.FileMetaData, name: str) -> int:
    """The leaf column of top-level column ``name`` that is one leaf (not nested). By path,
    not by ``schema.names`` (leaf names: a struct's field ``id`` before a column ``id``
    was taken for it)."""
    try:
        return leaf_paths(md).index(name)
    except ValueError:
        raise KeyError(name) from None


def leaf_indexes(md: pq.FileMetaData, name: str) -> list[int]:
    """Every leaf column of top-level column ``name`` (one for a flat column, all the
    leaves below a LIST, STRUCT or MAP)."""
    return [j for j, p in enumerate(leaf_paths(md)) if p == name or p.startswith(name + ".")]


def column_chunk_ranges(md: pq.FileMetaData, row_groups: list[int], columns: list[str]) -> list[tuple[int, int]]:
    """(offset, length) of each selected column chunk, merged when close together."""
    idx = [j for c in columns for j in leaf_indexes(md, c)]
    return merge_spans(chunk_span(md.row_group(rg).column(j)) for rg in row_groups for j in idx)
