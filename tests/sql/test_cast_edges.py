"""Casts at their limits, against DuckDB: a narrower DECIMAL checks the precision (TRY_CAST
gives NULL, CAST raises; 100::DECIMAL(3,0) to DECIMAL(2,0) once passed), hexadecimal strings
beyond the range (Arrow read '0x80' as -128), DOUBLE to DECIMAL rounding half away from zero
on the scaled double (1.45 -> 1.5), strings with more digits than the scale (rounded), DECIMAL
to VARCHAR with every digit of the scale ('0.0000000000', not '0E-10'), ROUND's result scale."""

import decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.testing.oracle import compare, duckdb_tables

D = decimal.Decimal


@pytest.fixture(scope="module")
def cast_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("casts")
    t = pa.table({
        "i": pa.array(range(8), pa.int32()),
        "d": pa.array([D("100"), D("99"), D("-100"), D("0"), None, D("-99"), D("12"), D("5")], pa.decimal128(3, 0)),
        "e": pa.array([D("1.25"), D("-1.25"), D("9.95"), D("0.05"), D("-0.04"), None, D("99.99"), D("0")],
                      pa.decimal128(4, 2)),
        "f": pa.array([1.45, -1.45, 2.5, 0.125, 1e20, None, -0.5, 99.94], pa.float64()),
        "r": pa.array([1.45, -1.45, 2.5, 0.125, 3.0e9, None, -0.5, 99.95], pa.float32()),
        "s": pa.array(["0x80", "0x7f", "0xFF", "0x7fff", "0x10000", "12", None, "-128"]),
        "n": pa.array(["1.25", "1.249", "-1.25", "9.96", "0.05", "1.2345678901234", None, "7"]),
        "m": pa.array(["0.5", " 12 ", "-2.5", "1e2", "127.5", ".5", "+7", "123456789012345678901"]),
        "b": pa.array([127, 128, -128, -129, 32767, 2 ** 31, None, -2 ** 40], pa.int64()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=3)
    return root


@pytest.fixture(scope="module")
def cast_duck(cast_dir):
    return duckdb_tables(cast_dir)


QUERIES = {
    "try_narrow_decimal": "select i, try_cast(d as decimal(2,0)), try_cast(e as decimal(3,2)), try_cast(e as decimal(2,1)) from t",
    "try_narrow_literal": "select try_cast(100::decimal(3,0) as decimal(2,0)), try_cast(99::decimal(3,0) as decimal(2,0))",
    "try_hex_strings": "select i, try_cast(s as tinyint), try_cast(s as smallint), try_cast(s as integer) from t",
    "hex_literals": "select try_cast('0x80' as tinyint), try_cast('0x7f' as tinyint), try_cast('0xFF' as smallint), "
                    "'0x10'::int, try_cast('0xffffffffffffffff' as bigint), try_cast('0x8000000000000000' as bigint)",
    "double_to_decimal": "select i, f::decimal(3,1), r::decimal(4,1), f::decimal(18,2) from t where i <> 4",
    "try_double_to_decimal": "select i, try_cast(f as decimal(3,1)), try_cast(f as decimal(6,2)) from t",
    "literal_double_to_decimal": "select 1.45::double::decimal(3,1), -1.45::double::decimal(3,1), 2.5::float::decimal(4,0)",
    "strings_to_decimal": "select i, try_cast(n as decimal(2,1)), try_cast(n as decimal(10,3)), try_cast(n as decimal(4,0)) from t",
    "decimal_to_varchar": "select i, d::varchar, e::varchar, (e * 0)::varchar, (-e)::varchar from t",
    "zero_scale_ten": "select (0::decimal(18,10))::varchar, (-0.05)::varchar, (-1.5)::varchar, 1.50::varchar",
    "no_integer_digit": "select '0.1'::decimal(3,3)::varchar, '-0.1'::decimal(3,3)::varchar, 0.5::varchar, "
                        "(0.5::decimal(3,3) * 0.5::decimal(3,3))::varchar, (0.5::decimal(3,3) + 0.5::decimal(3,3))::varchar, "
                        "sum(0.5::decimal(3,3))::varchar, min(0.5::decimal(3,3))::varchar, (0::decimal(3,3))::varchar",
    "round_scale": "select i, round(e, 1), round(e, 1)::varchar, round(e)::varchar, round(e, -1)::varchar, "
                   "round(e, 5)::varchar from t",
    "strings_to_integers": "select i, try_cast(m as tinyint), try_cast(m as integer), try_cast(m as bigint) from t",
    "strings_to_decimals_wide": "select i, try_cast(m as decimal(5,1)), try_cast(m as decimal(18,0)) from t",
    "real_as_text": "select i, r::varchar, (r * 1e6::real)::varchar, (r / 1e6::real)::varchar from t",
    "try_narrow_integers": "select i, try_cast(b as tinyint), try_cast(b as smallint), try_cast(b as integer) from t",
    "try_float_to_int": "select i, try_cast(f as integer), try_cast(r as smallint), try_cast(f as bigint) from t",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_cast_edges(name, cast_dir, cast_duck, connect, edge_settings):
    sql = QUERIES[name]
    compare(connect(cast_dir, **edge_settings).sql(sql).to_arrow(), cast_duck.sql(sql).to_arrow_table(),
            check_types=True)


@pytest.mark.parametrize("sql", ["select try_cast('epoch' as date)"])
def test_special_date_strings_are_refused(sql, cast_dir, connect):
    """DuckDB reads it (as a value sluice does not parse); NULL would be a wrong answer. ('infinity'
    and '-infinity' are read: tests/sql/test_special_dates.py.)"""
    with pytest.raises(sluice.errors.UnsupportedError):
        connect(cast_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select cast(100::decimal(3,0) as decimal(2,0))",
    "select cast(d as decimal(2,0)) from t",
    "select '0x80'::tinyint",
    "select cast(s as tinyint) from t where i = 0",
    "select cast(f as decimal(3,1)) from t",
    "select 99.96::decimal(3,1)",
    "select cast(b as tinyint) from t",
])
def test_casts_duckdb_refuses_raise(sql, cast_dir, cast_duck, connect):
    with pytest.raises(duckdb.Error):
        cast_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.ExecutionError):
        connect(cast_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select '-0.00000000000000000000000000000009223372036854775807e50'::bigint",  # a double rounded it to INT64_MIN
    "select '9.223372036854775807e18'::bigint, '1.5e1'::int, try_cast('1e40' as bigint), try_cast('1e-3' as integer)",
    "select cast('0.4999999999' as int), cast('2.4999999999' as int), cast('-0.49999999999' as int)",  # rounded once
    "select trunc(9223372036854775807, -19), trunc(5::tinyint, -3), round(1.7976931348623157e308, -308)",
    "select '1.25e1'::decimal(5,1), '-1.23456789012345678e5'::decimal(18,6)",
    "select '*' glob '\\*', '\\' glob '\\\\', 'xx*' glob '*\\*', 'xxa' glob '*\\*'",
])
def test_exact_exponents_and_escapes(sql, cast_dir, cast_duck, connect):
    compare(connect(cast_dir).sql(sql).to_arrow(), cast_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", [
    # type parameters DuckDB's binder refuses (they met int(): internal errors, or were ignored)
    "select '1.5'::DECIMAL('hello')", "select '1.5'::DECIMAL(3.2)", "select '1.5'::DECIMAL((-17))",
    "select '1.5'::DECIMAL(18, 2.5)", "select '1.5'::DECIMAL(0)", "select '1.5'::DECIMAL(39)",
    "select '1.5'::DECIMAL(3, 4)", "select '1.5'::DECIMAL(18, 2, 3)", "select try_cast('1' as decimal(3.2))",
    "select 1::double(5)", "select 1::int4(3)", "select 1::bool(3)", "select '2020-01-01'::date(3)",
    "select 1::float(0)", "select 1::float(54)", "select '1'::varchar(1.5)", "select '1'::varchar(3, 4)",
])
def test_type_parameters_duckdb_refuses(sql, cast_dir, cast_duck, connect):
    with pytest.raises(duckdb.Error):
        cast_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.PlanError):
        connect(cast_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    # FLOAT(p) is REAL up to 24 bits, DOUBLE beyond (float(30) was a REAL: 1.1 came back as 1.100000023841858)
    "select 1.1::float(24), 1.1::float(25), 1.1::float(53), 1::float(1), '1'::varchar(3), '1'::char(2), 1.5::numeric(4, 1)",
    "select '2020-01-01 00:00:00.123456'::timestamp(6), '2020-01-01 00:00:00.123456'::timestamp(4)",
    # exponents: written out as DuckDB reads them ('1e-10' needed rescaling and failed), 16 bits at most
    "select '1e-10'::decimal(10,2), '5e-3'::decimal(10,2), '-5e-3'::decimal(10,2), '1.555e0'::decimal(10,2), "
    "'1e-32768'::decimal(10,2), '0e32767'::decimal(10,2), '-0e-32768'::decimal(10,2)",
    "select try_cast(s as decimal(10,2)) from (values ('1e-99999999999999999999999999'), ('1e-32768'), ('1e-32769'), "
    "('0e32767'), ('0e32768'), ('1.5e1'), ('x'), ('nan')) t(s)",
    "select count(*) from t group by 1.5",  # a constant key, not a position (was int('1.5'): internal)
])
def test_type_parameters_and_exponents_as_duckdb(sql, cast_dir, cast_duck, connect):
    compare(connect(cast_dir).sql(sql).to_arrow(), cast_duck.sql(sql).to_arrow_table(), check_types=True)


@pytest.mark.parametrize("sql", [
    "select '1e-99999999999999999999999999'::decimal",  # (Python's decimal raised: an internal error)
    "select '1e999999'::decimal(10, 2)", "select '1e-32769'::decimal(10, 2)", "select 'nan'::decimal",
    "select '-infinity'::decimal(10, 2)", "select s::decimal from (values ('1e-99999999999999999999999999')) t(s)",
])
def test_strings_beyond_every_decimal_raise(sql, cast_dir, cast_duck, connect):
    with pytest.raises(duckdb.ConversionException):
        cast_duck.sql(sql).fetchall()
    with pytest.raises(sluice.errors.ExecutionError):
        connect(cast_dir).sql(sql).to_arrow()


def test_timestamp_precision_other_than_microseconds_is_refused(cast_dir, connect):
    """TIMESTAMP(3) is DuckDB's TIMESTAMP_MS (it drops the microseconds), TIMESTAMP(9) its
    TIMESTAMP_NS: read as microseconds they would be wrong answers."""
    for p in (0, 3, 9):
        with pytest.raises(sluice.errors.UnsupportedError):
            connect(cast_dir).sql(f"select '2020-01-01 00:00:00.123456'::timestamp({p})").to_arrow()
