"""``sluice rewrite``: rewrite Parquet files into a chosen layout (seeds 003: "Do GPUs really
need new tabular file formats?").

Per column, ``auto`` encoding writes a sample with every valid encoding (uncompressed) and keeps
the smallest (insight 3); ``auto`` compression then tries the codecs on that encoding and keeps
the smallest, but only if it saves more than ``min_gain`` over no compression (insight 4).
Row groups get ``row_group_rows`` rows (insight 2: a million for GPUs) and each column chunk
``pages_per_chunk`` pages (insight 1: >= 100 for GPUs). The rewrite streams: it holds one
output row group at a time, keeps schema and row order, writes statistics and the page index,
and verifies that a sample of rows reads back equal. Output is written under a temporary name
and renamed when complete.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.errors import ConfigError, DataError
from sluice.io.permissions import in_place_of
from sluice.io.parquet.ranges import leaf_index

CODECS = ("none", "snappy", "lz4", "zstd", "gzip", "brotli")
ENCODINGS = ("auto", "keep", "plain", "dictionary", "delta", "byte_stream_split")
#: Codecs tried by ``auto``: lightweight ones, and zstd at two levels.
AUTO_CODECS = (("snappy", None), ("lz4", None), ("zstd", 1), ("zstd", 9))
LIGHT_CODECS = (("snappy", None), ("lz4", None))


@dataclass(frozen=True)
class RewriteOptions:
    row_group_rows: int | None = None          # None: keep the input's row groups
    pages_per_chunk: int | None = None         # None: the writer's default page size (1 MiB)
    encoding: str = "auto"
    compression: str = "auto"                  # auto | none | snappy | lz4 | zstd[:level] | gzip | brotli
    min_gain: float = 0.10
    auto_codecs: tuple = AUTO_CODECS
    sample_rows: int = 100_000
    decimals_as_integers: bool = True
    verify_rows: int = 20_000

    def __post_init__(self) -> None:
        if self.row_group_rows is not None and self.row_group_rows < 1:
            raise ConfigError("--row-group-rows must be at least 1")
        if self.pages_per_chunk is not None and self.pages_per_chunk < 1:
            raise ConfigError("--pages-per-chunk must be at least 1")
        if self.encoding not in ENCODINGS:
            raise ConfigError(f"unknown encoding {self.encoding!r}; use one of {', '.join(ENCODINGS)}")
        parse_codec(self.compression) if self.compression != "auto" else None
        if not 0 <= self.min_gain < 1:
            raise ConfigError("--min-gain must be between 0 and 1")


PRESETS = {
    # GPU scans: million-row row groups, >= 100 pages per chunk, encodings and codecs by trial.
    "gpu": RewriteOptions(row_group_rows=1_000_000, pages_per_chunk=100, encoding="auto", compression="auto"),
    # CPU scans: row groups of sluice's default chunk, ~1 MiB pages, lightweight codecs only
    # (decompression is on the critical path of a CPU that also decodes and computes).
    "cpu": RewriteOptions(row_group_rows=1 << 20, pages_per_chunk=None, encoding="auto", compression="auto",
                          auto_codecs=LIGHT_CODECS),
}


def parse_codec(text: str) -> tuple[str, int | None]:
    name, _, level = text.lower().partition(":")
    if name not in CODECS:
        raise ConfigError(f"unknown codec {text!r}; use one of {', '.join(CODECS)} (zstd:LEVEL allowed)")
    if level:
        try:
            return name, int(level)
        except ValueError:
            raise ConfigError(f"bad compression level in {text!r}") from None
    return name, None


@dataclass
class ColumnChoice:
    column: str
    encoding: str           # "DICTIONARY" or a Parquet encoding name
    codec: str
    level: int | None
    raw_bytes: int          # sample size, plain and uncompressed
    encoded_bytes: int      # with the chosen encoding, uncompressed
    final_bytes: int        # with the chosen encoding and codec

    @property
    def ratio(self) -> float:
        return self.raw_bytes / self.final_bytes if self.final_bytes else 0.0


@dataclass
class RewriteReport:
    source: str
    target: str
    rows: int
    bytes_in: int
    bytes_out: int
    row_groups: int
    columns: list[ColumnChoice] = field(default_factory=list)


def _storage_type(t: pa.DataType, decimals_as_int: bool) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "int" if (decimals_as_int and t.precision <= 18) else "flba"
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t) or \
            pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return "other"


def candidate_encodings(kind: str) -> list[str]:
    return {
        "int": ["PLAIN", "DICTIONARY", "DELTA_BINARY_PACKED", "BYTE_STREAM_SPLIT"],
        "float": ["PLAIN", "DICTIONARY", "BYTE_STREAM_SPLIT"],
        "flba": ["PLAIN", "DICTIONARY", "BYTE_STREAM_SPLIT"],
        "bytes": ["PLAIN", "DICTIONARY", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"],
        "bool": ["PLAIN"],
    }.get(kind, ["DICTIONARY"])


def explicit_encoding(name: str, kind: str) -> str:
    if name == "plain":
        return "PLAIN"
    if name == "dictionary":
        return "DICTIONARY"
    if name == "delta":
        return {"int": "DELTA_BINARY_PACKED", "bytes": "DELTA_BYTE_ARRAY"}.get(kind, "PLAIN")
    if name == "byte_stream_split":
        return "BYTE_STREAM_SPLIT" if kind in ("int", "float", "flba") else "PLAIN"
    raise ConfigError(f"unknown encoding {name!r}")


def _write_sample(col: pa.Array, name: str, encoding: str, codec: str, level: int | None,
                  decimals_as_int: bool) -> int:
    buf = pa.BufferOutputStream()
    t = pa.table({name: col})
    kw = _writer_kwargs({name: encoding}, {name: (codec, level)}, decimals_as_int)
    pq.write_table(t, buf, **kw)
    return buf.getvalue().size


def _writer_kwargs(encodings: dict[str, str], codecs: dict[str, tuple[str, int | None]],
                   decimals_as_int: bool) -> dict:
    dict_cols = [c for c, e in encodings.items() if e == "DICTIONARY"]
    col_enc = {c: e for c, e in encodings.items() if e != "DICTIONARY"}
    comp = {c: ("NONE" if k == "none" else k.upper()) for c, (k, _) in codecs.items()}
    levels = {c: lv for c, (k, lv) in codecs.items() if lv is not None}
    kw = dict(use_dictionary=dict_cols, compression=comp, write_statistics=True,
              store_decimal_as_integer=decimals_as_int)
    if col_enc:
        kw["column_encoding"] = col_enc
    if levels:
        kw["compression_level"] = levels
    return kw


def choose_columns(sample: pa.Table, opts: RewriteOptions, source_md: pq.FileMetaData | None = None
                   ) -> list[ColumnChoice]:
    """Pick encoding and codec per column by writing the sample (auto) or apply the explicit ones."""
    out = []
    for name in sample.column_names:
        col = sample.column(name).combine_chunks()
        if pa.types.is_string_view(col.type):
            col = col.cast(pa.string())
        kind = _storage_type(col.type, opts.decimals_as_integers)
        raw = _write_sample(col, name, "PLAIN" if kind != "other" else "DICTIONARY", "none", None,
                            opts.decimals_as_integers)
        if opts.encoding == "auto":
            sizes = {}
            for enc in candidate_encodings(kind):
                try:
                    sizes[enc] = _write_sample(col, name, enc, "none", None, opts.decimals_as_integers)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    continue
            enc = min(sizes, key=sizes.get)
            encoded = sizes[enc]
        elif opts.encoding == "keep":
            enc = _source_encoding(source_md, name) if source_md is not None else "DICTIONARY"
            encoded = _write_sample(col, name, enc, "none", None, opts.decimals_as_integers)
        else:
            enc = explicit_encoding(opts.encoding, kind) if kind != "other" else "DICTIONARY"
            encoded = _write_sample(col, name, enc, "none", None, opts.decimals_as_integers)
        if opts.compression == "auto":
            best = ("none", None, encoded)
            for codec, level in opts.auto_codecs:
                size = _write_sample(col, name, enc, codec, level, opts.decimals_as_integers)
                if size < best[2]:
                    best = (codec, level, size)
            if encoded and (encoded - best[2]) / encoded < opts.min_gain:
                best = ("none", None, encoded)  # insight 4: no compression that does not pay
            codec, level, final = best
        else:
            codec, level = parse_codec(opts.compression)
            final = _write_sample(col, name, enc, codec, level, opts.decimals_as_integers)
        out.append(ColumnChoice(name, enc, codec, level, raw, encoded, final))
    return out


def _source_encoding(md: pq.FileMetaData, name: str) -> str:
    j = leaf_index(md, name)
    encs = md.row_group(0).column(j).encodings if md.num_row_groups else ()
    if "RLE_DICTIONARY" in encs or "PLAIN_DICTIONARY" in encs:
        return "DICTIONARY"
    for e in ("DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY", "BYTE_STREAM_SPLIT"):
        if e in encs:
            return e
    return "PLAIN"


def _open(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{path} is not a readable Parquet file ({str(e).splitlines()[0]})") from None


def rewrite_file(src: Path, dst: Path, opts: RewriteOptions,
                 progress: Callable[[int], None] | None = None) -> RewriteReport:
    pf = _open(src)
    md = pf.metadata
    schema = pf.schema_arrow
    rg_rows = opts.row_group_rows or (md.row_group(0).num_rows if md.num_row_groups else 1 << 20)
    sample = _sample(pf, opts.sample_rows)
    choices = choose_columns(sample, opts, md)
    kw = _writer_kwargs({c.column: c.encoding for c in choices},
                        {c.column: (c.codec, c.level) for c in choices}, opts.decimals_as_integers)
    if opts.pages_per_chunk:
        group = min(rg_rows, max(md.num_rows, 1))  # a small file has one smaller row group
        kw["max_rows_per_page"] = max(1, math.ceil(group / opts.pages_per_chunk))
        kw["data_page_size"] = 1 << 30  # pages are cut by rows, not bytes
        kw["write_batch_size"] = min(1024, kw["max_rows_per_page"])
    kw["write_page_index"] = True
    # Page CRCs: a rewritten file's pages may be decompressed by nvCOMP, which takes only
    # pages it can verify (device_decompress_unverified=false); CRC-32 costs little to write.
    kw["write_page_checksum"] = True
    if not dst.parent.exists():
        raise DataError(f"output directory {dst.parent} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".part", dir=dst.parent)
    except OSError as e:
        raise DataError(f"cannot write to {dst.parent}: {e.strerror}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    groups = 0
    with in_place_of(dst, tmp):
        writer = pq.ParquetWriter(tmp, schema, **kw)
        try:
            pending: list[pa.RecordBatch] = []
            rows = 0
            for batch in pf.iter_batches(batch_size=min(rg_rows, 1 << 16), use_threads=True):
                pending.append(batch)
                rows += batch.num_rows
                if progress is not None:
                    progress(batch.num_rows)
                while rows >= rg_rows:
                    t = pa.Table.from_batches(pending, schema=schema)
                    writer.write_table(t.slice(0, rg_rows), row_group_size=rg_rows)
                    groups += 1
                    rest = t.slice(rg_rows)
                    pending = rest.to_batches()
                    rows = rest.num_rows
            if rows:
                writer.write_table(pa.Table.from_batches(pending, schema=schema), row_group_size=rg_rows)
                groups += 1
        finally:
            writer.close()
        _verify(src, tmp, opts.verify_rows)
    return RewriteReport(str(src), str(dst), md.num_rows, src.stat().st_size, dst.stat().st_size, groups, choices)


def _sample(pf: pq.ParquetFile, rows: int) -> pa.Table:
    batches, n = [], 0
    for b in pf.iter_batches(batch_size=min(rows, 1 << 16)):
        batches.append(b)
        n += b.num_rows
        if n >= rows:
            break
    if not batches:
        return pf.schema_arrow.empty_table()
    return pa.Table.from_batches(batches).slice(0, rows)


def _normalise(t: pa.Table) -> pa.Table:
    fields = [pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type) for f in t.schema]
    return t.cast(pa.schema(fields))


def _verify(src: Path, dst: Path, rows: int) -> None:
    """Read back the first rows, some middle rows and the last rows of both files."""
    a, b = pq.ParquetFile(src), pq.ParquetFile(dst)
    n = a.metadata.num_rows
    if b.metadata.num_rows != n:
        raise DataError(f"verification failed: {dst} has {b.metadata.num_rows} rows, {src} has {n}")
    if b.schema_arrow.names != a.schema_arrow.names:
        raise DataError("verification failed: column names differ")
    if n <= 4 * rows:  # small: compare everything
        if not _normalise(a.read()).equals(_normalise(b.read())):
            raise DataError(f"verification failed: {dst} does not read back equal to {src}")
        return
    for start in (0, n // 2, max(0, n - rows)):
        sa = _normalise(_slice(a, start, rows))
        sb = _normalise(_slice(b, start, rows))
        if not sa.equals(sb):
            raise DataError(f"verification failed at row {start}: {dst} differs from {src}")


def _slice(pf: pq.ParquetFile, start: int, rows: int) -> pa.Table:
    """Rows [start, start+rows) reading only the row groups that hold them."""
    md = pf.metadata
    offs, groups, pos = [], [], 0
    for i in range(md.num_row_groups):
        n = md.row_group(i).num_rows
        if pos + n > start and pos < start + rows:
            groups.append(i)
            offs.append(pos)
        pos += n
    t = pf.read_row_groups(groups)
    return t.slice(start - offs[0], rows)


def rewrite(source: str | Path, target: str | Path, opts: RewriteOptions,
            progress: Callable[[int], None] | None = None) -> list[RewriteReport]:
    """Rewrite a file, or a directory file by file (keeping relative paths)."""
    src, dst = Path(source), Path(target)
    if not src.exists():
        raise DataError(f"{src} does not exist")
    if src.is_file():
        if dst.is_dir():
            dst = dst / src.name
        return [rewrite_file(src, dst, opts, progress)]
    files = sorted(f for f in src.rglob("*.parquet") if f.is_file())
    if not files:
        raise DataError(f"{src} holds no .parquet files")
    reports = []
    for f in files:
        out = dst / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        reports.append(rewrite_file(f, out, opts, progress))
    return reports


def options_from(preset: str | None, **overrides) -> RewriteOptions:
    base = PRESETS[preset] if preset else RewriteOptions()
    clean = {k: v for k, v in overrides.items() if v is not None}
    return replace(base, **clean)
