"""What the device decoder needs of a column and its pages, before any kernel runs: the
column's spec (:func:`column_spec`: its physical type, levels, sluice type -- or
:class:`NotDecodable` for what it leaves to pyarrow), the host's codecs (a page decompressed by
pyarrow where nvCOMP does not take it), and what decoding will hold (:func:`transient_bytes`).
The decode itself: :mod:`~sluice.io.parquet.decode.kernel_column`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from sluice.types import LType
from sluice.io.parquet.decode.framing import hadoop_lz4_blocks
from sluice.io.parquet.ranges import leaf_index

#: Parquet codec names -> pyarrow codecs (LZ4 is the Hadoop-framed variant, see _decompress).
CODECS = {"UNCOMPRESSED": None, "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli",
          "LZ4_RAW": "lz4_raw", "LZ4": "lz4"}
#: Zero bytes after every page buffer (loads are masked; this is a margin, not a need).
PAD = 16


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
    """Parquet's deprecated LZ4: Hadoop-framed blocks (``framing.hadoop_lz4_blocks``), as
    Arrow writes it; a page that is not framed so is raw LZ4."""
    codec = pa.Codec("lz4_raw")
    mv = memoryview(raw)
    mv = mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")
    blocks = hadoop_lz4_blocks(mv, size)
    if blocks is not None:
        try:
            return b"".join(codec.decompress(b, decompressed_size=d, asbytes=True) for b, d in blocks)
        except (ValueError, OSError, pa.ArrowException):
            pass
    return codec.decompress(raw, decompressed_size=size, asbytes=True)


#: What decoding holds besides the pages: the kernels' tensors per value -- the definition
#: levels (1 byte), the values decoded back to back and scattered to their rows (8 bytes each at
#: most), the validity mask (1) and a conversion's copy (8) -- and per page byte the page buffer
#: and its host staging. Counted from the allocations, not measured.
TRANSIENT_PER_VALUE = 26
TRANSIENT_PER_BYTE = 2


def transient_bytes(values: int, page_bytes: int) -> int:
    """Bytes of temporary tensors decoding ``values`` values from ``page_bytes`` page bytes takes."""
    return TRANSIENT_PER_VALUE * values + TRANSIENT_PER_BYTE * page_bytes


@dataclass
class Skipped:
    """Data pages a row selection let the decoder leave alone (neither decompressed nor decoded)."""
    pages: int = 0
    of: int = 0
    nbytes: int = 0   # their compressed bytes
