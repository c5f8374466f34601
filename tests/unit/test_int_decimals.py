"""Decimals stored as integers, decoded as integers (``integer_decimals``): the footer rewrite
drops exactly the DECIMAL annotations of INT32/INT64 columns -- files of DuckDB and pyarrow, with
NULLs, field ids and wide decimals beside them -- and queries answer as DuckDB does with the
setting on and off; a footer it cannot rewrite is read as it is."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.io.parquet.int_decimals import _read_footer, integer_metadata, rewrite_footer
from sluice.testing.oracle import compare

SQL = ("select d4 % 3 as k, sum(d4) s4, sum(d15) s15, min(d18) m18, max(d38) x38, count(d15) c, "
       "sum(case when d15 > 100.5 then d4 end) sc from t group by 1 order by 1")


@pytest.fixture(scope="module")
def duck_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("intdec") / "t.parquet"
    duckdb.sql(f"""copy (select i::int as id,
        case when i % 7 = 0 then null else ((i % 9000 - 4500) / 100)::decimal(4,2) end as d4,
        ((i * 37 % 100000 - 50000) / 10)::decimal(15,2) as d15,
        case when i % 5 = 0 then null else (i * 1234567)::decimal(18,3) end as d18,
        (i::decimal(38,2) * 1000000000000) as d38,
        'x' || (i % 13) as s
        from range(20000) r(i)) to '{path}' (format parquet, row_group_size 3000)""")
    return path


def test_duckdb_decimals_stored_as_integers_are_rewritten(duck_file):
    md = pq.read_metadata(duck_file)
    phys = {md.schema.column(i).name: md.schema.column(i).physical_type for i in range(md.num_columns)}
    assert phys["d4"] == "INT32" and phys["d15"] == "INT64" and phys["d38"] == "FIXED_LEN_BYTE_ARRAY"
    patched, names = integer_metadata(str(duck_file), md)
    assert names == {"d4", "d15", "d18"}
    got = pq.ParquetFile(duck_file, metadata=patched).read(columns=["d4", "d15", "d18", "d38", "s"])
    want = pq.read_table(duck_file, columns=["d4", "d15", "d18", "d38", "s"])
    assert got.schema.field("d15").type == pa.int64() and got.schema.field("d4").type == pa.int32()
    assert got.column("d38").equals(want.column("d38")) and got.column("s").equals(want.column("s"))
    for name, scale in (("d4", 2), ("d15", 2), ("d18", 3)):
        unscaled = pa.compute.multiply(want.column(name).cast(pa.float64()), 10 ** scale)
        assert got.column(name).cast(pa.float64()).to_pylist() == \
            [None if v is None else round(v) for v in unscaled.to_pylist()], name


@pytest.mark.parametrize("on", [True, False])
def test_answers_with_and_without_the_rewrite(duck_file, on, connect):
    con = connect(duck_file.parent, integer_decimals=on)
    ours = con.sql(SQL).to_arrow()
    theirs = duckdb.sql(SQL.replace("from t", f"from '{duck_file}'")).to_arrow_table()
    compare(ours, theirs, [0], check_types=True)


def test_pyarrow_integer_decimals_with_field_ids(tmp_path, connect):
    """pyarrow's ``store_decimal_as_integer`` files carry field ids (SchemaElement field 9,
    after the removed annotation fields: its header is re-encoded)."""
    t = pa.table({"a": pa.array([1, None, 3], pa.int64()),
                  "d": pa.array([None, "1.25", "-7.50"], pa.string()).cast(pa.decimal128(9, 2)),
                  "e": pa.array(["123456789.123", "0.001", None], pa.string()).cast(pa.decimal128(18, 3))})
    schema = pa.schema([f.with_metadata({"PARQUET:field_id": str(i + 1)}) for i, f in enumerate(t.schema)])
    pq.write_table(t.cast(schema), tmp_path / "p.parquet", store_decimal_as_integer=True)
    md = pq.read_metadata(tmp_path / "p.parquet")
    patched, names = integer_metadata(str(tmp_path / "p.parquet"), md)
    assert names == {"d", "e"}
    assert [f.metadata for f in patched.schema.to_arrow_schema()] == [f.metadata for f in md.schema.to_arrow_schema()]
    got = connect(tmp_path).sql("select sum(d) d, max(e) e, min(e) f from p").to_arrow()
    want = duckdb.sql(f"select sum(d) d, max(e) e, min(e) f from '{tmp_path / 'p.parquet'}'").to_arrow_table()
    compare(got, want, check_types=True)


def test_files_without_integer_decimals_or_with_a_bad_footer_are_read_as_they_are(tmp_path, duck_file):
    pq.write_table(pa.table({"x": [1, 2], "d": pa.array(["1.5", "2.5"]).cast(pa.decimal128(5, 1))}),
                   tmp_path / "flba.parquet")  # pyarrow's default: FIXED_LEN_BYTE_ARRAY
    assert integer_metadata(str(tmp_path / "flba.parquet"), pq.read_metadata(tmp_path / "flba.parquet")) is None
    footer = _read_footer(str(duck_file))
    new, changed = rewrite_footer(footer)
    assert len(new) < len(footer) and len(changed) == 3
    bad = tmp_path / "bad.parquet"
    raw = duck_file.read_bytes()
    cut = raw[:-8 - len(footer)] + footer[: len(footer) // 2] + len(footer[: len(footer) // 2]).to_bytes(4, "little") + b"PAR1"
    bad.write_bytes(cut)
    assert integer_metadata(str(bad), pq.read_metadata(duck_file)) is None


def test_files_of_one_table_disagreeing_on_a_decimal_scale_are_refused(tmp_path, connect):
    # Every file is read (and its statistics taken) as the first file's types: a second file with
    # decimal(15,3) where the first has decimal(15,2) was read 10x off. Now one line.
    import sluice
    t = tmp_path / "t"
    t.mkdir()
    pq.write_table(pa.table({"d": pa.array(["1.25"]).cast(pa.decimal128(15, 2))}), t / "a.parquet")
    pq.write_table(pa.table({"d": pa.array(["1.250"]).cast(pa.decimal128(15, 3))}), t / "b.parquet")
    with pytest.raises(sluice.SluiceError, match="agree on column types"):
        connect(tmp_path).sql("select sum(d) from t").to_arrow()


def _view_file(path, tz=None):
    t = pa.table({"s": pa.array(["b", None, "a\u00e9", ""] * 50, pa.string_view()),
                  "l": pa.array(["x", "yy", None, "z"] * 50, pa.large_string()),
                  "d": pa.array(["1.25", None, "-3.50", "0"] * 50).cast(pa.decimal128(9, 2)),
                  "ts": pa.array([1, 2, None, 4] * 50, pa.timestamp("us", tz=tz))})
    pq.write_table(t, path, store_decimal_as_integer=True, row_group_size=60)
    return path


def test_string_views_read_as_plain_strings(tmp_path, connect):
    path = _view_file(tmp_path / "v.parquet")
    md = pq.read_metadata(path)
    assert md.schema.to_arrow_schema().field("s").type == pa.string_view()
    patched, names = integer_metadata(str(path), md, decimals=True, plain_strings=True)
    types = {f.name: f.type for f in patched.schema.to_arrow_schema()}
    assert names == {"d"} and types["s"] == types["l"] == pa.string() and types["d"] == pa.int32()
    assert types["ts"] == md.schema.to_arrow_schema().field("ts").type
    patched, names = integer_metadata(str(path), md, decimals=False, plain_strings=True)
    assert names == set() and patched.schema.to_arrow_schema().field("s").type == pa.string()
    sql = "select s, l, count(*) c, sum(d) d, max(ts) t from v group by s, l order by s, l"
    want = duckdb.sql(sql.replace("from v", f"from '{path}'")).to_arrow_table()
    for on in (True, False):
        compare(connect(tmp_path, plain_strings=on).sql(sql).to_arrow(), want, [0, 1])


def test_an_arrow_schema_that_changes_another_type_is_kept(tmp_path):
    # A time zone lives only in the Arrow schema: without it the column would read as UTC. The
    # decimals are still rewritten; the strings stay views.
    path = _view_file(tmp_path / "tz.parquet", tz="America/New_York")
    md = pq.read_metadata(path)
    patched, names = integer_metadata(str(path), md, decimals=True, plain_strings=True)
    a, b = md.schema.to_arrow_schema(), patched.schema.to_arrow_schema()
    assert names == {"d"} and b.field("ts").type == a.field("ts").type and b.field("s").type == pa.string_view()
    assert integer_metadata(str(path), md, decimals=False, plain_strings=True) is None
