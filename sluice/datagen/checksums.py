"""Page CRCs on generated files: ``sluice datagen`` output is usable by the GPU path as it comes.

The device decoder hands nvCOMP only pages whose header carries a CRC-32 that matches their
bytes (``device_decompress_unverified=false``: a garbled page faulted an H200), and neither
tpchgen-cli nor tpcgen-cli (arrow-rs) writes page CRCs. So each file they write is written
once more with pyarrow's ``write_page_checksum``, keeping what they chose: the row groups (one
output row group per input row group), each column's codec, dictionary encoding where pyarrow's
writer keeps it (it falls back to plain as arrow-rs does), integer-stored decimals, statistics
and the page index. The schema, values and row order are unchanged; the new file replaces the
old one only when complete. The tables sluice writes itself (SSB, ClickBench) pass
:data:`CHECKSUM_WRITER` to their writers instead.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from sluice.io.permissions import in_place_of

#: What every Parquet writer of ``sluice datagen`` passes: a CRC-32 in every page header.
CHECKSUM_WRITER = {"write_page_checksum": True}

#: A footer's codec names as pyarrow's writer takes them (LZ4: pyarrow writes LZ4_RAW).
_CODECS = {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "ZSTD": "zstd",
           "LZ4": "lz4", "LZ4_RAW": "lz4"}


def add_page_checksums(path: str | Path) -> None:
    """Rewrite the Parquet file ``path`` in place with a CRC in every page header (see the module)."""
    path = Path(path)
    pf = pq.ParquetFile(path)
    md = pf.metadata
    codecs = {}
    if md.num_row_groups:
        rg = md.row_group(0)
        for j in range(rg.num_columns):
            cc = rg.column(j)
            codecs[cc.path_in_schema] = _CODECS.get(cc.compression, "snappy")
    tmp = path.with_name(f".{path.name}.crc.part")
    with in_place_of(path, tmp):
        with pq.ParquetWriter(tmp, pf.schema_arrow, compression=codecs or "snappy", use_dictionary=True,
                              write_statistics=True, store_decimal_as_integer=True, write_page_index=True,
                              **CHECKSUM_WRITER) as w:
            for i in range(md.num_row_groups):
                t = pf.read_row_group(i)
                w.write_table(t, row_group_size=max(1, t.num_rows))


def checksum_files(out: str | Path, tables: tuple[str, ...]) -> None:
    """Add page CRCs to every file of ``tables`` under ``out`` (``NAME.parquet`` or ``NAME/*.parquet``)."""
    out = Path(out)
    for t in tables:
        files = [out / f"{t}.parquet"] if (out / f"{t}.parquet").is_file() else sorted((out / t).glob("*.parquet"))
        for f in files:
            add_page_checksums(f)
