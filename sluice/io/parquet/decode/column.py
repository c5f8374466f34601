"""Column chunks as stored -> one sluice Column, decoded with torch on the tensors' device.

Four steps: the layout (page headers read on the host from the bytes as read: where every page
will lie once decompressed, from the headers' sizes alone), decompression into that layout
(nvCOMP on the GPU where it can, :mod:`~sluice.io.parquet.decode.nvcomp`, writing every page to
its place in one batch per codec; else pyarrow's codecs on the host, :func:`decompress_on_host`,
and the page bodies cross in one buffer), the levels' lengths of v1 pages (the one field read
after decompression), and the decode proper: every step runs on the device over all pages of all
chunks at once. Columns this decoder
does not handle raise :class:`NotDecodable`, and the reader decodes them with pyarrow instead
(counted, or an error under ``strict_device``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, concat_columns, empty_column
from sluice.errors import DataError
from sluice.io.parquet.decode import strings
from sluice.io.parquet.decode.bits import PAD, gather, small
from sluice.io.parquet.decode.delta import decode_delta
from sluice.io.parquet.decode.device_bytes import DeviceBytes
from sluice.io.parquet.decode.hybrid import decode_hybrid
from sluice.io.parquet.thrift import read_page_headers
from sluice.types import LType
from sluice.arrow import widen_timestamps
from sluice.io.parquet.ranges import leaf_index

#: Parquet codec names -> pyarrow codecs (LZ4 is the Hadoop-framed variant, see _decompress).
CODECS = {"UNCOMPRESSED": None, "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli",
          "LZ4_RAW": "lz4_raw", "LZ4": "lz4"}
WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8}
DICT = ("RLE_DICTIONARY", "PLAIN_DICTIONARY")
VALUE_ENCODINGS = {"PLAIN", "RLE", "BYTE_STREAM_SPLIT", "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY",
                   "DELTA_BYTE_ARRAY", *DICT}


class NotDecodable(Exception):
    """This column (type, nesting, codec or encoding) is left to pyarrow; the reason says why."""


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    physical: str
    type_length: int
    max_def: int
    max_rep: int
    arrow_type: pa.DataType
    ltype: LType


def column_spec(md, name: str, arrow_type: pa.DataType, ltype: LType) -> ColumnSpec:
    """What the decoder needs of a column, or NotDecodable for what it leaves to pyarrow."""
    if ltype.is_nested:  # LIST / STRUCT / MAP: pyarrow assembles the levels, column by column
        raise NotDecodable("nested column")
    j = leaf_index(md, name)
    c = md.schema.column(j)
    spec = ColumnSpec(name, c.physical_type, c.length or 0, c.max_definition_level, c.max_repetition_level,
                      arrow_type, ltype)
    if spec.max_rep > 0 or spec.max_def > 1:
        raise NotDecodable("nested column")
    t = arrow_type
    if spec.physical == "INT96":
        raise NotDecodable("INT96 timestamps")
    if pa.types.is_timestamp(t) and t.unit not in ("ms", "us"):
        raise NotDecodable(f"timestamp unit {t.unit}")
    if pa.types.is_float16(t):
        raise NotDecodable("float16")
    if spec.physical == "FIXED_LEN_BYTE_ARRAY" and not pa.types.is_decimal(t):
        raise NotDecodable("fixed-length byte arrays other than decimals")
    if spec.physical == "BYTE_ARRAY" and ltype.kind != "string":
        raise NotDecodable(f"{t} stored as byte arrays")
    return spec


def _decompress(raw, codec: str, size: int) -> bytes:
    name = CODECS[codec]
    if name is None:
        return raw
    if name == "lz4":
        return _lz4_hadoop(raw, size)
    return pa.Codec(name).decompress(raw, decompressed_size=size, asbytes=True)


def _lz4_hadoop(raw, size: int) -> bytes:
    """Parquet's deprecated LZ4: blocks of (big-endian decompressed size, compressed size,
    raw LZ4), as Arrow writes it; a page that is not framed so is raw LZ4."""
    codec = pa.Codec("lz4_raw")
    mv = memoryview(raw)
    out, pos = [], 0
    try:
        while pos < len(mv):
            dsize = int.from_bytes(mv[pos:pos + 4], "big")
            csize = int.from_bytes(mv[pos + 4:pos + 8], "big")
            if pos + 8 + csize > len(mv):
                raise ValueError
            out.append(codec.decompress(mv[pos + 8:pos + 8 + csize], decompressed_size=dsize, asbytes=True))
            pos += 8 + csize
        data = b"".join(out)
        if len(data) == size:
            return data
    except (ValueError, OSError, pa.ArrowException):
        pass
    return codec.decompress(raw, decompressed_size=size, asbytes=True)


@dataclass
class _Layout:
    """Where each page of a task will lie, decompressed, in one buffer -- known from the page
    headers alone (their uncompressed sizes), before anything is decompressed, so a device
    decompressor (nvCOMP) can write every page straight to its place in one batch."""

    parts: list = field(default_factory=list)   # (bytes as stored, codec or None: copied as is, size once decompressed)
    size: int = 0
    unverified: int = 0  # compressed parts of pages without a page CRC (see :func:`_verified`)
    dicts: list = field(default_factory=list)   # (chunk, start, end, count, encoding)
    pages: list = field(default_factory=list)   # dicts per data page

    def add(self, raw, codec: str | None, size: int, verified: bool = False) -> int:
        at = self.size
        self.parts.append((raw, codec, size))
        if codec is not None and codec != "UNCOMPRESSED" and not verified:
            self.unverified += 1
        self.size += size
        return at


@dataclass
class _Stored:
    """One column chunk's pages as stored: its codec and (page header, body bytes) per page."""
    chunk: int
    codec: str
    pages: list  # (PageHeader, memoryview of the body as stored)


def _read_headers(chunks: list[tuple], spec: ColumnSpec) -> list[_Stored]:
    """Every chunk's page headers (read on the host), checked against the footer."""
    out = []
    for ci, (data, codec, *expect) in enumerate(chunks):
        if CODECS.get(codec, "?") == "?":
            raise NotDecodable(f"codec {codec}")
        try:
            headers = read_page_headers(data)
        except IndexError:  # a header read past the chunk's bytes (on the host)
            raise ValueError("corrupt page header: it runs past its column chunk") from None
        values = sum(h.num_values for h in headers if h.type in ("DATA_PAGE", "DATA_PAGE_V2"))
        if expect and values != expect[0]:
            raise ValueError(f"the pages hold {values} values, the footer says {expect[0]}")
        for h in headers:
            if h.type in ("DATA_PAGE", "DATA_PAGE_V2") and h.encoding not in VALUE_ENCODINGS:
                raise NotDecodable(f"encoding {h.encoding}")
            # v2 levels lie (uncompressed) at the start of the page, as Arrow checks.
            if h.type == "DATA_PAGE_V2" and (min(h.rep_bytes, h.def_bytes) < 0 or
                                             h.rep_bytes + h.def_bytes > min(h.compressed, h.uncompressed)):
                raise ValueError("corrupt page header: its levels' lengths do not fit the page")
        out.append(_Stored(ci, codec, [(h, memoryview(data)[h.body:h.body + h.compressed]) for h in headers]))
    return out


#: What decoding holds besides its result, measured with torch on CPU (peak resident growth
#: over a task of a million lineitem rows at SF 1, per column, ``/proc/self/status`` VmHWM):
#: 145-195 bytes per value for fixed-width and dictionary-coded columns, plus up to about 30
#: bytes per decompressed page byte where byte positions are followed (plain strings:
#: l_comment, 935 MB for 32 MB of pages). The estimate below is above every measured column.
TRANSIENT_PER_VALUE = 200
TRANSIENT_PER_BYTE = 40


def transient_bytes(values: int, page_bytes: int) -> int:
    """Bytes of temporary tensors decoding ``values`` values from ``page_bytes`` page bytes takes."""
    return TRANSIENT_PER_VALUE * values + TRANSIENT_PER_BYTE * page_bytes


def _page_cost(h) -> int:
    return transient_bytes(h.num_values, h.uncompressed)


def _batches(stored: list[_Stored], budget: int | None) -> list[list[_Stored]]:
    """Cut the data pages into batches whose decoding holds at most ``budget`` transient bytes
    (at least one page each), in order; a batch carries a chunk's dictionary page where it has
    dictionary-coded pages of that chunk (not the plain pages a dictionary overflowed into).
    One batch when there is no budget."""
    if budget is None:
        return [stored]
    batches: list[list[_Stored]] = []
    cur: list[_Stored] = []
    cost = 0
    for st in stored:
        dicts = [(h, b) for h, b in st.pages if h.type == "DICTIONARY_PAGE"]
        dict_cost = sum(_page_cost(h) for h, _ in dicts)
        part, has_dict = None, False
        for h, b in st.pages:
            if h.type == "DICTIONARY_PAGE":
                continue
            need = h.encoding in DICT and not has_dict
            c = _page_cost(h) + (dict_cost if need else 0)
            if cost + c > budget and (cur or part is not None):
                if part is not None:
                    cur.append(part)
                batches.append(cur)
                cur, cost, part, has_dict = [], 0, None, False
                need = h.encoding in DICT
                c = _page_cost(h) + (dict_cost if need else 0)
            if part is None:
                part = _Stored(st.chunk, st.codec, [])
            if need:
                part.pages[:0] = dicts
                has_dict = True
            part.pages.append((h, b))
            cost += c
        if part is None:  # a chunk without data pages
            part = _Stored(st.chunk, st.codec, list(dicts))
            cost += dict_cost
        cur.append(part)
    if cur or not batches:
        batches.append(cur)
    return batches


def _verified(h, raw) -> bool:
    """Whether the page's body as stored is known intact: its header carries a CRC-32 (Parquet's
    optional page checksum, over the body as stored) and the bytes match it. A mismatch is a
    corrupt page. nvCOMP's decoders trust their input (a garbled Snappy or Zstd stream made an
    H200 fault with an illegal address, or decode to other bytes without an error), so only
    verified pages go to the device unless ``device_decompress_unverified=true``."""
    if h.crc is None:
        return False
    if zlib.crc32(raw) != h.crc:
        raise ValueError("corrupt page: its bytes do not match the page header's CRC")
    return True


def _layout(stored: list[_Stored], spec: ColumnSpec) -> _Layout:
    lay = _Layout()
    for st in stored:
        ci, codec = st.chunk, st.codec
        for h, raw in st.pages:
            ok = _verified(h, raw)
            if h.type == "DICTIONARY_PAGE":
                at = lay.add(raw, codec, h.uncompressed, ok)
                lay.dicts.append((ci, at, lay.size, h.num_values, h.encoding))
            elif h.type == "DATA_PAGE":
                # Definition levels: a 4-byte length, then the levels (read once decompressed).
                at = lay.add(raw, codec, h.uncompressed, ok)
                lay.pages.append(dict(chunk=ci, n=h.num_values, enc=h.encoding, end=lay.size, at=at, v1=True,
                                      defs=None, v=at))
            elif h.type == "DATA_PAGE_V2":  # levels stored uncompressed ahead of the values
                lv = h.rep_bytes + h.def_bytes
                at = lay.add(raw[:lv], None, lv)
                lay.add(raw[lv:], codec if h.compressed_values else None, h.uncompressed - lv, ok)
                lay.pages.append(dict(chunk=ci, n=h.num_values, enc=h.encoding, end=lay.size, at=at, v1=False,
                                      defs=(at + h.rep_bytes, at + lv) if spec.max_def else None, v=at + lv))
    return lay


def decompress_on_host(lay: _Layout, out: memoryview) -> None:
    """Every page decompressed with pyarrow's codecs into ``out``, back to back as the layout
    places them (one copy of each page, straight into the buffer that crosses to the device)."""
    at = 0
    for raw, codec, size in lay.parts:
        body = _decompress(raw, codec, size) if codec is not None else raw
        if len(body) != size:
            raise ValueError(f"a page decompressed to {len(body)} bytes, its header says {size}")
        out[at:at + size] = body
        at += size


def _place_levels(lay: _Layout, host: memoryview, spec: ColumnSpec) -> None:
    """v1 pages: where the definition levels end and the values start, from the 4-byte length
    that leads the decompressed page (the one field of a page read after decompression)."""
    if not spec.max_def:
        return
    for p in lay.pages:
        if p["v1"]:
            dl = int.from_bytes(host[p["at"]:p["at"] + 4], "little")
            if p["at"] + 4 + dl > p["end"]:
                raise ValueError("corrupt page: its definition levels run past it")
            p["defs"] = (p["at"] + 4, p["at"] + 4 + dl)
            p["v"] = p["at"] + 4 + dl


@dataclass
class Skipped:
    """Data pages a row selection let the decoder leave alone (neither decompressed nor decoded)."""
    pages: int = 0
    of: int = 0
    nbytes: int = 0   # their compressed bytes


class ColumnPages:
    """One column's chunks with their page headers read once: what decoding them will hold
    (:meth:`estimate`, for the reservation), an optional row selection that drops the data pages
    holding no kept row (:meth:`select`), then the decode itself."""

    def __init__(self, chunks: list[tuple], spec: ColumnSpec):
        self.spec = spec
        self.stored = _read_headers(chunks, spec)
        self.keep: np.ndarray | None = None
        self.covered: np.ndarray | None = None
        self.skipped = Skipped()

    def select(self, keep: np.ndarray) -> ColumnPages:
        """Keep only the rows ``keep`` (a host mask over the chunks' rows, in order): the data
        pages holding none are left out -- where a page's rows lie is known from its header (flat
        columns: a page's value count is its row count), so this needs no page index."""
        self.stored, self.covered, self.skipped = _select_pages(self.stored, keep)
        self.keep = keep
        return self

    def page_bytes(self) -> int:
        """The pages' bytes once decompressed: the most the page buffer of a batch holds."""
        return sum(h.uncompressed for st in self.stored for h, _ in st.pages)

    def estimate(self) -> tuple[int, int]:
        """The transient bytes of decoding the pages in one batch, and of the costliest page."""
        costs = [_page_cost(h) for st in self.stored for h, _ in st.pages]
        return sum(costs), max(costs, default=0)

    def decode(self, device: torch.device, budget: int | None = None, on_device=None) -> Column:
        """The column (its kept rows, after :meth:`select`), decoded in batches of pages whose
        temporary tensors stay within ``budget`` bytes (see :func:`transient_bytes`); with
        ``on_device`` (an :class:`~sluice.io.parquet.decode.nvcomp.OnDevice`) the pages are
        decompressed on the device where it can."""
        col = _decode_pages(self.stored, self.spec, device, budget, on_device)
        if self.keep is None:
            return col
        sub = self.keep[self.covered]
        return col if sub.all() else col.filter(torch.from_numpy(sub).to(col.data.device))


def decode_column(chunks: list[tuple], spec: ColumnSpec, device: torch.device, budget: int | None = None
                  ) -> Column:
    """Decode the column chunks ``chunks`` ((bytes as stored, codec[, value count the footer
    gives, checked against the pages']) per row group, in order)."""
    return ColumnPages(chunks, spec).decode(device, budget)


def decode_rows(chunks: list[tuple], spec: ColumnSpec, device: torch.device, keep: np.ndarray,
                budget: int | None = None) -> tuple[Column, Skipped]:
    """The rows ``keep`` of the column, only the data pages holding one decoded, and what was
    skipped."""
    pages = ColumnPages(chunks, spec).select(keep)
    return pages.decode(device, budget), pages.skipped


def _select_pages(stored: list[_Stored], keep: np.ndarray) -> tuple[list[_Stored], np.ndarray, Skipped]:
    """The pages holding a kept row (a chunk's dictionary page only if a dictionary-coded page
    stays), the rows those pages cover, and what was left out."""
    covered = np.zeros(len(keep), dtype=bool)
    skipped = Skipped()
    row = 0
    out = []
    for st in stored:
        data = []
        for h, b in st.pages:
            if h.type == "DICTIONARY_PAGE":
                continue
            r0, row = row, row + h.num_values
            skipped.of += 1
            if keep[r0:row].any():
                data.append((h, b))
                covered[r0:row] = True
            else:
                skipped.pages += 1
                skipped.nbytes += h.compressed
        if any(h.encoding in DICT for h, _ in data):
            data[:0] = [(h, b) for h, b in st.pages if h.type == "DICTIONARY_PAGE"]
        out.append(_Stored(st.chunk, st.codec, data))
    if row != len(keep):
        raise ValueError(f"the pages hold {row} rows, the selection {len(keep)}")
    return out, covered, skipped


def _decode_pages(stored: list[_Stored], spec: ColumnSpec, device: torch.device, budget: int | None,
                  on_device=None) -> Column:
    if not any(h.type != "DICTIONARY_PAGE" for st in stored for h, _ in st.pages):
        return empty_column(spec.ltype, device)  # empty row groups (or every page skipped)
    batches = [b for b in _batches(stored, budget)
               if any(h.type != "DICTIONARY_PAGE" for st in b for h, _ in st.pages)] or [stored]
    parts = [_decode(_layout(b, spec), spec, device, on_device) for b in batches]
    return parts[0] if len(parts) == 1 else concat_columns(parts, unify=False)


def _decode(lay: _Layout, spec: ColumnSpec, device: torch.device, on_device=None) -> Column:
    buf = on_device.pages(lay.parts, lay.size, device, lay.unverified) if on_device is not None else None
    if buf is not None:
        # Decompressed on the device: the host reads its few fields through windows fetched
        # per round (level lengths first, then the value starts they give).
        host = DeviceBytes(buf, lay.size)
        host.prefetch([p["at"] for p in lay.pages if p["v1"] and spec.max_def])
        _place_levels(lay, host, spec)
        host.prefetch([p["v"] for p in lay.pages])
    else:
        # On a GPU the pages are decompressed into page-locked memory: the copy is asynchronous.
        cuda = device.type == "cuda"
        buf = torch.empty(lay.size + PAD, dtype=torch.uint8, pin_memory=cuda)
        buf[lay.size:] = 0
        host = memoryview(buf.numpy())[:lay.size]  # the host's view, for the few fields read there
        decompress_on_host(lay, host)
        _place_levels(lay, host, spec)
        if cuda:
            buf = buf.to(device, non_blocking=True)
    pages = lay.pages
    P = len(pages)
    ns = [p["n"] for p in pages]
    N = sum(ns)
    dev = buf.device
    n_t = small(ns, dev)
    page = torch.repeat_interleave(torch.arange(P, device=dev), n_t, output_size=N)
    slot_first = torch.cumsum(n_t, 0) - n_t
    valid = None
    if spec.max_def:
        lv, _ = decode_hybrid(buf, [p["defs"][0] for p in pages], [p["defs"][1] for p in pages],
                              torch.ones(P, dtype=torch.long), n_t, max(ns))
        if lv.numel() != N:
            raise DataError(f"corrupt definition levels in column {spec.name}")
        _check(lv <= spec.max_def, f"definition levels above {spec.max_def}")
        valid = lv == spec.max_def
        nn = torch.zeros(P, dtype=torch.long, device=dev).index_add_(0, page, valid.long())
        c = torch.cumsum(valid.long(), 0)
        rank = torch.clamp(c - 1 - (torch.cumsum(nn, 0) - nn)[page], min=0)
    else:
        nn = n_t
        rank = torch.arange(N, device=dev) - slot_first[page]
    if valid is not None and bool(valid.all()):
        valid = None
    ctx = _Ctx(buf, host, pages, page, rank, nn, spec, lay, valid is None)
    col = _strings(ctx) if spec.ltype.kind == "string" else _fixed(ctx)
    return Column(col[0], spec.ltype, valid, col[1])


@dataclass
class _Ctx:
    buf: torch.Tensor
    host: memoryview     # the page buffer as the host sees it
    pages: list
    page: torch.Tensor   # page of each slot
    rank: torch.Tensor   # rank of each slot among its page's non-NULL values
    nn: torch.Tensor     # non-NULL values per page
    spec: ColumnSpec
    lay: _Layout
    dense: bool          # no NULLs: slot i holds the i-th value

    def groups(self, encs) -> list[int]:
        return [i for i, p in enumerate(self.pages) if p["enc"] in encs]

    def member(self, group: list[int]) -> torch.Tensor | None:
        """Whether each slot's page is in ``group``; None when every page is (the common case:
        one encoding for the whole column, so no per-slot mask or select is needed)."""
        if len(group) == len(self.pages):
            return None
        dev = self.buf.device
        m = torch.zeros(len(self.pages), dtype=torch.bool, device=dev)
        m[small(group, dev)] = True
        return m[self.page]

    def slot_index(self, group: list[int], offsets: torch.Tensor) -> torch.Tensor:
        """For every slot, the index of its value in the group's concatenated values (whose
        per-page offsets are ``offsets``); garbage for slots of pages not in the group."""
        dev = self.buf.device
        off = torch.zeros(len(self.pages), dtype=torch.long, device=dev)
        off[small(group, dev)] = offsets.to(dev)
        return self.rank + off[self.page]

    def pick(self, group: list[int], values: torch.Tensor) -> torch.Tensor:
        """Each slot's value from the group's concatenated ``values`` (page after page, the
        non-NULL values of each); garbage for slots of pages not in the group."""
        if self.dense and len(group) == len(self.pages) and values.shape[0] == self.page.numel():
            return values  # slot i holds value i
        idx = self.slot_index(group, _excl(self.group_nn(group)))
        if values.shape[0] == 0:
            return values.new_zeros((int(idx.numel()), *values.shape[1:]))
        return values[torch.clamp(idx, max=values.shape[0] - 1)]

    @staticmethod
    def put(member: torch.Tensor | None, got: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
        """``got`` where ``member`` (all of it when None), ``out`` (zeros when None) elsewhere."""
        if member is None:
            return got
        if out is None:
            out = torch.zeros_like(got)
        return torch.where(member if got.dim() == 1 else member[:, None], got, out)

    def group_nn(self, group: list[int]) -> torch.Tensor:
        if len(group) == len(self.pages):
            return self.nn
        return self.nn[small(group, self.buf.device)]


def _check(ok: torch.Tensor, what: str) -> None:
    """Corrupt pages are errors, never values read from the wrong place (one host sync)."""
    if not bool(ok.all()):
        raise ValueError(f"corrupt page: {what}")


def _excl(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, 0) - x


def _rows(buf: torch.Tensor, src: torch.Tensor, w: int) -> torch.Tensor:
    return gather(buf, src[:, None] + torch.arange(w, device=buf.device))


def _dict_values(ctx: _Ctx, w: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All dictionaries' values as (entries, w) bytes, and each chunk's first entry."""
    dev = ctx.buf.device
    rows = []
    for _ci, start, end, count, _enc in ctx.lay.dicts:
        # The entries must lie in the page (checked on the host, from its header and size:
        # gathered past the buffer, they would be a device-side assert).
        if (count if ctx.spec.physical == "BOOLEAN" else count * w * 8) > (end - start) * 8:
            raise ValueError(f"corrupt page: a dictionary page of {end - start} bytes cannot hold "
                             f"{count} values")
        if ctx.spec.physical == "BOOLEAN":
            bits = torch.arange(count, device=dev) + start * 8
            rows.append(((gather(ctx.buf, bits >> 3) >> (bits & 7)) & 1)[:, None])
        else:
            rows.append(_rows(ctx.buf, start + torch.arange(count, device=dev) * w, w))
    vals = torch.cat(rows) if rows else torch.zeros((0, w), dtype=torch.uint8, device=dev)
    return vals, _dict_extent(ctx)[0]


def _indices(ctx: _Ctx, group: list[int]) -> torch.Tensor:
    """Dictionary indices of the pages in ``group``, one per non-NULL value (page after page),
    each moved by its chunk's first entry among all chunks' dictionaries."""
    pages = [ctx.pages[i] for i in group]
    widths = torch.tensor([ctx.host[p["v"]] if p["end"] > p["v"] else 0 for p in pages], dtype=torch.long)
    vals, _ = decode_hybrid(ctx.buf, [p["v"] + 1 for p in pages], [max(p["end"], p["v"] + 1) for p in pages],
                            widths, ctx.group_nn(group), max(p["n"] for p in pages))
    dev = ctx.buf.device
    base, size = _dict_extent(ctx)
    chunks = [p["chunk"] for p in pages]
    if len(set(chunks)) == 1:
        _check(vals < size[chunks[0]], "a dictionary index past its dictionary")
        return vals.add_(base[chunks[0]])
    chunk_of_value = torch.repeat_interleave(small(chunks, dev), ctx.group_nn(group), output_size=vals.numel())
    _check(vals < size[chunk_of_value], "a dictionary index past its dictionary")
    return vals.add_(base[chunk_of_value])


def _dict_extent(ctx: _Ctx) -> tuple[torch.Tensor, torch.Tensor]:
    """Per chunk, the first entry of its dictionary among all chunks' and its entry count."""
    nchunks = 1 + max([p["chunk"] for p in ctx.pages] + [d[0] for d in ctx.lay.dicts] + [0])
    base = [0] * nchunks
    size = [0] * nchunks
    at = 0
    for ci, _s, _e, count, _enc in ctx.lay.dicts:
        base[ci], size[ci] = at, count
        at += count
    both = small(base + size, ctx.buf.device)  # one copy, no wait
    return both[:nchunks], both[nchunks:]


def _fixed(ctx: _Ctx) -> tuple[torch.Tensor, None]:
    """Fixed-width values as (N, width) bytes, each encoding group of pages decoded to its
    values (page after page) and placed in the slots of its pages."""
    spec = ctx.spec
    dev = ctx.buf.device
    N = int(ctx.page.numel())
    w = 1 if spec.physical == "BOOLEAN" else WIDTH.get(spec.physical, spec.type_length)
    out = None
    pages = ctx.pages
    vstart = small([p["v"] for p in pages], dev)
    enc_of = {p["enc"] for p in pages}
    ends = small([p["end"] for p in pages], dev)
    for group, bits_each in ((ctx.groups({"PLAIN"}), 1 if spec.physical == "BOOLEAN" else 8 * w),
                             (ctx.groups({"BYTE_STREAM_SPLIT"}), 8 * w)):
        if group:
            gi = small(group, dev)
            _check(vstart[gi] * 8 + ctx.nn[gi] * bits_each <= ends[gi] * 8, "values run past their page")
    plain = ctx.groups({"PLAIN"})
    if plain:
        member = ctx.member(plain)
        if spec.physical == "BOOLEAN":
            bits = vstart[ctx.page] * 8 + ctx.rank
            got = ((gather(ctx.buf, bits >> 3) >> (bits & 7)) & 1)[:, None]
        else:  # each page's values lie back to back: one copy of the pages' value bytes
            nn = [p["n"] for p in pages] if ctx.dense else ctx.nn.tolist()
            vals = torch.cat([ctx.buf[pages[i]["v"]:pages[i]["v"] + nn[i] * w] for i in plain]).reshape(-1, w)
            got = ctx.pick(plain, vals)
        out = ctx.put(member, got, out)
    rle = ctx.groups({"RLE"})
    if rle:  # booleans, RLE-encoded (length-prefixed hybrid of width 1)
        ps = [pages[i] for i in rle]
        ends_rle = [p["v"] + 4 + int.from_bytes(ctx.host[p["v"]:p["v"] + 4], "little") for p in ps]
        if any(e > p["end"] for e, p in zip(ends_rle, ps)):
            raise ValueError("corrupt page: an RLE boolean stream runs past its page")
        vals, _ = decode_hybrid(ctx.buf, [p["v"] + 4 for p in ps], ends_rle,
                                torch.ones(len(ps), dtype=torch.long), ctx.group_nn(rle), max(p["n"] for p in ps))
        out = ctx.put(ctx.member(rle), ctx.pick(rle, vals.to(torch.uint8)[:, None]), out)
    dicts = ctx.groups(DICT)
    if dicts:
        dvals, _ = _dict_values(ctx, w)
        codes = _indices(ctx, dicts)
        got = dvals[torch.clamp(codes, 0, dvals.shape[0] - 1)] if dvals.shape[0] else \
            torch.zeros((int(codes.numel()), w), dtype=torch.uint8, device=dev)
        out = ctx.put(ctx.member(dicts), ctx.pick(dicts, got), out)
    bss = ctx.groups({"BYTE_STREAM_SPLIT"})
    if bss:
        # The streams' length is the value bytes / width (as pyarrow reads it; the same as the
        # non-NULL count unless the levels are corrupt).
        n_of = ((ends - vstart) // w)[ctx.page]
        got = gather(ctx.buf, (vstart[ctx.page] + ctx.rank)[:, None] + torch.arange(w, device=dev) * n_of[:, None])
        out = ctx.put(ctx.member(bss), got, out)
    delta = ctx.groups({"DELTA_BINARY_PACKED"})
    if delta:
        ps = [pages[i] for i in delta]
        vals, hdrs, _ = decode_delta(ctx.buf, ctx.host, [p["v"] for p in ps], [p["end"] for p in ps],
                                     [p["n"] for p in ps])
        _check(small([h.total for h in hdrs], dev) == ctx.group_nn(delta),
               "DELTA_BINARY_PACKED pages hold another number of values than their levels say")
        le = vals.view(torch.uint8).reshape(-1, 8)[:, :w]
        out = ctx.put(ctx.member(delta), ctx.pick(delta, le), out)
    unknown = enc_of - {"PLAIN", "RLE", "BYTE_STREAM_SPLIT", "DELTA_BINARY_PACKED", *DICT}
    if unknown:
        raise NotDecodable(f"encoding {sorted(unknown)[0]} for {spec.physical}")
    if out is None:
        out = torch.zeros((N, w), dtype=torch.uint8, device=dev)
    return _convert(out, spec), None


def _convert(raw: torch.Tensor, spec: ColumnSpec) -> torch.Tensor:
    """(N, width) little-endian bytes as stored -> the sluice type's tensor."""
    t, lt = spec.arrow_type, spec.ltype
    raw = raw.contiguous()
    if spec.physical == "BOOLEAN":
        return raw[:, 0].bool()
    if spec.physical == "FIXED_LEN_BYTE_ARRAY":  # decimal: big-endian two's complement
        return _be_decimal(raw, spec)
    if spec.physical == "FLOAT":
        v = raw.view(torch.float32).reshape(-1)
        return v if lt.kind == "float32" else v.double()
    if spec.physical == "DOUBLE":
        return raw.view(torch.float64).reshape(-1)
    if spec.physical == "INT32":
        v = raw.view(torch.int32).reshape(-1)
        if pa.types.is_unsigned_integer(t):
            return (v.long() & 0xFFFFFFFF).to(lt.torch_dtype)
        return v.to(lt.torch_dtype)
    v = raw.view(torch.int64).reshape(-1)
    if pa.types.is_timestamp(t) and t.unit == "ms":
        return widen_timestamps(v, 1000, None)
    return v.to(lt.torch_dtype)


def _be_decimal(raw: torch.Tensor, spec: ColumnSpec) -> torch.Tensor:
    n, L = raw.shape
    k = min(L, 8)
    low = raw[:, L - k:].long()
    v = torch.zeros(n, dtype=torch.long, device=raw.device)
    for i in range(k):
        v |= low[:, k - 1 - i] << (8 * i)
    if L < 8:
        neg = (raw[:, 0] & 0x80) != 0
        v = torch.where(neg, v - (1 << (8 * L)), v)
    elif L > 8:
        fill = torch.where(v < 0, 0xFF, 0).to(torch.uint8)
        if not bool((raw[:, :L - 8] == fill[:, None]).all()):
            raise DataError("a decimal value does not fit in 18 digits")
    return v


def _strings(ctx: _Ctx) -> tuple[torch.Tensor, pa.Array]:
    """String columns: codes into one dictionary made of the chunks' dictionary pages followed
    by the values of pages not dictionary-encoded (a dictionary need not be unique). Each
    part's bytes are gathered as soon as they are found (their per-byte sources are the
    largest tensors here)."""
    dev = ctx.buf.device
    pages = ctx.pages
    N = int(ctx.page.numel())
    unknown = {p["enc"] for p in pages} - {"PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", *DICT}
    if unknown:
        raise NotDecodable(f"encoding {sorted(unknown)[0]} for strings")
    parts = []
    # Dictionary pages: plain byte arrays.
    if ctx.lay.dicts:
        s, ln = strings.plain(ctx.buf, [d[1] for d in ctx.lay.dicts], [d[2] for d in ctx.lay.dicts],
                              max(d[3] for d in ctx.lay.dicts))
        if int(ln.numel()) != sum(d[3] for d in ctx.lay.dicts):
            raise DataError(f"corrupt dictionary page in column {ctx.spec.name}")
        parts.append(strings.materialise(ctx.buf, strings.byte_sources(s, ln), ln))
    codes = None
    dicts = ctx.groups(DICT)
    if dicts:
        codes = ctx.put(ctx.member(dicts), ctx.pick(dicts, _indices(ctx, dicts)), codes)
    at = sum(len(x) for x in parts)
    for encs in (("PLAIN",), ("DELTA_LENGTH_BYTE_ARRAY",), ("DELTA_BYTE_ARRAY",)):
        group = ctx.groups(encs)
        if not group:
            continue
        ps = [pages[i] for i in group]
        st, en = [p["v"] for p in ps], [p["end"] for p in ps]
        if encs[0] == "PLAIN":
            s, ln = strings.plain(ctx.buf, st, en, max(p["n"] for p in ps))
            src = strings.byte_sources(s, ln)
        elif encs[0] == "DELTA_LENGTH_BYTE_ARRAY":
            s, ln = strings.delta_length(ctx.buf, ctx.host, st, en, [p["n"] for p in ps])
            src = strings.byte_sources(s, ln)
        else:
            src, ln, _ = strings.delta_bytes(ctx.buf, ctx.host, st, en, [p["n"] for p in ps])
        count = int(ln.numel())
        if count != int(ctx.group_nn(group).sum()):
            raise DataError(f"corrupt string page in column {ctx.spec.name}")
        parts.append(strings.materialise(ctx.buf, src, ln))
        del src
        codes = ctx.put(ctx.member(group), ctx.pick(group, torch.arange(at, at + count, device=dev)), codes)
        at += count
    if codes is None:
        codes = torch.zeros(N, dtype=torch.long, device=dev)
    d = pa.array([], pa.string()) if not parts else parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    if N and not len(d):  # every row NULL (an empty dictionary page, or none): codes 0 must index it
        d = pa.array([""], pa.string())
    return codes.int(), d
