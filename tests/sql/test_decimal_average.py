"""DECIMAL_AVERAGE against DuckDB: a group's average in its own DECIMAL type, halves to even
(2.5 to 2, 3.5 to 4, -2.5 to -2), sums past int64 (values near DECIMAL(18)'s ends), NULLs,
empty groups, DISTINCT and FILTER, in tiny chunks and spilled (SUM's merged state); other types,
windows and several arguments are one-line errors."""

import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("decimal_average")
    r = random.Random(17)
    n = 90
    big = 10 ** 18 - 1
    pq.write_table(pa.table({
        "g": pa.array([i % 7 for i in range(n)], pa.int32()),
        "h": pa.array([None if i % 11 == 0 else decimal.Decimal(r.choice([2, 3, -2, -3, 4, 5, 0, 1])) for i in range(n)],
                      pa.decimal128(5, 0)),
        "d": pa.array([None if i % 9 == 4 else decimal.Decimal(r.randint(-99999, 99999)).scaleb(-2) for i in range(n)],
                      pa.decimal128(10, 2)),
        "w": pa.array([decimal.Decimal(r.choice([big, big - r.randint(0, 999), -big, 7])).scaleb(-3) for i in range(n)],
                      pa.decimal128(18, 3))}), root / "t.parquet", row_group_size=9)
    return root


QUERIES = [
    "select g, decimal_average(h), decimal_average(d), decimal_average(w) from t group by g",
    "select decimal_average(h), decimal_average(d), decimal_average(w) from t",
    "select g, decimal_average(distinct h), decimal_average(w) filter (where g > 2) from t group by g",
    "select g, decimal_average(h) from t where h in (2, 3) group by g",
    "select decimal_average(d) from t where g > 100",
    "select decimal_average(x) from (values (2.5), (3.5), (-2.5)) v(x)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [("select decimal_average(g) from t", PlanError),
                                       ("select decimal_average(cast(g as double)) from t", PlanError),
                                       ("select decimal_average(d, d) from t", PlanError),
                                       ("select decimal_average(d) over (partition by g) from t", UnsupportedError)])
def test_one_line_errors(sql, error, data, connect):
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()


def test_decimal_division_refused_with_its_reason(data, connect):
    """DECIMAL_DIVISION's scale reads the divisor's precision, which sluice's DECIMAL lacks."""
    with pytest.raises(UnsupportedError, match="precision"):
        connect(str(data)).sql("select decimal_division(d, d) from t").to_arrow()
