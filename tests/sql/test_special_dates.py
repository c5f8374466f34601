"""DuckDB's special date and timestamp values and the calendar's ends, against DuckDB.

'infinity' / '-infinity' reach Parquet as the extremes of the integer range; read as numbers they
were far-off real dates (``year(d)`` 5881580 where DuckDB says NULL, ``year(d) > 2020`` counted
them). sluice refuses them in one line when such a column is read -- with either decoder --
and answers queries that do not read it. Dates before year 1 print as DuckDB prints them
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
    con.execute(f"""copy (select * from (values
        (1, 'infinity'::date, '2020-01-01'::timestamp, timestamp_ms '2020-01-01'),
        (2, '2021-05-05'::date, '-infinity'::timestamp, 'infinity'::timestamp_ms),
        (3, '-infinity'::date, '2022-01-01', '2022-01-01')) v(i, d, t, tm)) to '{root / "inf.parquet"}'""")
    con.execute(f"""copy (select * from (values
        (1, '-0043-03-13'::date, '-0043-03-13 10:00:00'::timestamp, timestamp_ms '1900-01-01 00:00:00.5'),
        (2, '0001-01-01'::date, '0001-01-01 00:00:01'::timestamp, timestamp_ms '294246-12-31 23:59:59.999'),
        (3, '9999-12-31'::date, '294246-12-31 23:59:59.999999'::timestamp, timestamp_ms '-290308-12-22 00:00:00'),
        (4, '0000-12-31'::date, '1969-12-31 23:59:59.5'::timestamp, null)) v(i, d, t, tm)) to '{root / "ends.parquet"}'""")
    return root


@pytest.fixture(scope="module")
def special_duck(special_dir):
    con = duckdb.connect()
    for n in ("inf", "ends"):
        con.execute(f"create table {n} as select * from read_parquet('{special_dir / n}.parquet')")
    return con


@pytest.mark.parametrize("decoder", ["arrow", "device"])
@pytest.mark.parametrize("sql", ["select year(d) from inf", "select count(*) from inf where year(d) > 2020",
                                 "select t from inf", "select tm from inf", "select max(d) from inf"])
def test_infinite_values_are_refused(sql, decoder, special_dir, connect):
    with pytest.raises(sluice.errors.UnsupportedError, match="'infinity' / '-infinity'"):
        connect(special_dir, decoder=decoder).sql(sql).to_arrow()


@pytest.mark.parametrize("decoder", ["arrow", "device"])
def test_queries_that_do_not_read_them_answer(decoder, special_dir, special_duck, connect):
    sql = "select i, count(*) over () from inf where i > 1"
    compare(connect(special_dir, decoder=decoder).sql(sql).to_arrow(), special_duck.sql(sql).to_arrow_table())


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
