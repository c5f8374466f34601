"""A bare NULL has DuckDB's NULL type, which takes the type of what it meets: a function's
parameter (``length(NULL)``, ``upper(NULL)``), the other operand (``NULL <> ''``, ``NULL + 1``),
a CASE's other branches; it stays NULL-typed only where nothing types it (``SELECT NULL``,
``CASE WHEN c THEN NULL END``). It was an INTEGER: ``length(NULL)`` and ``NULL <> ''`` were plan
errors, ``NOT NULL`` and ``NULL AND b`` too, and ``LEFT JOIN ... ON NULL`` lost a row (the
INTEGER residual). Constant folding is lazy too: a function of constants that raises
(``1 // 0``) stays in the plan and raises only where a row needs it, as in DuckDB
(``CASE WHEN false THEN 1 // 0 ELSE 1 END`` is 1). Against DuckDB, answers and result types."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("untyped_null")
    t = pa.table({"x": pa.array([0, 1, 2, None, 5, -3], pa.int32()),
                  "s": pa.array(["a", "", "bc", None, "Zz", "a"]),
                  "b": pa.array([True, False, None, True, False, None]),
                  "big": pa.array([2 ** 62, -2 ** 62, 3, None, 9, 2 ** 62 - 1], pa.int64()),
                  "dt": pa.array([1, 400, None, 9000, 20000, 3], pa.date32())})
    pq.write_table(t, root / "t.parquet", row_group_size=4)
    return root


@pytest.fixture(scope="module")
def duck(data):
    return duckdb_tables(data)


#: DuckDB answers each (sluice refused or mistyped them): the answer and its type family.
TYPED = [
    "select length(NULL), upper(NULL), lower(NULL), reverse(NULL), trim(NULL)",
    "select NULL <> '', NULL = 'a', NULL < 1, NULL >= 'a', NULL = DATE '2020-01-01'",
    "select NULL = s, s <> NULL, NULL + x, x * NULL, NULL - big from t",
    "select coalesce(NULL, 'x'), coalesce(NULL, NULL, 3), ifnull(NULL, s) from t",
    "select case when x > 0 then NULL else 'a' end, case when x > 0 then s else NULL end from t",
    "select if(x > 0, NULL, s), nullif(s, NULL), greatest(NULL, 'a'), least(NULL, 1) from t",
    "select NULL and b, NULL or b, not NULL, b and NULL from t",
    "select substring(NULL, 1, 2), replace(NULL, 'a', 'b'), left(NULL, 2), lpad(NULL, 3, 'x')",
    "select NULL like 'a%', s like NULL, s ilike NULL, starts_with(NULL, 'a') from t",
    "select NULL in (1, 2), s in (NULL, 'a'), x between NULL and 2, NULL is null, NULL is not null from t",
    "select abs(NULL) is null, round(NULL, 2) is null, floor(NULL) is null, sqrt(NULL) is null",
    "select NULL + 1, -NULL is null, NULL / 2, NULL + DATE '2020-01-01', concat(NULL, 'a')",
    "select date_trunc('month', dt), extract(year from dt) from t where NULL is null",
    "select x from t where NULL", "select x from t where x > 0 or NULL",
    "select x, count(*) from t group by x having NULL",
    "select count(NULL), count(*) filter (where NULL), sum(x) filter (where NULL) is null from t",
    "select bool_and(NULL), avg(NULL), sum(NULL) is null from t",
    "select n + 1, upper(n), coalesce(n, 3), n is null from (select NULL as n from t)",
    "select x from t union all select NULL", "select NULL from t union select s from t",
    "select s from t union all select NULL from t",
    "select * from (values (NULL), ('a')) v(c)", "select * from (values (NULL), (1)) v(c)",
    "select a.x, b.x as y from t a left join t b on NULL",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and NULL",
    "select a.x, b.x as y from t a full join t b on NULL",
    "select a.x, b.x as y from t a left join t b on 1",
    "select a.x, b.x as y from t a left join t b on a.x",
    "select case x when NULL then 'a' else 'b' end, case NULL when 1 then 'a' else 'b' end from t",
    # numbers as conditions, as DuckDB casts them (non-zero holds)
    "select 1 and true, 2 or false, not 3, not 0, NULL::int and false, x and b, not x from t",
    "select x from t where x", "select x from t where big and x > 0",
    "select a.x, b.x as y from t a left join t b on a.x = b.x and b.x",
    "select x, count(*) filter (where x) from t group by x",
    "select lag(NULL) over (order by x) is null, row_number() over (partition by NULL order by x) from t",
]


#: Where nothing types it, DuckDB's NULL type (Arrow's null type) and sluice's agree.
NULL_TYPED = [
    "select NULL", "select coalesce(NULL, NULL)", "select case when x > 0 then NULL end from t",
    "select nullif(NULL, 1)", "select * from (values (NULL)) v(c)", "select NULL as n from t group by n",
    "select min(NULL), max(NULL) from t", "select distinct NULL from t",
    "select NULL || 'a', s || NULL from t", "select n, count(*) from (select NULL as n from t) group by n",
]


@pytest.mark.parametrize("sql", TYPED + NULL_TYPED)
def test_answers_and_types_as_duckdb(sql, data, duck, connect):
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 2}):
        ours = connect(data, **settings).sql(sql).to_arrow()
        compare(ours, theirs, check_types=True)
    if sql in NULL_TYPED:
        assert [f.type for f in ours.schema] == [f.type for f in theirs.schema]


def test_null_typed_columns_through_spill_and_joins(data, duck, connect):
    sql = ("select a.n, a.x, b.s from (select NULL as n, x from t) a join (select NULL as m, x, s from t) b "
           "on a.x = b.x order by a.x")
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"force_spill": True, "chunk_rows": 2}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs, order_cols=[1])


#: A branch no row reaches raises nothing, as in DuckDB (they raised while planning).
LAZY = [
    "select case when false then 1 // 0 else 1 end", "select case when true then 1 else 1 // 0 end",
    "select coalesce(1, 1 // 0)", "select if(false, 1 // 0, 2)", "select case when 1 = 0 then 1 // 0 end",
    "select case when false then cast('abc' as integer) else 5 end",
    "select case when false then 127::tinyint + 1::tinyint else 0 end",
    "select case when false then 9223372036854775807 + 1 else 0 end",
    "select case when x > 5 then cast('abc' as integer) else x end from t",
    "select case when x > 0 then 10 // x else 0 end, case when x <> 0 then 10 % x else -1 end from t",
    "select case x when 0 then 0 else 100 // x end from t",
    "select x from t where case when false then 1 // 0 = 1 else true end",
    "select x from t where x > 100 and 1 // 0 = 1",
]


@pytest.mark.parametrize("sql", LAZY)
def test_unreached_branches_do_not_raise(sql, data, duck, connect):
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 1}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs, check_types=True)


@pytest.mark.parametrize("sql", ["select 1 // 0", "select coalesce(x, 1 // 0) from t",
                                 "select case when x is null then 1 // 0 end from t"])
def test_reached_branches_still_raise(sql, data, duck, connect):
    with pytest.raises(Exception, match="(?i)division by zero"):
        duck.sql(sql).fetchall()
    with pytest.raises(ExecutionError, match="division by zero"):
        connect(data).sql(sql).to_arrow()


def test_bigint_times_decimal(data, duck, connect):
    """int64 x decimal literal: exact where the product fits sluice's 64-bit decimals (DuckDB's
    answer), refused in one line past them -- never an overflow DuckDB does not raise."""
    con = connect(data)
    ok = "select big * 0.001, big * 0.5, x * 1.5, x * 123456789.123, big * 0.5::double from t where abs(big) < 1000"
    compare(con.sql(ok).to_arrow(), duck.sql(ok).to_arrow_table())
    ok = "select big * 0.001, x * 0.25 from t"
    compare(con.sql(ok).to_arrow(), duck.sql(ok).to_arrow_table())
    for sql in ("select big * 0.5 from t", "select 9223372036854775807 * 1.5", "select big * 12345.6789 from t"):
        duck.sql(sql).fetchall()  # DuckDB's 38 digits answer
        with pytest.raises(UnsupportedError, match="beyond 18 digits"):
            con.sql(sql).to_arrow()
    with pytest.raises(ExecutionError, match="overflow"):
        con.sql("select big * 100 from t").to_arrow()
