"""Count the pages of a column chunk by walking its page headers (for ``inspect``/``doctor``).

The headers are parsed by :mod:`sluice.io.parquet.thrift`, which the device decoder shares.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.io.parquet.fetch import read_bytes
from sluice.io.parquet.ranges import chunk_span
from sluice.io.parquet.thrift import read_page_header


@dataclass
class PageInfo:
    type: str
    compressed: int
    uncompressed: int
    num_values: int
    encoding: str


def read_pages(data: bytes) -> list[PageInfo]:
    """Parse the pages of one column chunk held in ``data``."""
    pages: list[PageInfo] = []
    pos = 0
    while pos < len(data):
        h = read_page_header(data, pos)
        pages.append(PageInfo(h.type, h.compressed, h.uncompressed, h.num_values, h.encoding))
        pos = h.body + h.compressed
    return pages


def column_chunk_pages(path: str, cc) -> list[PageInfo]:
    return read_pages(bytes(read_bytes(path, [chunk_span(cc)])))
