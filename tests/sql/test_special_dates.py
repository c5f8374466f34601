"""DuckDB's special date and timestamp values and the calendar's ends, against DuckDB.

'infinity' / '-infinity' reach Parquet as the extremes of the integer range, and sluice keeps
them so (sluice.kernels.infinite): read with either decoder, compared, sorted, grouped, joined
(ASOF too), printed, cast, and through the calendar functions as DuckDB answers them (a year of
an infinity is NULL, an infinity plus a day is itself, two timestamps' difference raises) --
never as the far-off real dates their integers would be (``year(d)`` 5881580). What DuckDB
answers and sluice does not compute (STRFTIME of one, say) is refused in one line. Dates before year 1 print as DuckDB prints them
(``0044-03-13 (BC)``), timestamps past year 9999 too; a typed literal's ``::`` applies to it
(``DATE '2020-01-01'::VARCHAR`` is a VARCHAR)."""

import duckdb
import pytest

import sluice
from sluice.testing.oracle import compare


@pytest.fixture(scope="module")
def special_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("special_dates")
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(f"""copy (select * from (values
        (1, 'infinity'::date, '2020-01-01'::timestamp, timestamp_ms '2020-01-01', 'infinity'::timestamptz),
        (2, '2021-05-05'::date, '-infinity'::timestamp, 'infinity'::timestamp_ms, '2020-01-01 10:00+00'),
        (3, '-infinity'::date, 'infinity', '-infinity'::timestamp_ms, '-infinity'),
        (4, '2020-01-01'::date, '2021-06-01 10:00', '2021-06-01 09:00', '2021-06-01 09:00+00'),
        (5, null, null, null, null)) v(i, d, t, tm, tz)) to '{root / "inf.parquet"}'""")
    con.execute(f"""copy (select * from (values
        (1, '-0043-03-13'::date, '-0043-03-13 10:00:00'::timestamp, timestamp_ms '1900-01-01 00:00:00.5'),
        (2, '0001-01-01'::date, '0001-01-01 00:00:01'::timestamp, timestamp_ms '294246-12-31 23:59:59.999'),
        (3, '9999-12-31'::date, '294246-12-31 23:59:59.999999'::timestamp, timestamp_ms '-290308-12-22 00:00:00'),
        (4, '0000-12-31'::date, '1969-12-31 23:59:59.5'::timestamp, null)) v(i, d, t, tm)) to '{root / "ends.parquet"}'""")
    return root


@pytest.fixture(scope="module")
def special_duck(special_dir):
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for n in ("inf", "ends"):
        con.execute(f"create table {n} as select * from read_parquet('{special_dir / n}.parquet')")
    return con


#: Queries over the infinities, each answered as DuckDB answers it.
INFINITE = {
    "as_text": "select i, d::varchar, t::varchar, tm::varchar, tz::varchar from inf",
    "values": "select i, d, t, tm, tz from inf",
    "parts": "select i, year(d), month(t), hour(tm), dayofweek(d), dayname(d), monthname(t), last_day(d), "
             "extract(epoch from t), date_diff('day', d, date '2020-01-01') from inf",
    "arithmetic": "select i, (d + 1)::varchar, (d - 3)::varchar, (t + interval 1 day)::varchar, "
                  "(tm - interval 2 hour)::varchar, date_trunc('month', t)::varchar from inf",
    "casts": "select i, d::timestamp::varchar, t::date::varchar, tz::date::varchar, tm::timestamptz::varchar from inf",
    "isinf": "select i, isinf(d), isfinite(d), isinf(t), isfinite(tz), isinf(tm) from inf",
    "strftime": "select i, strftime(d, '%Y-%m-%d'), strftime(t, 'x%H'), strftime(tz, '%c') from inf",
    "filter": "select i from inf where d > date '2020-01-01' or t < timestamp '1900-01-01'",
    "order": "select i, d from inf order by d desc nulls last, i",
    "aggregate": "select min(d), max(d), min(t), max(t), max(tm), min(tz), count(distinct d), count(distinct t) from inf",
    "group": "select d, count(*), max(t) from inf group by d",
    "join": "select a.i, b.i from inf a join inf b on a.t = b.t",
    "asof": "select a.i, b.i, b.t from inf a asof left join inf b on a.d >= b.t",
    "asof_strict": "select a.i, b.i from inf a asof join inf b on a.t > b.tm",
    "window": "select i, lag(t) over (order by t, i), max(d) over (order by i rows 1 preceding) from inf",
    "literals": "select 'infinity'::date > d, '-infinity'::timestamp < t, ' Inf'::date, '-INFINITY'::timestamp, "
                "try_cast('infinity' as timestamptz) from inf",
}


@pytest.mark.parametrize("decoder", ["arrow", "device"])
@pytest.mark.parametrize("name", sorted(INFINITE))
def test_infinite_values(name, decoder, special_dir, special_duck, connect, edge_settings):
    sql = INFINITE[name]
    ours = connect(special_dir, decoder=decoder, **edge_settings).sql(sql).to_arrow()
    compare(ours, special_duck.sql(sql).to_arrow_table(), [0, 1] if "order by d" in sql else None)


@pytest.mark.parametrize("sql", ["select t - timestamp '2020-01-01' from inf",
                                 "select t - tm from inf where i = 3"])
def test_infinite_differences_raise(sql, special_dir, special_duck, connect):
    """DuckDB's error: an infinite timestamp has no distance to another."""
    with pytest.raises(duckdb.Error, match="infinite"):
        special_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.ExecutionError, match="infinite"):
        connect(special_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", ["select d - date '2020-01-01' from inf", "select date '2020-01-01' - d from inf where i = 3"])
def test_what_sluice_does_not_compute_is_refused(sql, special_dir, connect):
    """DuckDB answers these (a date difference of its integers: 2147465385 days); sluice refuses
    in one line rather than compute from an infinity's integer."""
    with pytest.raises(sluice.errors.UnsupportedError, match="'infinity' / '-infinity'"):
        connect(special_dir).sql(sql).to_arrow()


def test_queries_over_finite_rows_answer_alike(special_dir, special_duck, connect):
    sql = "select i, strftime(t, '%Y'), d - date '2020-01-01' from inf where isfinite(t) and isfinite(d)"
    compare(connect(special_dir).sql(sql).to_arrow(), special_duck.sql(sql).to_arrow_table())


QUERIES = {
    "parts": "select i, year(d), month(d), day(d), year(t), hour(t), dayofweek(d), year(tm) from ends",
    "as_text": "select i, d::varchar, t::varchar, tm::varchar from ends",
    "arithmetic": "select i, (d + 1)::varchar, (t + interval 1 second)::varchar, date_trunc('year', d)::varchar from ends",
    "order": "select i from ends order by d, t",
    "strftime": "select i, strftime(d, '%Y-%m-%d %j %V %a'), strftime(t, '%c %f') from ends",
    "typed_literal_cast": "select date '2020-01-01'::varchar, timestamp '2020-01-01 10:00:00.5'::varchar, "
                          "typeof(date '2020-01-01'::varchar)",
}


@pytest.mark.parametrize("decoder", ["arrow", "device"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_calendar_ends(name, decoder, special_dir, special_duck, connect):
    sql = QUERIES[name]
    if "typeof" in sql:  # sluice has no TYPEOF: compare the values and the types apart
        sql = sql.rsplit(",", 1)[0]
    ours = connect(special_dir, decoder=decoder).sql(sql).to_arrow()
    compare(ours, special_duck.sql(sql).to_arrow_table(), [0] if "order by" in sql else None, check_types=True)


@pytest.mark.parametrize("decoder", ["arrow", "device"])
def test_millisecond_timestamps_at_int64_ends(decoder, tmp_path, connect, monkeypatch):
    """TIMESTAMP_MS widened to microseconds: the int64 extremes but one are DuckDB's infinities
    and stay so; the int64 minimum (its own absolute value) is out of range, not wrapped."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sluice.errors import DataError
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    pq.write_table(pa.table({"t": pa.array([5, 2 ** 63 - 1, -(2 ** 63 - 1)], pa.timestamp("ms"))}), tmp_path / "x.parquet")
    sql = "select t::varchar as v from x"
    got = connect(tmp_path, decoder=decoder).sql(sql).to_arrow()
    compare(got, duckdb.sql(f"select t::varchar as v from read_parquet('{tmp_path}/x.parquet')").to_arrow_table())
    pq.write_table(pa.table({"t": pa.array([-2 ** 63, 5], pa.timestamp("ms"))}), tmp_path / "x.parquet")
    with pytest.raises(DataError):
        connect(tmp_path, decoder=decoder).sql(sql).to_arrow()
