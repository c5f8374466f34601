"""Count the pages of a column chunk by walking its page headers.

pyarrow exposes row groups and column chunks but not pages, so this reads the Thrift
compact-protocol ``PageHeader`` of each page (type, sizes, encoding) and skips the page body.
Only the fields needed are decoded; everything else is skipped by type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
             6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}


class _Reader:
    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, ctype: int) -> None:
        if ctype in (1, 2):          # bool true/false: value is in the type
            return
        if ctype == 3:               # byte
            self.pos += 1
        elif ctype in (4, 5, 6):     # i16, i32, i64
            self.varint()
        elif ctype == 7:             # double
            self.pos += 8
        elif ctype == 8:             # binary
            n = self.varint()
            self.pos += n
        elif ctype in (9, 10):       # list, set
            h = self.byte()
            size, et = h >> 4, h & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                self.skip(et)
        elif ctype == 11:            # map
            size = self.varint()
            if size:
                kv = self.byte()
                for _ in range(size):
                    self.skip(kv >> 4)
                    self.skip(kv & 0x0F)
        elif ctype == 12:            # struct
            self.struct(lambda fid, t: False)
        else:
            raise ValueError(f"bad thrift type {ctype}")

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
        r = _Reader(data, pos)
        f: dict = {"type": 0, "unc": 0, "comp": 0, "nv": 0, "enc": None}

        def sub(fid, ctype):  # data_page_header / dictionary_page_header / data_page_header_v2
            if fid == 1 and ctype == 5:
                f["nv"] = r.zigzag()
                return True
            if fid == 2 and ctype == 5:
                f["enc"] = r.zigzag()
                return True
            return False

        def top(fid, ctype):
            if fid == 1 and ctype == 5:
                f["type"] = r.zigzag()
            elif fid == 2 and ctype == 5:
                f["unc"] = r.zigzag()
            elif fid == 3 and ctype == 5:
                f["comp"] = r.zigzag()
            elif fid in (5, 7, 8) and ctype == 12:
                r.struct(sub)
            else:
                return False
            return True

        r.struct(top)
        pages.append(PageInfo(PAGE_TYPES.get(f["type"], str(f["type"])), f["comp"], f["unc"], f["nv"],
                              ENCODINGS.get(f["enc"], str(f["enc"]))))
        pos = r.pos + f["comp"]
        if f["comp"] < 0:
            raise ValueError("corrupt page header")
    return pages


def column_chunk_pages(path: str, cc) -> list[PageInfo]:
    start = cc.data_page_offset
    if cc.has_dictionary_page and cc.dictionary_page_offset and cc.dictionary_page_offset < start:
        start = cc.dictionary_page_offset
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, cc.total_compressed_size, start)
    finally:
        os.close(fd)
    return read_pages(data)
