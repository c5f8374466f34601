"""Parquet page headers: the Thrift compact protocol, read field by field.

pyarrow exposes row groups and column chunks but not pages, and a decoder of our own (the
device decoder of :mod:`sluice.io.parquet.decode`) needs each page's type, sizes, value count
and encodings. Page headers are never compressed, so they are read on the host from the
column chunk's bytes as stored; only the fields used are decoded and the rest skipped by type.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
             6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}


class CompactReader:
    """A cursor over Thrift compact-protocol bytes."""

    def __init__(self, buf, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        n, self.pos = _read_varint(self.buf, self.pos)
        return n

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, ctype: int) -> None:
        self.pos = skip_value(self.buf, self.pos, ctype)

    def struct(self, on_field) -> None:
        """Read a struct; ``on_field(id, type)`` returns True when it consumed the value."""
        last = 0
        while True:
            h = self.byte()
            if h == 0:
                return
            delta, ctype = h >> 4, h & 0x0F
            fid = last + delta if delta else self.zigzag()
            last = fid
            if not on_field(fid, ctype):
                self.skip(ctype)


def _varint_end(buf, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


def _read_varint(buf, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def skip_value(buf, pos: int, ctype: int) -> int:
    """Where the value of compact type ``ctype`` at ``pos`` ends: the fields a reader does not
    use, skipped in one function with local variables (a footer's row groups are most of it:
    TPC-H SF 10 lineitem's 524 took 0.42 s through a method call per byte, 0.1 s so)."""
    if ctype <= 2:               # bool in a struct field: the value is in the type
        return pos
    if ctype == 3:               # byte
        return pos + 1
    if ctype <= 6:               # i16, i32, i64: zigzag varints
        return _varint_end(buf, pos)
    if ctype == 7:               # double
        return pos + 8
    if ctype == 8:               # binary: varint length, then the bytes
        n, pos = _read_varint(buf, pos)
        return pos + n
    if ctype == 12:              # struct: fields until a stop byte
        while True:
            h = buf[pos]
            pos += 1
            if h == 0:
                return pos
            t = h & 0x0F
            if not h >> 4:       # a field id of its own (zigzag i16) where the delta does not fit
                pos = _varint_end(buf, pos)
            if t <= 2:
                continue
            if 4 <= t <= 6:
                pos = _varint_end(buf, pos)
            else:
                pos = skip_value(buf, pos, t)
    if ctype in (9, 10):         # list, set: a header with size and element type
        h = buf[pos]
        pos += 1
        size, et = h >> 4, h & 0x0F
        if size == 15:
            size, pos = _read_varint(buf, pos)
        if et <= 3:              # bools (a byte each in a list) and bytes
            return pos + size
        if et <= 6:
            for _ in range(size):
                pos = _varint_end(buf, pos)
            return pos
        if et == 7:
            return pos + 8 * size
        for _ in range(size):
            pos = skip_value(buf, pos, et)
        return pos
    if ctype == 11:              # map: varint size, then a byte of key and value types
        size, pos = _read_varint(buf, pos)
        if size:
            kv = buf[pos]
            pos += 1
            kt, vt = kv >> 4, kv & 0x0F
            for _ in range(size):
                pos = skip_value(buf, pos, kt) if kt > 2 else pos + 1
                pos = skip_value(buf, pos, vt) if vt > 2 else pos + 1
        return pos
    raise ValueError(f"bad thrift type {ctype}")


@dataclass(slots=True)
class PageHeader:
    """One page: where its body lies in the column chunk's bytes, and how it is encoded."""

    type: str
    compressed: int          # body bytes as stored
    uncompressed: int        # body bytes once decompressed (v2: levels + values)
    num_values: int          # values including NULLs (dictionary page: dictionary entries)
    encoding: str
    body: int                # offset of the body in the buffer the header was read from
    num_nulls: int = -1      # v2 only
    def_bytes: int = 0       # v2: definition levels' bytes (stored uncompressed, before the values)
    rep_bytes: int = 0       # v2: repetition levels' bytes
    compressed_values: bool = True  # v2: whether the values section is compressed
    crc: int | None = None   # CRC-32 of the body as stored, where the writer put one (unsigned)


def read_page_header(buf, pos: int) -> PageHeader:
    """Parse the page header at ``pos`` of ``buf`` (bytes, bytearray or memoryview)."""
    r = CompactReader(buf, pos)
    f: dict = {"type": 0, "unc": 0, "comp": 0, "nv": 0, "enc": None, "nulls": -1, "dl": 0, "rl": 0, "isc": True,
               "crc": None}

    def v1(fid, ctype):  # DataPageHeader / DictionaryPageHeader
        if fid == 1 and ctype == 5:
            f["nv"] = r.zigzag()
        elif fid == 2 and ctype == 5:
            f["enc"] = r.zigzag()
        else:
            return False
        return True

    def v2(fid, ctype):  # DataPageHeaderV2
        key = {1: "nv", 2: "nulls", 4: "enc", 5: "dl", 6: "rl"}.get(fid)
        if key is not None and ctype == 5:
            f[key] = r.zigzag()
        elif fid == 7 and ctype in (1, 2):
            f["isc"] = ctype == 1
        else:
            return False
        return True

    def top(fid, ctype):
        if fid == 1 and ctype == 5:
            f["type"] = r.zigzag()
        elif fid == 2 and ctype == 5:
            f["unc"] = r.zigzag()
        elif fid == 3 and ctype == 5:
            f["comp"] = r.zigzag()
        elif fid == 4 and ctype == 5:
            f["crc"] = r.zigzag() & 0xFFFFFFFF
        elif fid in (5, 7) and ctype == 12:
            r.struct(v1)
        elif fid == 8 and ctype == 12:
            r.struct(v2)
        else:
            return False
        return True

    seen: set = set()

    def tracked(fid, ctype):
        used = top(fid, ctype)
        if used:
            seen.add(fid)
        return used

    r.struct(tracked)
    # As strict as Arrow's reader: the required fields, a known page type with its header.
    sub = {0: 5, 2: 7, 3: 8}.get(f["type"])
    if not {1, 2, 3} <= seen or f["type"] not in PAGE_TYPES or (sub is not None and sub not in seen) \
            or f["comp"] < 0 or f["unc"] < 0 or f["nv"] < 0 or (sub is not None and f["enc"] not in ENCODINGS):
        raise ValueError("corrupt page header")
    return PageHeader(PAGE_TYPES.get(f["type"], str(f["type"])), f["comp"], f["unc"], f["nv"],
                      ENCODINGS.get(f["enc"], str(f["enc"])), r.pos, f["nulls"], f["dl"], f["rl"], f["isc"],
                      f["crc"])


def read_page_headers(buf, start: int = 0, end: int | None = None) -> list[PageHeader]:
    """The headers of the pages of one column chunk held in ``buf[start:end]``."""
    end = len(buf) if end is None else end
    pages: list[PageHeader] = []
    pos = start
    while pos < end:
        h = read_page_header(buf, pos)
        pages.append(h)
        pos = h.body + h.compressed
    if pos != end:
        raise ValueError("page headers overrun their column chunk")
    return pages
