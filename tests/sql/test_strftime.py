"""STRFTIME against DuckDB for every specifier DuckDB documents (``%-d`` once came back as the
text ``%-d``; ``%c`` / ``%x`` are DuckDB's ISO forms, not the C locale's), over dates,
timestamps and TIMESTAMP WITH TIME ZONE around year and week boundaries; an unknown
specifier is an error naming it."""

import datetime as dt

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.expr.functions.time_format import _PLAIN, _UNPADDED, _COMPOSITE
from sluice.testing.oracle import compare, duckdb_tables

SPECIFIERS = sorted(["%" + c for c in _PLAIN | set(_COMPOSITE)] + ["%-" + c for c in _UNPADDED] + ["%%"])


@pytest.fixture(scope="module")
def fmt_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("strftime")
    days = [dt.date(2001, 1, 1), dt.date(2021, 1, 3), dt.date(2020, 12, 28), dt.date(2024, 2, 29), dt.date(5, 3, 4),
            dt.date(1969, 12, 31), dt.date(9999, 12, 31), dt.date(2010, 1, 1), None, dt.date(2008, 12, 29)]
    stamps = [dt.datetime(2001, 1, 1, 0, 0, 0), dt.datetime(2020, 12, 31, 23, 59, 59, 123456),
              dt.datetime(5, 3, 4, 13, 5, 6, 789000), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
              dt.datetime(2024, 2, 29, 12, 0, 0), dt.datetime(2016, 1, 3, 11, 59, 59), None,
              dt.datetime(1999, 12, 31, 1, 2, 3, 4), dt.datetime(2021, 1, 4, 12, 30), dt.datetime(1970, 1, 1)]
    t = pa.table({"i": pa.array(range(10)), "d": pa.array(days, pa.date32()),
                  "ts": pa.array(stamps, pa.timestamp("us")),
                  "tz": pa.array(stamps, pa.timestamp("us", tz="UTC"))})
    pq.write_table(t, root / "t.parquet", row_group_size=4)
    return root


@pytest.fixture(scope="module")
def fmt_duck(fmt_dir):
    return duckdb_tables(fmt_dir)


@pytest.mark.parametrize("spec", SPECIFIERS)
def test_strftime_specifier(spec, fmt_dir, fmt_duck, connect):
    sql = f"select i, strftime(d, '<{spec}>'), strftime(ts, '{spec}'), strftime(tz, '{spec}') from t"
    compare(connect(fmt_dir).sql(sql).to_arrow(), fmt_duck.sql(sql).to_arrow_table(), check_types=True)


def test_strftime_mixed_format(fmt_dir, fmt_duck, connect, edge_settings):
    sql = ("select i, strftime(ts, 'at %-I:%M %p on %A, %B %-d %Y (day %j, week %V/%U/%W, %%)'), "
           "strftime(d, '%x|%c|%X') from t")
    compare(connect(fmt_dir, **edge_settings).sql(sql).to_arrow(), fmt_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("fmt", ["%q", "%-q", "%e", "%", "100%"])
def test_unknown_specifier_is_an_error(fmt, fmt_dir, fmt_duck, connect):
    sql = f"select strftime(d, '{fmt}') from t"
    with pytest.raises(duckdb.Error):
        fmt_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.PlanError, match="STRFTIME format"):
        connect(fmt_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select strptime('2020-01-05', '%Y-%m-%d'), strptime('5/1/2020 3:04 PM', '%d/%m/%Y %I:%M %p')",
    "select strptime('2020-1-5', '%Y-%m-%d'), strptime('Jan 05 2020', '%b %d %Y')",
    "select try_strptime('2021-02-29', '%Y-%m-%d'), try_strptime('2020-02-30', '%Y-%m-%d'), try_strptime('2020-02-29', '%Y-%m-%d')",
    "select strptime('20-12-31 23:59:58', '%y-%m-%d %H:%M:%S'), strptime('12/31/68', '%m/%d/%y'), strptime('12/31/69', '%m/%d/%y')",
    "select i, try_strptime(strftime(d, '%d.%m.%Y'), '%d.%m.%Y'), try_strptime(strftime(ts, '%Y%m%d %H%M'), '%Y%m%d %H%M') from t",
    "select try_strptime(x, '%Y%m%d') from (values ('20200105'), ('2020010'), (null), ('20201301')) v(x)",
    # the hour as DuckDB reads it: %I takes 12 as noon without %p, %p rejects hours above 12
    # and applies to %H too (Python turns a bare 12 into midnight and ignores %p after %H)
    "select x, try_strptime(x, '%H:%M %p'), try_strptime(x, '%I:%M %p') from (values ('20:03 PM'), ('8:03 PM'),"
    " ('12:03 AM'), ('12:03 pm'), ('0:03 AM'), ('0:03 PM'), ('11:03 am'), (null)) v(x)",
    "select x, try_strptime(x, '%I:%M'), try_strptime(x, '%H:%M') from (values ('12:03'), ('0:03'), ('13:03')) v(x)",
    "select try_strptime('Mon 30, December 30, 20:3:5 PM', '%a %d, %B %y, %H:%M:%S %p'), try_strptime('pm 3', '%p %I')",
])
def test_strptime(sql, fmt_dir, fmt_duck, connect, edge_settings):
    compare(connect(fmt_dir, **edge_settings).sql(sql).to_arrow(), fmt_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql, error", [
    ("select strptime('2020-01-05 10', '%Y-%m-%d')", sluice.errors.ExecutionError),
    ("select strptime('2020-01-05 10:00:00.5', '%Y-%m-%d %H:%M:%S.%f')", sluice.errors.UnsupportedError),
    ("select strptime('2021 366', '%Y %j')", sluice.errors.UnsupportedError),
    ("select strptime('2021-02-29', '%Y-%m-%d')", sluice.errors.ExecutionError),
])
def test_strptime_errors(sql, error, fmt_dir, connect):
    with pytest.raises(error):
        connect(fmt_dir).sql(sql).to_arrow()
