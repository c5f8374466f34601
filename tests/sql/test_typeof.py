"""TYPEOF against DuckDB: its type names (DECIMAL(p,s) with DuckDB's precision for constants,
casts, sums and products, CASE / GREATEST over decimals of one scale, nested types with quoted
field names, the NULL type) over constants and columns; refused in one line where sluice's
name could differ from DuckDB's (a column Parquet may hold as an unsigned or otherwise-unit
type, an aggregate's result, a decimal of unknown precision, ``.5`` that sqlglot reads as 0.5)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect

CONSTANTS = ["{'a': 1, 'A b': 2.5, 'B': [1]}", "NULL", "now()", "'a'", "1", "2147483648", "1.0::float", "true",
             "date '2000-01-01'", "timestamp '2000-01-01'", "1+1", "1::tinyint+1", "42.1", "-10239814.1",
             "1049185157.12345", "42.", "10e100", "'0.1'::DECIMAL", "1::DECIMAL(4,0) + 1::DECIMAL(4,0)",
             "1::DECIMAL(18,0) + 1::DECIMAL(18,0)", "'0.1'::DECIMAL(2,1) * '10.0'::DECIMAL(3,1)",
             "0.1::DECIMAL(18,18) - 1::DECIMAL(18,0)", "1.5 / 2", "1.5::decimal(10,2) + 1", "[1,2]", "[1.5, 2]",
             "timestamp '2000-01-01' - timestamp '1999-01-01'", "-(1.5)", "abs(-2.5)", "1.5::decimal(4,1) % 2",
             "cast(1 as bigint) * 2", "1.5 + 1.25", "date '2000-01-01' + 1", "'x' || 'y'", "length('x')",
             "coalesce(1, 2.5)", "greatest(1, 2.5)", "least(1.5, 2.25)", "greatest(2.5, 1)",
             "case when true then 1 else 2.5 end", "case when false then 2.5 else 1::decimal(11,1) end",
             "1::smallint * 2::tinyint"]


@pytest.fixture(scope="module")
def typed_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("typeof")
    pq.write_table(pa.table({"d": pa.array([1, None], pa.decimal128(9, 3)), "f": [1.5, None], "s": ["a", None],
                             "b": [True, None], "t": pa.array([1, 2], pa.int8()),
                             "i": pa.array([1, 2], pa.int32()), "u": pa.array([1, 2], pa.uint8())}),
                   root / "t.parquet")
    return root


def _same(sql, root, connect):
    ours = connect(root).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_constants(typed_dir, connect):
    _same("select " + ", ".join(f"typeof({c}) c{i}" for i, c in enumerate(CONSTANTS)), typed_dir, connect)


def test_columns(typed_dir, connect):
    _same("select typeof(d), typeof(d + 1000000000000000.0), typeof(-1000000000000000.0 - d), typeof(d * d), "
          "typeof(f), typeof(s), typeof(b), typeof(t), typeof(t + 1), typeof(d::decimal(18,2)) from t",
          typed_dir, connect)


@pytest.mark.parametrize("sql, reason", [
    ("select typeof(i) from t", "int32 column"),
    ("select typeof(u) from t", "column"),
    ("select typeof(sum(d)) from t", "aggregate"),
    ("select typeof(.5)", "leading 0"),
    ("select typeof(floor(2.5))", "precision"),
])
def test_refused(sql, reason, typed_dir, connect):
    with pytest.raises(UnsupportedError, match=reason) as ei:
        connect(typed_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)
