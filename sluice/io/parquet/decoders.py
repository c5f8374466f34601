"""The decompress and decode stages of a scan, as interchangeable :class:`Decoder` strategies
(docs/design.md §6: read planning -> byte fetch -> decode -> transfer) over a small
:class:`DecodeContext` -- the table, the device, the pools, the statistics sink -- not the
reader. Which one a scan uses is decided when lowering (:mod:`sluice.adapt.decoder_policy`).

- :class:`ArrowDecoder`: the storage stage reads the selected column chunks (measured), then
  pyarrow decodes them on the host; the columns cross to the device afterwards.
- :class:`KernelDecoder` (``decoder=device``): the fetch keeps the column chunks' bytes, the page
  headers come from the page index cached with the footers, and the pages are decoded by the
  Triton page kernels on the scan's device (:mod:`sluice.io.parquet.decode`), so on a GPU the
  decoded columns never cross PCIe. A column it cannot decode (plain-encoded strings among
  them) goes to pyarrow, counted per scan (``--analyze``), or is refused with
  ``strict_device=true``. The kernels need CUDA, or ``TRITON_INTERPRET=1`` on a CPU (tests).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch

from sluice.chunk import Column, filter_columns
from sluice.errors import DataError, UnsupportedError
from sluice.arrow import arrow_to_column
from sluice.io.parquet.decode.column import NotDecodable, column_spec
from sluice.io.parquet.decode.kernel_column import KernelPages, check_columns
from sluice.io.parquet.decode.page_index import read_index
from sluice.catalog import RowGroup, TableInfo
from sluice.config import Config
from sluice.io.parquet.metadata import MetadataCache
from sluice.metrics import ScanStats
from sluice.io.parquet.fetch import fetch_chunks, read_ranges
from sluice.io.parquet.ranges import column_chunk_ranges, leaf_index
from sluice.io.pinned import columns_nbytes, decode_stream
from sluice.io.parquet.decode import nvcomp
from sluice.io import kvikio_read

_DICT_ENCODINGS = {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}
#: A column chunk whose dictionary page takes more than this share of its bytes is read as
#: plain strings: its values barely repeat (comments, names, addresses), and pyarrow would
#: hash every value that overflowed the dictionary page to hand it over as a dictionary.
DICTIONARY_SHARE_MAX = 0.10
#: The device decoder's temporary tensors for one column of a read task take at most this share
#: of the decode budget (more pages are decoded in batches; a page alone goes ahead anyway).
DECODE_SHARE = 8


def is_field_path(table: TableInfo, column: str) -> bool:
    """Whether a scan's file column is a struct field's path (``user.address.city``, split off its
    struct by :mod:`sluice.plan.rules.struct_fields`) rather than a top-level column."""
    return column not in table.arrow_schema.names and column not in table.partitions


def field_array(t: pa.Table, column: str) -> pa.ChunkedArray:
    """Column ``column`` of a table pyarrow read: a top-level one, or a struct field's path read
    as that path's leaves -- the field with every enclosing struct's NULLs applied (a field
    of a NULL struct is NULL, as ``s.a`` is)."""
    if column in t.column_names:
        return t.column(column)
    top, *fields = column.split(".")
    arr = t.column(top)
    for f in fields:
        arr = pc.struct_field(arr, f)
    return arr


def read_as_dictionary(md: pq.FileMetaData, column: str, row_groups: list[int]) -> bool:
    """Whether to ask pyarrow for this string column as dictionaries: every chunk must be
    dictionary-encoded (delta-encoded strings cannot be decoded into a dictionary) with a
    dictionary page that is small next to its data pages (values repeat)."""
    j = leaf_index(md, column)
    for i in row_groups:
        cc = md.row_group(i).column(j)
        encs = set(cc.encodings)
        if not encs & _DICT_ENCODINGS or encs & {"DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"}:
            return False
        if cc.has_dictionary_page and cc.dictionary_page_offset is not None and cc.total_compressed_size:
            dict_bytes = cc.data_page_offset - cc.dictionary_page_offset
            if dict_bytes > DICTIONARY_SHARE_MAX * cc.total_compressed_size:
                return False
    return True


@dataclass(frozen=True)
class DecodeContext:
    """What a decoder works with: one scan's table and device, the settings and footers, the
    budgets its buffers are reserved against, where it counts (statistics, the timeline)."""

    table: TableInfo
    device: torch.device
    config: Config
    cache: MetadataCache
    stats: ScanStats
    #: ``record(stage, t0, t1, nbytes)``: a stage's time on the timeline
    record: Callable[[str, float, float, int], None]
    #: the host budget (the column chunks as read, pinned staging on a GPU); None: unbounded
    host_pool: object = None
    #: the budget the device decoder's temporary tensors are reserved against; None: unbounded
    decode_pool: object = None
    #: whether every I/O thread has a load of this scan in flight (a task then decodes alone)
    busy: Callable[[], bool] = lambda: False


class Decoder(Protocol):
    """Decodes the stored columns of a read task (compressed pages to columns)."""

    name: str

    def decode(self, task: list[RowGroup], md: pq.FileMetaData, stored: list[str], keep: np.ndarray | None = None
               ) -> tuple[dict[str, Column], int]:
        """The columns ``stored`` of ``task`` (with ``keep``, a host mask over its rows: only
        those rows) and the compressed bytes read."""
        ...


def _integer_decimal(arr, t) -> Column:
    """A decimal column pyarrow decoded as its stored (unscaled) integers: those are sluice's
    values (:mod:`sluice.io.parquet.int_decimals`)."""
    if t.kind != "decimal":  # the catalog types the column otherwise: never rewritten for it
        raise DataError(f"a decimal column is typed {t} here")
    raw = arrow_to_column(arr)
    return Column(raw.data.to(torch.int64), t, raw.valid)


def _dictionary_fields(path: str, md: pq.FileMetaData, rg_idx: list[int], fields: list[str], alone: bool
                       ) -> dict[str, pa.ChunkedArray]:
    """Struct string fields (paths) as dictionaries, a row group at a time: pyarrow hands a
    nested column's dictionary over only while it does not change within one read ("Nested
    data conversions not implemented for chunked array outputs" across row groups), so each
    row group is its own read. Codes, not a million strings to hash again in every GROUP BY or
    join above (``select user.address.city, count(*) ... group by 1``). A row group whose
    dictionary changes within it (pages that fell back to plain) is that error again: then
    none of them is read here, and the caller reads them as plain strings."""
    f = pq.ParquetFile(path, metadata=md, read_dictionary=fields, pre_buffer=not alone)
    try:
        parts = [f.read_row_group(i, columns=fields, use_threads=not alone) for i in rg_idx]
    except pa.ArrowNotImplementedError:
        return {}
    out = {}
    for c in fields:
        arrays = [field_array(p, c) for p in parts]
        out[c] = pa.chunked_array([ch for a in arrays for ch in a.chunks], arrays[0].type)
    return out


class ArrowDecoder:
    name = "arrow"

    def __init__(self, ctx: DecodeContext) -> None:
        self.ctx = ctx

    def decode(self, task: list[RowGroup], md: pq.FileMetaData, stored: list[str], keep: np.ndarray | None = None
               ) -> tuple[dict[str, Column], int]:
        """Decode ``stored`` columns of ``task`` on the host (with ``measure_reads``, read them
        first on their own, timed as the read stage: a second copy of the bytes); with ``keep`` (a host mask over the task's rows) only those rows are returned (pyarrow
        decodes every page: it cannot be given a row selection)."""
        s = self.ctx
        path = task[0].path
        rg_idx = [rg.index for rg in task]
        strings = [c for c in stored if s.table.types[c].kind == "string" and read_as_dictionary(md, c, rg_idx)]
        fields = [c for c in strings if is_field_path(s.table, c)]  # read on their own, below
        strings = [c for c in strings if c not in fields]
        t0 = time.perf_counter()
        try:
            ranges = column_chunk_ranges(md, rg_idx, stored) if stored else []
            if s.config.measure_reads:
                nread = read_ranges(path, ranges)
                t1 = time.perf_counter()
                s.record("read", t0, t1, nread)
            else:  # pyarrow reads them as it decodes (pre_buffer: the same coalesced ranges)
                nread, t1 = sum(ln for _, ln in ranges), t0
            decimals, plain = s.config.on("integer_decimals"), s.config.on("plain_strings")
            ints = s.cache.integer_footer(path, md, decimals, plain) if decimals or plain else None
            # On a CPU with a load of this scan in flight for every I/O thread, a task decodes on
            # its own thread: pyarrow's pool and its pre-buffering (reads on its I/O pool) only
            # handed work between threads there (SSB SF 10 Q1.3 1.29 -> 1.05 s, see
            # decode_in_task). Loads in flight, not the scan's tasks: tasks too big for two in the
            # scan buffer (ClickBench q23's 105 columns) run one at a time, and one thread then
            # decoded each alone (12-14 s against 8-9 with pyarrow's pool).
            alone = s.device.type == "cpu" and s.config.on("decode_in_task") and s.busy()
            f = pq.ParquetFile(path, metadata=md if ints is None else ints[0], read_dictionary=strings,
                               pre_buffer=not alone)
            got = _dictionary_fields(path, md, rg_idx, fields, alone) if fields else {}
            t = f.read_row_groups(rg_idx, columns=[c for c in stored if c not in got], use_threads=not alone)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"cannot read {path}: {str(e).splitlines()[0]}") from None
        as_int = ints[1] if ints is not None else ()
        cols = {c: _integer_decimal(t.column(c), s.table.types[c]) if c in as_int else
                arrow_to_column(got[c] if c in got else field_array(t, c), s.table.types[c]) for c in stored}
        if keep is not None:
            cols = filter_columns(cols, torch.from_numpy(keep))
        s.record("decode", t1, time.perf_counter(), columns_nbytes(cols))
        return cols, nread


class KernelDecoder:
    name = "device"

    def __init__(self, ctx: DecodeContext) -> None:
        self.ctx = ctx
        self.arrow = ArrowDecoder(ctx)
        self.cannot: dict[str, str] = {}  # column -> why it is left to pyarrow
        self.specs: dict[tuple, object] = {}  # (file path, column) -> ColumnSpec, for this scan
        self._lock = threading.Lock()
        self.on_device = None  # nvCOMP decompression (a GPU only)
        if ctx.device.type == "cuda":
            wanted = ctx.config.device_decompress
            ok = wanted and nvcomp.available()
            why = "" if ok else ("device_decompress=false" if not wanted else "nvCOMP not installed")
            self.on_device = nvcomp.OnDevice(ok, why, strict=ctx.config.strict_device,
                                             unverified=ctx.config.device_decompress_unverified)
        # KvikIO reads into pinned memory, where the device decompression stages from.
        self.kvikio = False
        if self.on_device is not None and self.on_device.enabled and ctx.config.kvikio:
            if kvikio_read.available():
                self.kvikio = True
                # The chunks land in a pinned host buffer (fetch_chunks), never straight in
                # device memory: the label says so, and so never claims GDS.
                ctx.stats.reads = kvikio_read.reads_label(kvikio_read.compat_mode(), into_device=False)

    def decode(self, task: list[RowGroup], md: pq.FileMetaData, stored: list[str], keep: np.ndarray | None = None
               ) -> tuple[dict[str, Column], int]:
        """Decode ``stored`` columns of ``task``; with ``keep`` (a host mask over the task's
        rows, from staging) only the pages holding a kept row are decoded, and only those rows
        returned."""
        s = self.ctx
        path = task[0].path
        rg_idx = [rg.index for rg in task]
        ours = []
        for c in stored:
            why = self.cannot.get(c)
            if why is None:
                try:
                    self._spec(md, c, path)
                    ours.append(c)
                    continue
                except NotDecodable as e:
                    why = self._fallback(c, str(e))
        rest = [c for c in stored if c not in ours]
        cols: dict[str, Column] = {}
        nread = 0
        if ours:
            # The column chunks as read (pinned on a GPU with KvikIO) live while the task's
            # columns decode: host memory, counted against the host budget (past it if need be:
            # they exist already, and other consumers see the pressure and spill).
            host = s.host_pool
            with host.reservation(f"Scan {s.table.name} column chunks") if host is not None \
                    else contextlib.nullcontext() as held:
                t0 = time.perf_counter()
                try:
                    chunks, nread = fetch_chunks(path, md, rg_idx, ours, pinned=self.kvikio)
                except OSError as e:
                    raise DataError(f"cannot read {path}: {e}") from None
                if held is not None and not held.try_grow(nread):
                    held.force(nread)
                t1 = time.perf_counter()
                s.record("read", t0, t1, nread)
                stream = decode_stream(s.device)
                with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                    self._decode_all(ours, chunks, md, path, rg_idx, keep, cols, rest)
                del chunks
                s.record("decode", t1, time.perf_counter(), columns_nbytes(cols))
        if rest:
            more, n2 = self.arrow.decode(task, md, rest, keep)
            cols.update(more)
            nread += n2
        return cols, nread

    def _decode_all(self, ours, chunks, md, path, rg_idx, keep, cols, rest) -> None:
        """Decode the columns ``ours`` into ``cols``; those the pages show it cannot decode go
        to ``rest`` (for pyarrow). The kernels' error codes are read once, after every column
        of the task is launched (the one wait for the device of a task's decode)."""
        errs: dict[str, list] = {}
        c = None
        try:
            for c in ours:
                try:
                    cols[c], errs[c] = self._decode_column(chunks[c], self._spec(md, c, path), path, rg_idx, c, keep)
                except NotDecodable as e:  # an encoding met in the pages, not the footer
                    self._fallback(c, str(e))
                    rest.append(c)
            bad = check_columns(errs)
            if bad is not None:
                c = bad[0]
                raise ValueError(bad[1])
        except torch.cuda.OutOfMemoryError:
            raise  # a RuntimeError, but not a corrupt page: the query reruns with less
        except (ValueError, IndexError, RuntimeError, OverflowError, OSError, pa.ArrowException) as e:
            # Garbage in a page (its header, a length, a run, compressed bytes).
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DataError(f"cannot decode column {c} of {path}: {msg}") from None

    def _decode_column(self, chunks, spec, path: str, rg_idx: list[int], column: str, keep: np.ndarray | None
                       ) -> tuple[Column, list]:
        """Launch the decode of one column (only the pages holding a row of ``keep``, where
        given), its temporary tensors reserved against the decode budget (the device's on a
        GPU): as many row groups at a time as the reservation holds. Returns the column and its
        error codes (unread). Page headers come from the cache: parsed once per file version."""
        cache = self.ctx.cache
        indexes = [cache.page_index(path, rg, column, lambda _p, ch=ch: read_index(ch[0], *ch[2:3]))
                   for rg, ch in zip(rg_idx, chunks)]
        for ix, ch in zip(indexes, chunks):
            if ix.chunk_bytes != len(ch[0]):  # the file changed between the footer and the read
                raise ValueError("the column chunk's bytes differ from its cached page index")
        pages = KernelPages(chunks, spec, indexes)
        if keep is not None:
            pages.select(keep)
            st = self.ctx.stats
            with self._lock:
                st.pages_skipped += pages.skipped.pages
                st.pages_selected += pages.skipped.of
                st.page_bytes_skipped += pages.skipped.nbytes
        try:
            return self._decode_pages(pages)
        finally:
            od = self.on_device
            if od is not None:
                st = self.ctx.stats
                st.pages_device_decompressed, st.pages_host_decompressed = od.pages_device, od.pages_host
                st.host_decompress_why = dict(od.why)

    def _decode_pages(self, pages: KernelPages) -> tuple[Column, list]:
        host = self.ctx.host_pool
        if self.ctx.device.type != "cuda" or host is None:
            return self._decode_reserved(pages)
        # On a GPU the page buffer (or nvCOMP's staging of the compressed pages) is pinned host
        # memory: counted against the host budget while it lives (past it if need be: it is
        # short-lived, and other consumers see the pressure and spill).
        with host.reservation(f"Scan {self.ctx.table.name} pinned pages") as hres:
            n = pages.page_bytes()
            if not hres.try_grow(n):
                hres.force(n)
            return self._decode_reserved(pages)

    def _decode_reserved(self, pages: KernelPages) -> tuple[Column, list]:
        device, od = self.ctx.device, self.on_device
        pool = self.ctx.decode_pool
        if pool is None:
            return pages.decode(device, None, od)
        need, page = pages.estimate()
        with pool.reservation(f"Scan {self.ctx.table.name} decode") as res:
            want = min(need, max(pool.limit // DECODE_SHARE, page))
            if not res.try_grow(want):
                res.try_grow(min(want, pool.available))
            budget = None if res.size >= need else res.size
            if res.size >= page:
                return pages.decode(device, budget, od)
            # Not even a row group fits: decode one at a time, counted past the budget, and one
            # decoder at a time in the whole pool (the others wait: throttled, not killed).
            with pool.overdraft:
                res.force(page - res.size)
                return pages.decode(device, budget, od)

    def _spec(self, md, c: str, path: str):
        key = (path, c)
        spec = self.specs.get(key)
        if spec is None:
            t = self.ctx.table
            if is_field_path(t, c):  # a leaf of a nested column: pyarrow assembles its levels
                raise NotDecodable("nested column")
            spec = self.specs[key] = column_spec(md, c, t.arrow_schema.field(c).type, t.types[c])
        return spec

    def _fallback(self, column: str, why: str) -> str:
        s = self.ctx
        if s.config.strict_device:
            raise UnsupportedError(f"decoder=device cannot decode {s.table.name}.{column} ({why}); "
                                   f"strict_device=true forbids falling back to pyarrow")
        self.cannot[column] = why
        s.stats.fallbacks[column] = why
        return why


def make_decoder(name: str, ctx: DecodeContext) -> Decoder:
    """The decoder ``name`` (``arrow`` or ``device``: chosen when lowering) for ``ctx``'s scan."""
    ctx.stats.decoder = name
    return KernelDecoder(ctx) if name == "device" else ArrowDecoder(ctx)


def partition_column(table, column: str, path: str, n: int) -> Column:
    """A hive partition column: the file's folder value on every row."""
    typ = table.arrow_schema.field(column).type
    one = pa.array([table.partitions[column][path]], typ)
    return arrow_to_column(one.take(pa.array(np.zeros(n, dtype=np.int32))), table.types[column])
