"""PRODUCT(x) (DuckDB's aggregate): the product of a group's non-NULL values as a DOUBLE, over
integers, decimals and doubles (zeros, negatives, infinities), DISTINCT, FILTER, ROLLUP and
empty input, against DuckDB at default, tiny chunks and spilled (partial products merged)."""

import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("product")
    n = 40
    g = [i % 5 for i in range(n)]
    k = [None if i % 7 == 3 else (i % 4) - 1 if i % 11 else 3 for i in range(n)]
    d = [None if i % 6 == 1 else decimal.Decimal(i % 9 - 3) / 4 for i in range(n)]
    f = [None if i % 8 == 5 else [1.5, -0.5, 2.0, 1e200, 0.25][i % 5] for i in range(n)]
    pq.write_table(pa.table({"g": pa.array(g, pa.int32()), "k": pa.array(k, pa.int64()),
                             "d": pa.array(d, pa.decimal128(6, 2)), "f": f}), root / "t.parquet", row_group_size=8)
    return root


QUERIES = [
    "select g, product(k), product(d), product(f), count(*) from t group by g",
    "select product(k), product(distinct k), product(d), product(f) from t",
    "select product(k) filter (where g > 2), product(f) filter (where k > 0) from t",
    "select g, product(k) from t group by rollup(g)",
    "select product(k), product(f) from t where g > 100",
    "select g, product(f) from t where f > 1 group by g",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [("select product(cast(g as varchar)) from t", PlanError),
                                       ("select product(k) over (partition by g) from t", UnsupportedError),
                                       ("select product(k, g) from t", PlanError)])
def test_one_line_errors(sql, error, data, connect):
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()
