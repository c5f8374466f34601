"""Timestamp differences (INTERVAL) against DuckDB: TIMESTAMP - TIMESTAMP, with dates and
TIMESTAMPTZ, printed and returned as DuckDB gives them (whole days, then the time, both with
the difference's sign), EXTRACT of every field, comparisons with each other and with INTERVAL
constants, adding one back to a timestamp, ``INTERVAL (x) HOUR`` of a column amount, MIN / MAX / DISTINCT / GROUP BY / ORDER BY; NULLs,
negative and sub-second differences; default and one-row chunks. What DuckDB's intervals do that
a difference cannot (months, adding intervals, SUM/AVG) is refused."""

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def iv_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("intervals")
    t1 = [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 3, 1, 0, 0, 500000), None, dt.datetime(2020, 2, 28, 23, 0),
          dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(2020, 1, 1, 10, 0)]
    t2 = [dt.datetime(2020, 3, 1), dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1), dt.datetime(2020, 3, 1, 1, 30),
          dt.datetime(2000, 1, 1), dt.datetime(2020, 1, 1, 9, 30)]
    pq.write_table(pa.table({
        "i": list(range(6)), "t1": pa.array(t1, pa.timestamp("us")), "t2": pa.array(t2, pa.timestamp("us")),
        "d": pa.array([x.date() for x in t2]),
        "z": pa.array([None if x is None else x.replace(tzinfo=dt.timezone.utc) for x in t1], pa.timestamp("us", tz="UTC")),
    }), root / "x.parquet", row_group_size=4)
    return root


QUERIES = {
    "differences": "select i, t2 - t1, t1 - t2, t2 - t2, d - t1, t1 - d, z - t2, t2 - z from x",
    "extract": "select i, extract(epoch from t2 - t1), extract(day from t2 - t1), extract(hour from t2 - t1), "
               "extract(minute from t1 - t2), extract(second from t2 - t1), extract(millisecond from t1 - t2), "
               "extract(microsecond from t1 - t2), date_part('hour', t1 - t2), extract(month from t2 - t1) from x",
    "compare": "select i, t2 - t1 > interval 1 day, t2 - t1 <= interval '36 hours', interval 30 minute < t2 - t1, "
               "t2 - t1 = t1 - t2, t2 - t1 > t2 - d from x",
    "filter": "select i from x where t2 - t1 >= interval 2 day order by i",
    "add_back": "select i, t1 + (t2 - t1), (t2 - t1) + t1, t2 - (t2 - t1) = t1, d + (t2 - t1) from x",
    "as_text": "select i, cast(t2 - t1 as varchar), cast(t1 - t2 as varchar) from x",
    "aggregates": "select min(t2 - t1), max(t2 - t1), count(distinct t2 - t1), count(t2 - t1) from x",
    "group_order": "select t2 - t1 as gap, count(*) from x group by gap order by gap nulls last",
    # INTERVAL (x) unit with a column amount (DuckDB's to_hours(x) ...): hours down to microseconds,
    # and days / weeks of a date (a DATE here: the same instant as DuckDB's TIMESTAMP)
    "column_amounts": "select i, t1 + INTERVAL (i) HOUR, t2 - INTERVAL (i * 7) MINUTE, INTERVAL (i) SECOND + t1, "
                      "(d + INTERVAL (i) DAY)::TIMESTAMP, (d - INTERVAL (i) WEEK)::TIMESTAMP, d + INTERVAL (i) HOUR, "
                      "t1 + INTERVAL (i - 3) MILLISECOND, t1 + INTERVAL (-485) MICROSECOND, t1 + INTERVAL (NULL) HOUR, "
                      "z + INTERVAL (i) MINUTE from x",
}


@pytest.mark.parametrize("chunk_rows", [None, 1], ids=["default_chunks", "one_row_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_intervals_against_duckdb(iv_dir, connect, name, chunk_rows):
    sql = QUERIES[name]
    con = connect(iv_dir, **({"chunk_rows": chunk_rows} if chunk_rows else {}))
    ours = con.sql(sql).to_arrow()
    compare(ours, duckdb_connect(iv_dir).sql(sql).to_arrow_table(), [0] if "order by" in sql else None)


def test_intervals_print_as_duckdb_does(iv_dir):
    from sluice.render import format_rows
    import sluice
    sql = "select i, t2 - t1 as gap from x order by i"
    ours = format_rows(sluice.connect(iv_dir, device="cpu").sql(sql).to_arrow(), "csv")
    theirs = duckdb_connect(iv_dir).execute(f"select i, cast(gap as varchar) as gap from ({sql})").fetchall()
    assert ours.splitlines()[1:] == [f"{i},{'' if g is None else g}" for i, g in theirs]
    assert ours.splitlines()[1] == "0,60 days" and ours.splitlines()[2] == "1,-2 days -01:00:00.5"


@pytest.mark.parametrize("sql,match", [
    ("select sum(t2 - t1) from x", "SUM of INTERVAL"),
    ("select avg(t2 - t1) from x", "AVG of INTERVAL"),
    ("select (t2 - t1) + (t2 - t1) from x", "adding or subtracting INTERVAL"),
    ("select t2 - t1 > interval 1 month from x", "INTERVAL 1 MONTH"),
    ("select t1 + interval (i) month from x", "non-constant number of months"),
])
def test_interval_refusals(iv_dir, connect, sql, match):
    with pytest.raises(UnsupportedError, match=match):
        connect(iv_dir).sql(sql).to_arrow()
