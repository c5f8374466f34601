"""TIME_BUCKET against DuckDB: DATEs (BC, 'infinity') and TIMESTAMPs bucketed by days, weeks,
hours and minutes (from 2000-01-03) and by months and years (from 2000-01), with offsets and
origins (a DATE or TIMESTAMP), NULL widths, offsets and origins; DuckDB's errors for widths
not above zero, months with days, and int32 month overflow. Compared as text (BC values)."""

import duckdb
import pytest

from sluice.errors import ExecutionError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables

DATES = ["-infinity", "3000-01-02 (BC)", "1024-04-10 (BC)", "0044-06-15 (BC)", "0794-11-15", "1700-01-01", "1832-05-03",
         "1897-07-05", "1906-02-08", "1946-09-14", "2000-01-01", "2000-01-03", "2004-05-20", "2032-12-06", "infinity"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("time_bucket")
    con = duckdb.connect()
    values = ", ".join(f"({i}, '{d}'::date)" for i, d in enumerate(DATES)) + ", (99, NULL)"
    con.execute(f"create table dates as select * from (values {values}) v(i, d)")
    con.execute(f"copy dates to '{root}/dates.parquet'")
    con.execute("copy (select i, d::timestamp + (i * 25207 + 61) * interval 1 second as t from dates where isfinite(d)) "
                f"to '{root}/ts.parquet'")
    return root


def _text(*exprs):
    return ", ".join(f"cast({x} as varchar)" for x in exprs)


@pytest.mark.parametrize("exprs", [
    ["time_bucket('3 days'::interval, d)", "time_bucket('3 years'::interval, d)", "time_bucket(interval 10 day, d)"],
    ["time_bucket('4 days'::interval, d, '6 hours'::interval)", "time_bucket('2 weeks'::interval, d, '6 days'::interval)"],
    ["time_bucket('3 months'::interval, d, '1970-01-04'::date)", "time_bucket('3 months'::interval, d, '6 days'::interval)"],
    ["time_bucket('5 days'::interval, d, '1970-01-04'::date)", "time_bucket('2 months'::interval, d)",
     "time_bucket('1 day -3600 seconds'::interval, d)"],
    ["time_bucket(null::interval, d)", "time_bucket('3 months'::interval, d, null::interval)",
     "time_bucket('3 years'::interval, d, null::date)"],
])
def test_dates_as_duckdb(exprs, data, connect):
    sql = f"select i, {_text(*exprs)} from dates"
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("exprs", [
    ["time_bucket('5 hours'::interval, t)", "time_bucket('90 minutes'::interval, t, '2000-01-01 00:07:00'::timestamp)"],
    ["time_bucket('1 month'::interval, t)", "time_bucket('7 months'::interval, t, '1 hour'::interval)"],
    ["time_bucket(interval 3 day, t, '-6 hours'::interval)", "time_bucket('1 week'::interval, t, '1999-12-30'::date)",
     "time_bucket('1 year'::interval, t, '1999-12-30 10:00'::timestamp)"],
])
def test_timestamps_as_duckdb(exprs, data, connect):
    sql = f"select i, {_text(*exprs)} from ts"
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [
    ("select time_bucket('-1 month'::interval, '2019-04-05'::date)", ExecutionError),
    ("select time_bucket('-3 hours'::interval, '2019-04-05'::date)", ExecutionError),
    ("select time_bucket('1 month 1 day'::interval, '2018-05-05'::date)", ExecutionError),
    ("select time_bucket('-2 days'::interval, d) from dates", ExecutionError),
    ("select time_bucket('2 months 3 hours'::interval, t) from ts", ExecutionError),
    ("select time_bucket(INTERVAL '2147483647' MONTH, DATE '1700-01-01', DATE '1800-01-01')", ExecutionError),
])
def test_duckdb_errors(sql, error, data, connect):
    with pytest.raises(duckdb.Error, match="Period|Month intervals|Overflow"):
        duckdb_tables(data).sql(sql).fetchall()
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", ["select time_bucket('-1 month'::interval, null::date)",
                                 "select time_bucket('1 month 1 day'::interval, null::date)",
                                 "select i, time_bucket('-3 hours'::interval, d) from dates where d is null"])
def test_errors_need_a_value(sql, data, connect):
    """DuckDB's width errors come from a row that is not NULL: a NULL value's bucket is NULL."""
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["select time_bucket('1 week'::interval, t::timestamptz) from ts",
                                 "select time_bucket('1 week'::interval, t, 'Europe/Berlin') from ts",
                                 "select time_bucket('3 days'::interval, d, '2 months'::interval) from dates"])
def test_refused(sql, data, connect):
    with pytest.raises(UnsupportedError):
        connect(str(data)).sql(sql).to_arrow()
