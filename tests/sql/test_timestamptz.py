"""TIMESTAMP WITH TIME ZONE against DuckDB (TimeZone = UTC, sluice's session zone): Parquet
columns written with a zone (UTC and Europe/Berlin: both instants), literals with offsets,
casts to and from strings, dates and naive timestamps, comparisons across the three, EXTRACT,
DATE_TRUNC, DATE_DIFF, +- INTERVAL, aggregates, grouping, ordering and joins; default chunks and
one-row chunks."""

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def tz_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timestamptz")
    ts = [dt.datetime(2020, 1, 31, 23, 59, 7, 500000, tzinfo=UTC), dt.datetime(2020, 2, 29, 1, 0, tzinfo=UTC), None,
          dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), dt.datetime(2024, 12, 31, 0, 0, 0, 1, tzinfo=UTC),
          dt.datetime(2000, 3, 1, 12, 30, tzinfo=UTC)]
    pq.write_table(pa.table({
        "i": list(range(6)),
        "tz": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "berlin": pa.array(ts, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("ms", tz="Europe/Berlin")),
        "naive": pa.array([None if x is None else x.replace(tzinfo=None) for x in ts], pa.timestamp("us")),
        "d": pa.array([None if x is None else x.date() for x in ts]),
    }), root / "x.parquet", row_group_size=4)
    pq.write_table(pa.table({"k": pa.array(ts[:2] + ts[4:], pa.timestamp("us", tz="UTC")), "v": [10, 20, 30, 40]}),
                   root / "y.parquet")
    return root


QUERIES = {
    "columns": "select i, tz, berlin, naive from x",
    "extract_and_trunc": "select i, extract(hour from tz), extract(day from berlin), extract(epoch from tz), "
                         "date_trunc('day', tz), date_trunc('hour', berlin), date_trunc('month', tz) from x",
    "intervals": "select i, tz + interval 3 hour, tz - interval 1 day, berlin + interval 1 month from x",
    "casts": "select i, cast(tz as varchar), cast(tz as date), cast(tz as timestamp), cast(naive as timestamptz), "
             "cast(d as timestamptz) from x",
    "compare_across_types": "select i, tz = naive, tz = berlin, tz > d, tz < timestamp '2020-02-01 00:00:00', "
                            "tz >= timestamptz '2020-02-29 02:00:00+01' from x",
    "literals": "select timestamptz '2020-01-01 10:00:00+02', cast('2021-06-01 12:00:00' as timestamptz), "
                "cast('2021-06-01 12:00:00-05' as timestamp with time zone)",
    "date_diff": "select i, date_diff('hour', tz, timestamptz '2020-03-01 00:00:00+00'), date_diff('day', d, tz) from x",
    "aggregates": "select min(tz), max(berlin), count(distinct tz), min(tz) < max(naive) from x",
    "group_order": "select date_trunc('year', tz) y, count(*) from x group by y order by y nulls last",
    "join": "select x.i, y.v from x join y on x.tz = y.k order by x.i",
    "filter": "select i from x where tz between timestamptz '2000-01-01 00:00:00+00' and '2021-01-01'::timestamptz",
}


@pytest.mark.parametrize("chunk_rows", [None, 1], ids=["default_chunks", "one_row_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_timestamptz_against_duckdb(tz_dir, connect, name, chunk_rows):
    sql = QUERIES[name]
    con = connect(tz_dir, **({"chunk_rows": chunk_rows} if chunk_rows else {}))
    ours = con.sql(sql).to_arrow()
    theirs = duckdb_connect(tz_dir).sql(sql).to_arrow_table()
    compare(ours, theirs, [0] if "order by" in sql else None)


def test_timestamptz_types_and_printing(tz_dir, connect):
    con = connect(tz_dir)
    t = con.sql("select tz, berlin, naive from x").to_arrow()
    assert t.schema.types[:2] == [pa.timestamp("us", tz="UTC")] * 2 and t.schema.types[2] == pa.timestamp("us")
    desc = con.sql("describe x").to_arrow().to_pylist()
    assert {r["column_name"]: r["column_type"] for r in desc}["tz"] == "TIMESTAMP WITH TIME ZONE"
