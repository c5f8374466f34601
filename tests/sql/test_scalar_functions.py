"""Numeric, date and string functions a DuckDB user reaches for (FLOOR, CEIL, TRUNC, SQRT,
LN, LOG, EXP, POWER, SIGN, //, ISNAN, IS [NOT] DISTINCT FROM, QUARTER, WEEK, LAST_DAY,
MAKE_DATE, CONCAT_WS, REPEAT), checked against DuckDB on a table with NULLs, negative
numbers, zeros, NaN and infinities; and the errors DuckDB raises."""

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError
from sluice.testing.oracle import compare, duckdb_connect

D = decimal.Decimal


@pytest.fixture(scope="module")
def fn_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("fn")
    n = 12
    t = pa.table({
        "i": pa.array(range(n), pa.int64()),
        "a": pa.array([7, -7, 0, None, 1, 2, -1, 100, 3, -3, 5, 9], pa.int32()),
        "g": pa.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], pa.int16()),
        "d": pa.array([D("12.345"), D("-12.345"), D("0.500"), D("-0.500"), None, D("0.000"), D("99.999"),
                       D("-1.001"), D("7.000"), D("2.500"), D("-2.500"), D("1.999")], pa.decimal128(12, 3)),
        "f": pa.array([2.5, -2.5, 0.0, -0.0, None, float("nan"), float("inf"), float("-inf"), 1e300, 4.0, 0.5,
                       -8.0], pa.float64()),
        "s": pa.array(["ab", None, "", "x y", "héllo", "ab", "z", None, "q", "rr", "s", "t"]),
        "dt": pa.array([dt.date(2024, 2, 10), dt.date(2021, 1, 3), dt.date(2020, 12, 31), dt.date(2024, 12, 30),
                        None, dt.date(2000, 2, 29), dt.date(1999, 12, 31), dt.date(1970, 1, 1),
                        dt.date(2023, 1, 1), dt.date(2026, 11, 23), dt.date(2004, 6, 15), dt.date(1969, 12, 31)]),
        "ts": pa.array([dt.datetime(2024, 2, 10, 13, 5), None] + [dt.datetime(2020, m, 28, 23, 59) for m in range(1, 11)],
                       pa.timestamp("us")),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=5)
    return root


EXPRESSIONS = [
    "floor(d)", "ceil(d)", "ceiling(d)", "trunc(d)", "floor(f)", "ceil(f)", "trunc(f)", "floor(a)", "ceil(g)",
    "sqrt(f)", "sqrt(a)", "sqrt(d)", "cbrt(f)", "ln(f)", "ln(a)", "log(f)", "log10(d)", "log2(a)", "log(3, a)",
    "exp(a)", "exp(f)", "exp(d)", "power(a, 2)", "pow(f, 0.5)", "a ** 3", "power(2, g)", "power(d, a)",
    "sign(a)", "sign(d)", "sign(f)", "a // 2", "a // g", "(a * 1000000000000) // g", "f // 2", "d // 2",
    "isnan(f)", "isinf(f)", "isnan(a)", "isinf(d)",
    "a is distinct from g", "a is not distinct from g", "s is distinct from 'ab'", "s is not distinct from null",
    "f is not distinct from 'nan'::double", "dt is distinct from date '2024-02-10'",
    "quarter(dt)", "week(dt)", "isodow(dt)", "extract(week from dt)", "extract(quarter from ts)", "week(ts)",
    "last_day(dt)", "last_day(ts)", "make_date(2000 + a, g, g * 9)", "make_date(2024, 2, 29)",
    "concat_ws('-', s, a, dt)", "concat_ws(', ', s, null, s)", "concat_ws(null, s, s)", "concat_ws('', s)",
    "repeat(s, 3)", "repeat(s, 0)",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_function_equals_duckdb(expr, fn_dir, connect):
    sql = f"select i, {expr} as x from t"
    ours = connect(fn_dir).sql(sql).to_arrow()
    theirs = duckdb_connect(fn_dir).sql(sql).to_arrow_table()
    compare(ours, theirs)


@pytest.mark.parametrize("sql", [
    "select i from t where a is not distinct from g - 6",
    "select i from t where s is distinct from 'ab' and floor(f) > 0",
    "select g, sum(floor(d)), max(sqrt(abs(f))), count(distinct week(dt)) from t group by g",
    "select x.i, y.i from t x join t y on x.a is not distinct from y.a and x.i < y.i",
    "select i from t where floor(d) = ceil(d)",
    "select quarter(dt), count(*) from t group by 1",
    "select i, trunc(d, 2), trunc(d, 0), trunc(d, -1), trunc(f, 1), trunc(a, -1), trunc(a), floor(a), ceil(f) from t",
    "select i, trunc(d, 1)::varchar, trunc(f::real, 1), floor(f::real) from t where abs(f) < 1e30",
    "select i from t where s glob 'a*' or s glob '?b' or s glob '[!a-c]*'",
    "select i, prefix(s, 'a'), suffix(s, 'b') from t",
    "select i, try_cast(x as boolean) from t, (values ('T'), ('yes'), ('n'), ('0'), ('nope'), (' true')) v(x)",
    "select i, format('{} is {} ({{}})', s, a), printf('%d-%s %%', a, s), format('{}', dt) from t",
    "select i, printf('%d %i %s', a > 0, a < 0, a > 0), format('{}', a > 0) from t",
])
def test_functions_in_filters_joins_groups(sql, fn_dir, connect):
    ours = connect(fn_dir).sql(sql).to_arrow()
    theirs = duckdb_connect(fn_dir).sql(sql).to_arrow_table()
    compare(ours, theirs)


@pytest.mark.parametrize("sql, error", [
    ("select a // 0 from t", ExecutionError),
    ("select a // (g - g) from t", ExecutionError),
    ("select (-9223372036854775807 - 1) // -1", ExecutionError),
    ("select make_date(2024, 2, 30)", ExecutionError),
    ("select make_date(2024, 13, 1)", ExecutionError),
    ("select sqrt(s) from t", PlanError),
    ("select floor(dt) from t", PlanError),
    ("select printf('%s', a) from t", PlanError),
    ("select printf('%d', s) from t", PlanError),
])
def test_errors_as_duckdb(sql, error, fn_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(fn_dir).sql(sql).fetchall()
    with pytest.raises(error):
        connect(fn_dir).sql(sql).to_arrow()


_MIN, _MAX = -2 ** 63, 2 ** 63 - 1


@pytest.mark.parametrize("expr", [
    # positions at int64's ends once reached pyarrow as they were (internal errors); DuckDB's
    # supported range is [-2**32, 2**32 - 1], and LEFT / RIGHT / REPEAT take any count
    f"right(s, {_MIN})", f"right(s, {_MAX})", f"left(s, {_MIN})", "left(s, 4294967295)", "left(s, -4294967297)",
    "substring(s, -4294967296, 2)", "substring(s, 4294967295)", "substring(s, 1, 4294967295)",
    "substring(s, 2, -4294967296)", "substring(s, -2, 4294967295)", f"repeat(s, {_MIN})", f"repeat('', {_MAX})",
    "lpad(s, -1, 'x')", "rpad(s, -3, 'x')", "lpad(s, 4, 'ü')",
])
def test_string_positions_at_their_ends(expr, fn_dir, connect):
    sql = f"select i, {expr} as x from t"
    compare(connect(fn_dir).sql(sql).to_arrow(), duckdb_connect(fn_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql, error", [
    (f"select substring(s, {_MIN}, 2) from t", "Substring offset outside of supported range \\(< -4294967296\\)"),
    ("select substring(s, -4294967297, 2) from t", "offset outside of supported range"),
    ("select substring(s, 4294967296, 2) from t", "offset outside of supported range \\(> 4294967295\\)"),
    (f"select substr(s, {_MAX}) from t", "offset outside"),
    (f"select substring(s, 2, {_MAX}) from t", "length outside of supported range \\(> 4294967295\\)"),
    (f"select substring(s, 2, {_MIN}) from t", "length outside of supported range \\(< -4294967296\\)"),
    (f"select left(s, {_MAX}) from t", "length outside"),
    (f"select substring('abc', {_MIN}, 2)", "offset outside"),
    (f"select repeat(s, {_MAX}) from t", "maximum string size"),
    ("select repeat(s, 2147483648) from t", "maximum string size"),
])
def test_string_limits_raise_as_duckdb(sql, error, fn_dir, connect):
    with pytest.raises(Exception, match="Out of Range"):
        duckdb_connect(fn_dir).sql(sql).fetchall()
    with pytest.raises(ExecutionError, match=error):
        connect(fn_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    f"select lpad(s, {_MAX}, 'x') from t",  # (crashed pyarrow: a segmentation fault)
    "select rpad(s, 2147483648, 'x') from t",  # (DuckDB's width is an INTEGER)
    "select lpad(s, 3) from t",  # (no default fill in DuckDB; ' ' was taken)
])
def test_pad_arguments_as_duckdb(sql, fn_dir, connect):
    with pytest.raises(Exception, match="Binder Error"):
        duckdb_connect(fn_dir).sql(sql).fetchall()
    with pytest.raises(PlanError):
        connect(fn_dir).sql(sql).to_arrow()


def test_limits_only_where_a_row_has_a_value(fn_dir, connect):
    """DuckDB checks the rows with a value: no row, or NULL rows only, answer."""
    for sql in (f"select substring(s, {_MIN}, 2) from t where s is null",
                f"select left(s, {_MAX}), repeat(s, {_MAX}) from t where i > 100"):
        compare(connect(fn_dir).sql(sql).to_arrow(), duckdb_connect(fn_dir).sql(sql).to_arrow_table())


def test_results_arrow_cannot_hold_are_refused(fn_dir, connect):
    """Results of 2 GiB and more (DuckDB: out of memory, or a 4 GiB string) are refused in one
    line (they were internal ArrowCapacityErrors)."""
    from sluice.errors import UnsupportedError
    for sql in ("select lpad(s, 2147483647, 'x') from t", "select repeat(s, 1073741824) from t where s = 'ab'"):
        with pytest.raises(UnsupportedError, match="2 GiB"):
            connect(fn_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql, what", [
    ("select floor(d, 1) from t", "FLOOR to a number of digits"),
    ("select trunc(d, a) from t", "TRUNC with a non-constant"),
    ("select printf('%c', a) from t", "PRINTF specifier"),  # (%5.2f: tests/sql/test_duckdb_forms.py)
    ("select format('{}', f) from t", "FORMAT of a float64"),
])
def test_refused_in_one_line(sql, what, fn_dir, connect):
    from sluice.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match=what):
        connect(fn_dir).sql(sql).to_arrow()


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    strings = ["12", "abc", "7", None, "x1", "", "-5", "300", "2020-01-05", "99999999999", "-40000",
               "99999999999999999999999999999999999999999", "1.5", "nan"]
    pq.write_table(pa.table({
        "s": pa.array(strings),
        "i": pa.array([1, 0, 2, 0, 5, 3, 4, 300, 1000, 7, 8, -129, 127, 128], pa.int32()),
        "f": pa.array([1.0, float("inf"), 3.5, 1e30, 2.0, -2.5, 127.5, 128.0, float("nan"), -129.0, 0.0, None,
                       -128.4, 2.5e9], pa.float64()),
        "d": pa.array([D("1.25"), D("99.99"), D("-99.95"), None, D("0.05"), D("12.34"), D("-1.00"), D("100.00"),
                       D("9.99"), D("-9.99"), D("5.55"), D("0.00"), D("-0.01"), D("99.94")], pa.decimal128(6, 2)),
    }), root / "t.parquet", row_group_size=6)
    return root


@pytest.mark.parametrize("sql", [
    "select s, try_cast(s as integer) from t where s <> '1.5' and s <> 'nan'",
    "select s, try_cast(s as bigint), try_cast(s as smallint), try_cast(s as tinyint) from t "
    "where s not in ('1.5', 'nan')",
    "select s, try_cast(s as double) from t",
    "select s, try_cast(s as date) from t where s not in ('12', '7', '-5', '300', '99999999999', '-40000', '1.5', "
    "'99999999999999999999999999999999999999999')",
    "select s, try_cast(s as decimal(10, 2)) from t where s not in ('1.5', 'nan')",
    "select i, try_cast(i as tinyint), try_cast(f as tinyint), try_cast(f as integer), try_cast(f as smallint) from t",
    "select d, try_cast(d as decimal(3, 1)), try_cast(d as tinyint), try_cast(i as decimal(4, 1)) from t",
    "select try_cast('x' as int), try_cast('12' as int), try_cast(null as int)",
    "select count(try_cast(s as integer)), sum(try_cast(s as bigint)) from t where s <> '1.5' and s <> 'nan'",
    "select s from t where try_cast(s as integer) > 10 and s <> '1.5' and s <> 'nan'",
])
def test_try_cast_equals_duckdb(sql, text_dir, connect):
    ours = connect(text_dir).sql(sql).to_arrow()
    theirs = duckdb_connect(text_dir).sql(sql).to_arrow_table()
    compare(ours, theirs)


@pytest.mark.parametrize("sql", ["select try_cast(' 12' as int)", "select try_cast(s as integer) from t"])
def test_try_cast_reads_numbers_as_duckdb(sql, text_dir, connect):
    """Blanks around a number, a fraction (rounded: '1.5' is 2) or an exponent, as DuckDB."""
    compare(connect(text_dir).sql(sql).to_arrow(), duckdb_connect(text_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["select try_cast('0b101' as int)", "select try_cast('1_000' as bigint)"])
def test_try_cast_refuses_what_duckdb_may_read_differently(sql, text_dir, connect):
    from sluice.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="TRY_CAST of"):
        connect(text_dir).sql(sql).to_arrow()


def test_cast_of_a_string_beyond_the_decimal_precision_raises(text_dir, connect):
    sql = "select cast(s as decimal(10, 2)) from t where s = '99999999999'"
    with pytest.raises(Exception):
        duckdb_connect(text_dir).sql(sql).fetchall()
    with pytest.raises(ExecutionError, match="does not fit DECIMAL"):
        connect(text_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select i from t semi join t u on t.g = u.a",
    "select i, s from t anti join t u on t.g = u.a and u.f > 1",
    "select * from t semi join t u on t.a = u.g and t.i < u.i",
    "select g, count(*) from t anti join t u on t.s = u.s and u.i > t.i group by g",
    "select a from t semi join t u using (a)",
    "select g, count_if(a > 2), count_if(s like '%a%'), count_if(f > 100) from t group by g",
    "select g, count_if(a > 100), count_if(a in (1, null)), count_if(not (a in (1, null))) from t group by g",
    "select count_if(a > 2) from t where i < 0",
    "select g, any_value(g * 2), arbitrary(g + 1) from t group by g",
    "select i, sum(a) filter (where g > 1) over (partition by g), count(*) filter (where a > 2) over (order by i), "
    "max(s) filter (where g = 1) over (), avg(d) filter (where f > 0) over (partition by g order by i) from t",
    "select dt, dayname(dt), monthname(dt), dayofmonth(dt), dayname(ts), monthname(ts) from t",
    "select current_date = today(), extract(year from current_date) >= 2026, current_timestamp = now()",
])
def test_spellings_equal_duckdb(sql, fn_dir, connect):
    ours = connect(fn_dir).sql(sql).to_arrow()
    theirs = duckdb_connect(fn_dir).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_current_timestamp_is_the_query_start_in_utc(fn_dir, connect):
    before = dt.datetime.now(dt.timezone.utc)
    got = connect(fn_dir).sql("select current_timestamp as n, current_date as d").to_arrow().to_pylist()[0]
    after = dt.datetime.now(dt.timezone.utc)
    assert before - dt.timedelta(seconds=1) <= got["n"] <= after
    assert got["d"] in (before.date(), after.date())


def test_a_semi_joined_table_is_not_visible_after_its_on(fn_dir, connect):
    with pytest.raises(PlanError, match="unknown table or alias 'u'"):
        connect(fn_dir).sql("select t.i, u.i from t semi join t u on t.g = u.a").to_arrow()
