"""Timestamps against DuckDB: Parquet timestamp columns (microseconds and milliseconds),
literals and casts, +- INTERVAL from microseconds to years (dates become timestamps for
sub-day units), EXTRACT / DATE_PART and the HOUR() family, DATE_TRUNC and DATE_DIFF in every
unit, comparisons with dates, printing as DuckDB prints them; and REGEXP_EXTRACT. NULLs,
times before 1970 and sub-second parts included; default chunks and one-row chunks."""

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def ts_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timestamps")
    ts = [dt.datetime(2020, 1, 31, 10, 59, 7, 500000), dt.datetime(2020, 2, 29, 23, 0), None,
          dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 12, 31, 0, 0, 0, 1),
          dt.datetime(2000, 3, 1, 12, 30)]
    pq.write_table(pa.table({
        "t": pa.array(ts, pa.timestamp("us")),
        "ms": pa.array(ts, pa.timestamp("ms")),
        "d": pa.array([None if x is None else x.date() for x in ts]),
        "s": ["abc", "xbz", None, "q", "aab", "b"],
        "i": list(range(6)),
    }), root / "x.parquet", row_group_size=4)
    return root


QUERIES = {
    "columns_and_intervals": "select i, t, ms, t + interval 3 hour, t - interval '90 minutes', t + interval 1 month, "
                             "d + interval 5 hour, t + interval 2 day, t - interval 1 year from x",
    "extract": "select i, extract(hour from t), extract(minute from t), extract(second from t), "
               "extract(millisecond from t), extract(microsecond from t), extract(epoch from t), extract(doy from t), "
               "extract(isodow from d), extract(dow from t), extract(epoch from d) from x",
    "part_functions": "select i, hour(t), minute(t), second(t), dayofweek(d), dayofyear(d), epoch(t), "
                      "date_part('year', t), datepart('hour', t), date_part('month', d) from x",
    "date_trunc": "select i, date_trunc('hour', t), date_trunc('minute', t), date_trunc('second', t), "
                  "date_trunc('millisecond', t), date_trunc('day', t), date_trunc('month', t), date_trunc('week', t), "
                  "date_trunc('hour', d), date_trunc('month', d), date_trunc('year', date '2024-03-17') from x",
    "date_diff": "select i, date_diff('hour', t, timestamp '2020-03-01 00:00:00'), date_diff('minute', d, t), "
                 "date_diff('day', t, timestamp '2021-01-01 00:00:01'), date_diff('month', t, d + interval 40 day), "
                 "date_diff('second', t, t + interval 90 second), date_diff('millisecond', ms, t) from x",
    "casts_and_compare": "select i, cast(t as varchar), cast(t as date), cast(d as timestamp), "
                         "strftime(t, '%Y/%m/%d %H:%M:%S'), t > d, t = cast(d as timestamp), ms <= t from x",
    "filter_literals": "select i from x where t >= timestamp '2020-01-31 10:59:07.5' and t < '2021-01-01'::timestamp",
    "aggregates": "select min(t), max(t), count(distinct t), min(ms) from x",
    "group_by_hour": "select date_trunc('hour', t) h, count(*) from x group by h order by h nulls last",
    "constants": "select timestamp '2020-01-01 10:00:00' + interval 1 hour, cast('2020-05-06 07:08:09' as timestamp), "
                 "date '2020-01-01' + interval 36 hour",
    "order": "select i, t from x order by t desc nulls last",
    "regexp_extract": "select i, regexp_extract(s, 'b(c|z)', 1), regexp_extract(s, 'a+'), "
                      "regexp_extract(s, '(a)(b)', 2), regexp_extract(s, '[(]x') from x",
}


@pytest.mark.parametrize("chunk_rows", [None, 1], ids=["default_chunks", "one_row_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_timestamps(name, chunk_rows, ts_dir, connect):
    sql = QUERIES[name]
    ours = connect(ts_dir, **({"chunk_rows": chunk_rows} if chunk_rows else {})).sql(sql).to_arrow()
    compare(ours, duckdb_connect(ts_dir).sql(sql).to_arrow_table(), [0] if name == "order" else None)


@pytest.mark.parametrize("sql,match", [
    ("select (t - t) + (t - t) from x", "adding or subtracting INTERVAL"),
    ("select t at time zone 'Europe/Berlin' from x", "AT TIME ZONE"),
])
def test_timestamp_refusals(sql, match, ts_dir, connect):
    with pytest.raises(UnsupportedError, match=match):
        connect(ts_dir).sql(sql).to_arrow()
