"""LIMIT / OFFSET counts beyond plain numbers, against DuckDB: expressions of constants, casts
(a DOUBLE rounds half to even, a DECIMAL half away from zero), NULL (no limit), booleans,
scalar subqueries of one constant; DuckDB's errors (negative counts, a subquery's cap, values
beyond range) as one-line plan errors; what needs a table is refused in one line."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def lim_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("lim")
    pq.write_table(pa.table({"x": pa.array(range(20), pa.int64())}), root / "t.parquet", row_group_size=6)
    return root


COUNTS = ["2-1", "(SELECT NULL)", "NULL", "2 + NULL", "(SELECT 3)", "2.5::int", "1e0", "2.5e0", "3.5e0", "2*3.5",
          "cast(2.6 as double)", "2.5::double", "3.5::double", "0.5::double", "-0.4", "0.4", "2.5", "true",
          "(SELECT 3.5)", "(SELECT 2.5)", "(SELECT 2.6)", "(SELECT true)", "(SELECT -0.4)", "(SELECT 2.5::double)",
          "9223372036854775807", "(SELECT 4611686018427387904)", "1.5e1", "5e-1", "(1 + 2) * 2"]


@pytest.mark.parametrize("count", COUNTS)
def test_limit_and_offset_of_constant_expressions(count, lim_dir, connect):
    for sql in (f"select x from t order by x limit {count}", f"select x from t order by x offset {count}",
                f"select x from t order by x limit {count} offset {count}", f"select x from t limit 3 offset {count}"):
        ours = connect(lim_dir).sql(sql).to_arrow()
        compare(ours, duckdb_connect(lim_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("count", ["-1", "(SELECT -1)", "(SELECT 9223372036854775807)", "(SELECT 4611686018427387905)",
                                   "1e30", "9223372036854775808", "x", "sum(42)"])
def test_duckdb_errors(count, lim_dir, connect):
    sql = f"select x from t order by x limit {count}"
    with pytest.raises(Exception):
        duckdb_connect(lim_dir).sql(sql).fetchall()
    with pytest.raises(PlanError) as ei:
        connect(lim_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("count", ["(select max(x) from t)", "random()", "(SELECT '3')"])
def test_refused(count, lim_dir, connect):
    with pytest.raises(UnsupportedError):
        connect(lim_dir).sql(f"select x from t limit {count}").to_arrow()
