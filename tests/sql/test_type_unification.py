"""The type where values of several types meet, as DuckDB decides it: the branches of UNION /
INTERSECT / EXCEPT, the rows of VALUES, CASE branches, COALESCE and GREATEST arguments. Each
branch is cast to the common supertype; the first branch's type is not the answer
(``select 1 union select 2.2`` once answered 1, 2, and an AVG in a later branch lost its
fraction)."""

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables

D = decimal.Decimal


@pytest.fixture(scope="module")
def mix_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("type_mix")
    t = pa.table({
        "i": pa.array([1, 2, None, 4, 5, 6, 7], pa.int32()),
        "b": pa.array([10, 20, 30, None, 50, 60, 10 ** 12], pa.int64()),
        "s": pa.array([1, -2, 3, 4, None, 6, 7], pa.int16()),
        "d": pa.array([D("1.25"), None, D("-3.50"), D("4.00"), D("0.05"), D("6.10"), D("7.77")], pa.decimal128(9, 2)),
        "r": pa.array([1.5, 2.25, None, -4.0, 5.5, 6.125, 7.0], pa.float32()),
        "f": pa.array([0.1, 2.5, 3.75, None, 5.0, -6.5, 7.25], pa.float64()),
        "v": pa.array(["a", "b", None, "12", "x", "y", "z"], pa.string()),
        "dt": pa.array([dt.date(2020, 1, 1), None, dt.date(2021, 6, 30), dt.date(1999, 12, 31),
                        dt.date(2000, 2, 29), dt.date(2020, 1, 1), dt.date(2024, 3, 1)]),
        "ts": pa.array([dt.datetime(2020, 1, 1, 10), dt.datetime(2020, 1, 1), None, dt.datetime(2021, 6, 30, 23, 59),
                        dt.datetime(1999, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 1), dt.datetime(2024, 3, 1, 12)],
                       pa.timestamp("us")),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=3)
    return root


@pytest.fixture(scope="module")
def mix_duck(mix_dir):
    return duckdb_tables(mix_dir)


QUERIES = {
    "union_int_decimal": "select 1 as x union select 2.2",
    "union_all_int_decimal_double": "select 1 union all select 2.5 union all select 3.25::double",
    "union_avg_later_branch": "select count(*) from t union all select avg(b) from t",
    "union_columns": "select i from t union select d from t",
    "union_int_bigint": "select s from t union all select b from t",
    "union_real_decimal": "select r from t union all select d from t",
    "union_real_double": "select r from t union all select f from t",
    "union_int_real": "select i from t union all select r from t",
    "union_string_number": "select v from t union all select i from t",
    "union_number_string_literal": "select 1 union all select 'a'",
    "union_date_timestamp": "select dt from t union all select ts from t",
    "union_null_branch": "select null union all select d from t union all select null",
    "union_several_columns": "select i, r, v from t union select d, i, 'q' from t",
    "intersect_mixed": "select b from t intersect select d from t",
    "intersect_all_mixed": "select s from t intersect all select i + 0.0 from t",
    "except_mixed": "select i from t except select d from t",
    "except_decimal_double": "select d from t except select f from t",
    "values_mixed": "select * from (values (1, 'a'), (2.5, 'b'), (null, null)) v(x, y)",
    "values_int_bigint": "select * from (values (1), (10000000000), (3)) v(x)",
    "values_real_double": "select * from (values (1.5::real), (0.1::double)) v(x)",
    "case_int_decimal": "select case when i > 3 then i else d end from t",
    "case_int_real": "select case when i > 3 then i else r end from t",
    "case_string_literal_int": "select case when i > 3 then i else '12' end from t",
    "case_date_timestamp": "select case when i > 3 then dt else ts end from t",
    "coalesce_mixed": "select coalesce(i, d, f) from t",
    "coalesce_string_literal": "select coalesce(i, '42') from t",
    "coalesce_date_literal": "select coalesce(dt, '1990-05-05') from t",
    "greatest_mixed": "select greatest(i, d), least(s, r) from t",
    "decimal_real_arith": "select d * r, d + r, d = r from t",
    "decimal_equals_real": "select 2.2 = 2.2::real, 0.1 + 0.1::real",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_type_unification(name, mix_dir, mix_duck, connect, edge_settings):
    sql = QUERIES[name]
    compare(connect(mix_dir, **edge_settings).sql(sql).to_arrow(), mix_duck.sql(sql).to_arrow_table(),
            check_types=True)


@pytest.mark.parametrize("sql", [
    "select dt from t union all select i from t",
    "select case when i > 3 then v else i end from t",
    "select coalesce(v, dt) from t",
])
def test_types_that_do_not_meet_are_refused(sql, mix_dir, connect):
    import sluice
    with pytest.raises(sluice.errors.PlanError, match="mixes"):
        connect(mix_dir).sql(sql).to_arrow()
