"""`sluice rewrite` / `sluice inspect`: round trips for every TPC-H table under each preset and
each explicit option, auto never growing a file, and the layout actually written."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.datagen.tpch import TPCH_TABLES, generate_tpch
from sluice.errors import ConfigError, DataError
from sluice.layout.inspect import inspect_file
from sluice.layout.pages import column_chunk_pages
from sluice.layout.rewrite import options_from, rewrite


@pytest.fixture(scope="module")
def small_tpch(tmp_path_factory):
    return generate_tpch(0.01, tmp_path_factory.mktemp("tpch001"))


def _norm(t: pa.Table) -> pa.Table:
    return t.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type)
                             for f in t.schema]))


def _same(a, b):
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.schema.names == tb.schema.names
    assert _norm(ta).equals(_norm(tb))


OPTIONS = {
    "preset_gpu": ("gpu", {}),
    "preset_cpu": ("cpu", {}),
    "plain": (None, {"encoding": "plain", "compression": "none"}),
    "dictionary": (None, {"encoding": "dictionary", "compression": "snappy"}),
    "delta": (None, {"encoding": "delta", "compression": "lz4"}),
    "byte_stream_split": (None, {"encoding": "byte_stream_split", "compression": "zstd:3"}),
    "keep_gzip": (None, {"encoding": "keep", "compression": "gzip"}),
    "brotli_small_groups": (None, {"compression": "brotli", "row_group_rows": 5000, "pages_per_chunk": 7}),
}


@pytest.mark.parametrize("opt", sorted(OPTIONS))
@pytest.mark.parametrize("table", TPCH_TABLES)
def test_round_trip(table, opt, small_tpch, tmp_path):
    preset, kw = OPTIONS[opt]
    src = small_tpch / f"{table}.parquet"
    out = tmp_path / f"{table}.parquet"
    (rep,) = rewrite(src, out, options_from(preset, **kw))
    _same(src, out)
    assert rep.rows == pq.read_metadata(src).num_rows
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left


@pytest.mark.parametrize("table", TPCH_TABLES)
def test_auto_never_grows_more_than_one_percent(table, tpch_dir, tmp_path):
    src = tpch_dir / f"{table}.parquet"
    (rep,) = rewrite(src, tmp_path / "out.parquet", options_from(None))
    assert rep.bytes_out <= 1.01 * rep.bytes_in, f"{rep.bytes_in} -> {rep.bytes_out}"


def test_layout_written_as_asked(small_tpch, tmp_path):
    out = tmp_path / "li.parquet"
    rewrite(small_tpch / "lineitem.parquet", out, options_from(None, row_group_rows=20_000, pages_per_chunk=10,
                                                                  compression="none", encoding="plain"))
    info = inspect_file(out)
    assert info["rows_per_group"]["max"] == 20_000
    md = pq.read_metadata(out)
    for j, c in enumerate(info["columns"]):
        assert c["statistics"] and c["page_index"]
        assert c["codec"] == ["UNCOMPRESSED"]
        pages = [p for p in column_chunk_pages(str(out), md.row_group(0).column(j)) if p.type != "DICTIONARY_PAGE"]
        assert len(pages) == 10  # a full 20,000-row group in pages of 2,000 rows


def test_gpu_preset_pages_and_groups(tpch_dir, tmp_path):
    out = tmp_path / "li.parquet"
    (rep,) = rewrite(tpch_dir / "lineitem.parquet", out, options_from("gpu"))
    info = inspect_file(out)
    assert info["row_groups"] == 1  # SF 0.1 lineitem (600k rows) fits one million-row group
    assert all(c["pages_per_chunk"] >= 100 for c in info["columns"])
    # compression only where it saves at least min_gain on the sample
    for c in rep.columns:
        if c.codec != "none":
            assert c.final_bytes <= 0.9 * c.encoded_bytes
    # every page carries a CRC, so nvCOMP may decompress it (device_decompress_unverified=false)
    from sluice.io.parquet.thrift import read_page_headers
    md = pq.read_metadata(out)
    raw = out.read_bytes()
    for j in range(md.num_columns):
        cc = md.row_group(0).column(j)
        start = cc.dictionary_page_offset or cc.data_page_offset
        heads = read_page_headers(raw[start:start + cc.total_compressed_size])
        assert heads and all(h.crc is not None for h in heads), cc.path_in_schema


def test_directory_rewrite_keeps_structure(small_tpch, tmp_path):
    reports = rewrite(small_tpch, tmp_path / "out", options_from("cpu"))
    assert len(reports) == len(TPCH_TABLES)
    for t in TPCH_TABLES:
        _same(small_tpch / f"{t}.parquet", tmp_path / "out" / f"{t}.parquet")


def test_engine_reads_rewritten_files(small_tpch, tmp_path, connect):
    from sluice.testing.oracle import compare, duckdb_connect
    from sluice.testing.queries import tpch_queries
    rewrite(small_tpch, tmp_path / "gpu", options_from("gpu", row_group_rows=20_000))
    rewrite(small_tpch, tmp_path / "delta", options_from(None, encoding="delta", compression="zstd"))
    for layout in ("gpu", "delta"):
        for name in ("q01", "q13", "q16"):  # comments and names may be delta-encoded strings now
            q = tpch_queries()[name]
            compare(connect(tmp_path / layout).sql(q).to_arrow(), duckdb_connect(small_tpch).sql(q).to_arrow_table())


def test_bad_inputs(tmp_path, small_tpch):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet" * 50)
    with pytest.raises(DataError, match="not a readable Parquet"):
        rewrite(bad, tmp_path / "o.parquet", options_from(None))
    with pytest.raises(DataError, match="does not exist"):
        rewrite(small_tpch / "nation.parquet", tmp_path / "no" / "dir" / "o.parquet", options_from(None))
    with pytest.raises(ConfigError, match="unknown codec"):
        options_from(None, compression="zip")
    with pytest.raises(ConfigError, match="unknown encoding"):
        options_from(None, encoding="fancy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]
