"""A string constant compared with a number is cast to the number's type, as DuckDB does:
'nan', 'inf', '-Infinity' are floats against a float column (rows found by SQL's float order:
NaN equal to NaN and above +inf) and an error against an integer or decimal. They reached an
integer parse and were an internal error. Against DuckDB, over row groups whose min / max leave
NaN out (the pruning must not drop them)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.testing.oracle import compare, duckdb_tables

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def nf_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("nonfinite")
    pq.write_table(pa.table({
        "f": pa.array([1.0, NAN, None, INF, -INF, 0.0, NAN, 2.5, -0.0], pa.float64()),
        "r": pa.array([1.0, NAN, None, INF, -INF, 0.0, NAN, 2.5, -0.0], pa.float32()),
        "i": pa.array(range(9), pa.int64()),
        "d": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9], pa.decimal128(5, 2)),
    }), root / "t.parquet", row_group_size=2)
    return root


@pytest.mark.parametrize("col", ["f", "r"])
@pytest.mark.parametrize("cond", ["= 'nan'", "= 'NaN'", ">= 'nan'", "< 'nan'", "> 'inf'", "= 'inf'",
                                  "< '-Infinity'", "<= '-inf'", "<> 'nan'", "> ' inf '"])
def test_nonfinite_constant_against_float_equals_duckdb(col, cond, nf_dir, connect):
    sql = f"select i, {col} from t where {col} {cond}"
    want = duckdb_tables(nf_dir).sql(sql).to_arrow_table()
    compare(connect(nf_dir).sql(sql).to_arrow(), want)


@pytest.mark.parametrize("sql", ["select count(*) from t where i = 'nan'", "select count(*) from t where d < 'inf'",
                                 "select count(*) from t where 'infinity' > i"])
def test_nonfinite_constant_against_exact_number_is_an_error(sql, nf_dir, connect):
    with pytest.raises(Exception):
        duckdb_tables(nf_dir).sql(sql).fetchall()  # DuckDB: a conversion error
    with pytest.raises(sluice.errors.PlanError, match="not a finite number"):
        connect(nf_dir).sql(sql).to_arrow()
