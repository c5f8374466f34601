"""Files ``sluice datagen`` and ``sluice rewrite --for gpu`` write carry a page CRC in every page
header that matches the page's bytes (the rule the device decoder applies before nvCOMP may
take a page: ``decode/column.py`` ``_verified``), keep the generator's data and layout, and
answer as DuckDB does -- read by pyarrow and by the device decoder (which checks each CRC)."""

from __future__ import annotations

import zlib

import pyarrow.parquet as pq
import pytest

from sluice.datagen.checksums import add_page_checksums
from sluice.datagen.ssb import derive_ssb
from sluice.datagen.tpch import TPCH_TABLES, generate_tpch
from sluice.io.parquet.thrift import read_page_headers
from sluice.layout.rewrite import options_from, rewrite
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns, ssb_queries, tpch_queries


def page_crcs(path) -> tuple[int, int]:
    """(pages, pages whose CRC matches their body as stored) over every column chunk of ``path``;
    a CRC that does not match fails the test."""
    md = pq.read_metadata(path)
    raw = memoryview(open(path, "rb").read())
    pages = ok = 0
    for i in range(md.num_row_groups):
        for j in range(md.num_columns):
            cc = md.row_group(i).column(j)
            start = cc.dictionary_page_offset if cc.has_dictionary_page else cc.data_page_offset
            chunk = raw[start:start + cc.total_compressed_size]
            for h in read_page_headers(chunk):
                pages += 1
                if h.crc is not None:
                    assert zlib.crc32(chunk[h.body:h.body + h.compressed]) == h.crc, (path, cc.path_in_schema)
                    ok += 1
    return pages, ok


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen")
    # small: the device decoder runs in Triton's interpreter without a GPU (about 20 k values/s)
    generate_tpch(0.002, root / "tpch")
    derive_ssb(root / "tpch", root / "ssb")
    generate_tpch(0.002, root / "raw", tables=("lineitem",), page_checksums=False)
    return root


def test_generated_tables_have_page_crcs(generated):
    for t in TPCH_TABLES:
        pages, ok = page_crcs(generated / "tpch" / f"{t}.parquet")
        assert pages and ok == pages, t
    for f in sorted((generated / "ssb").glob("*.parquet")):
        pages, ok = page_crcs(f)
        assert pages and ok == pages, f.name
    pages, ok = page_crcs(generated / "raw" / "lineitem.parquet")
    assert pages and ok == 0  # what tpchgen-cli writes itself: the reason for the extra pass


def test_checksums_keep_data_and_layout(generated, tmp_path):
    src = generated / "raw" / "lineitem.parquet"
    dst = tmp_path / "lineitem.parquet"
    dst.write_bytes(src.read_bytes())
    add_page_checksums(dst)
    a, b = pq.ParquetFile(src), pq.ParquetFile(dst)
    assert a.schema_arrow == b.schema_arrow
    assert [a.metadata.row_group(i).num_rows for i in range(a.metadata.num_row_groups)] == \
        [b.metadata.row_group(i).num_rows for i in range(b.metadata.num_row_groups)]
    for j in range(a.metadata.num_columns):
        ca, cb = a.metadata.row_group(0).column(j), b.metadata.row_group(0).column(j)
        assert (ca.physical_type, ca.compression) == (cb.physical_type, cb.compression), ca.path_in_schema
        assert ("RLE_DICTIONARY" in ca.encodings) == ("RLE_DICTIONARY" in cb.encodings), ca.path_in_schema
        assert cb.is_stats_set
    assert a.read().equals(b.read())
    assert [p.name for p in tmp_path.iterdir()] == ["lineitem.parquet"]  # no temporary file left


@pytest.mark.parametrize("decoder", ["arrow", "device"])
@pytest.mark.parametrize("name", ["q01", "q06", "q12"])
def test_generated_files_answer_as_duckdb(name, decoder, generated, connect):
    if decoder == "device" and name == "q01":  # (q01 in Triton's interpreter: test_decoder_setting.py's, 25 s)
        pytest.skip("q01 on the device decoder is tests/decode/test_decoder_setting.py's")
    sql = tpch_queries()[name]
    ours = connect(generated / "tpch", decoder=decoder).sql(sql).to_arrow()
    theirs = duckdb_connect(generated / "tpch").sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


@pytest.mark.parametrize("decoder", ["arrow", "device"])
def test_generated_ssb_answers_as_duckdb(decoder, generated, connect):
    sql = ssb_queries()["q1.1"]
    ours = connect(generated / "ssb", decoder=decoder).sql(sql).to_arrow()
    compare(ours, duckdb_connect(generated / "ssb").sql(sql).to_arrow_table(), [])


@pytest.mark.parametrize("decoder", ["arrow", "device"])
def test_rewritten_for_gpu_has_matching_crcs(decoder, generated, tmp_path, connect):
    """``sluice rewrite --for gpu`` (small row groups: several per file) on files without CRCs --
    3,000 of the lineitem rows, 4 pages a column chunk (the preset's 100 tiny pages cost Triton's interpreter
    ~40 ms each)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    pq.write_table(pq.read_table(generated / "raw" / "lineitem.parquet").slice(0, 3_000), raw / "lineitem.parquet")
    out = tmp_path / "out"
    rewrite(raw, out, options_from("gpu", row_group_rows=1_000, pages_per_chunk=4))
    pages, ok = page_crcs(out / "lineitem.parquet")
    assert pages and ok == pages and pq.read_metadata(out / "lineitem.parquet").num_row_groups == 3
    sql = tpch_queries()["q01"]
    ours = connect(out, decoder=decoder).sql(sql).to_arrow()
    compare(ours, duckdb_connect(raw).sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
