"""A column chunk's page headers as numpy arrays, read once per file version and cached with the
footers (:meth:`~sluice.io.parquet.metadata.MetadataCache.page_index`), so a repeat scan turns a
read task's pages into the kernels' descriptors with a few numpy operations -- no Python per
page per query. Header offsets are relative to the chunk's first byte, which is where the fetch
puts it every time (:func:`~sluice.io.parquet.fetch.fetch_chunks`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sluice.io.parquet.thrift import ENCODINGS, read_page_headers

#: page kinds in :attr:`PageIndex.kind`
V1, V2, DICT_PAGE = 0, 1, 2
_KIND = {"DATA_PAGE": V1, "DATA_PAGE_V2": V2, "DICTIONARY_PAGE": DICT_PAGE}
#: encoding name -> code in :attr:`PageIndex.encoding` (Parquet's own numbers)
ENCODING_CODE = {name: code for code, name in ENCODINGS.items()}


@dataclass(frozen=True)
class PageIndex:
    """One column chunk's pages (index pages left out), in order."""

    kind: np.ndarray        # int8: V1, V2, DICT_PAGE
    num_values: np.ndarray  # int64: values incl. NULLs (dictionary page: entries)
    encoding: np.ndarray    # int16: Parquet's encoding number
    body: np.ndarray        # int64: offset of the body in the chunk's bytes
    compressed: np.ndarray  # int64: body bytes as stored
    uncompressed: np.ndarray  # int64: body bytes once decompressed (v2: levels + values)
    rep_bytes: np.ndarray   # int64 (v2)
    def_bytes: np.ndarray   # int64 (v2)
    compressed_values: np.ndarray  # bool (v2: whether the values section is compressed)
    crc: np.ndarray         # int64: the page CRC-32, -1 where the writer put none
    chunk_bytes: int

    @property
    def data(self) -> np.ndarray:
        return self.kind != DICT_PAGE


def read_index(data, expect: int | None = None) -> PageIndex:
    """The pages of the column chunk ``data`` (its bytes as stored), checked against the footer's
    value count ``expect`` and against their own sizes (a corrupt header is a ValueError)."""
    try:
        headers = [h for h in read_page_headers(data) if h.type in _KIND]
    except IndexError:  # a header read past the chunk's bytes (on the host)
        raise ValueError("corrupt page header: it runs past its column chunk") from None
    kind = np.array([_KIND[h.type] for h in headers], dtype=np.int8)
    idx = PageIndex(
        kind=kind,
        num_values=np.array([h.num_values for h in headers], dtype=np.int64),
        encoding=np.array([ENCODING_CODE.get(h.encoding, -1) for h in headers], dtype=np.int16),
        body=np.array([h.body for h in headers], dtype=np.int64),
        compressed=np.array([h.compressed for h in headers], dtype=np.int64),
        uncompressed=np.array([h.uncompressed for h in headers], dtype=np.int64),
        rep_bytes=np.array([h.rep_bytes for h in headers], dtype=np.int64),
        def_bytes=np.array([h.def_bytes for h in headers], dtype=np.int64),
        compressed_values=np.array([h.compressed_values for h in headers], dtype=bool),
        crc=np.array([-1 if h.crc is None else h.crc for h in headers], dtype=np.int64),
        chunk_bytes=len(data),
    )
    values = int(idx.num_values[idx.data].sum())
    if expect is not None and values != expect:
        raise ValueError(f"the pages hold {values} values, the footer says {expect}")
    v2 = kind == V2
    lv = idx.rep_bytes + idx.def_bytes
    # v2 levels lie (uncompressed) at the start of the page, as Arrow checks.
    if (v2 & ((np.minimum(idx.rep_bytes, idx.def_bytes) < 0) |
              (lv > np.minimum(idx.compressed, idx.uncompressed)))).any():
        raise ValueError("corrupt page header: its levels' lengths do not fit the page")
    return idx
