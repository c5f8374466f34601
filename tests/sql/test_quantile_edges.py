"""MEDIAN / QUANTILE_CONT / MAD at the ends of the double range and over large decimals,
against DuckDB: the midpoint of -1e308 and 1e308 was computed as lo + d (hi - lo), which
overflows (MEDIAN inf, MAD NaN; DuckDB 0 and 1e308), and decimals are interpolated through
one fused double operation as DuckDB does (they are compared exactly)."""

import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables

D = decimal.Decimal
QS = (0.5, 0.1, 0.25, 0.3, 0.7, 0.9, 0.33)


@pytest.fixture(scope="module")
def q_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("quantiles")
    r = random.Random(11)
    g, x, m = [], [], []
    for k in range(60):  # groups of 1..7 rows: extreme doubles, large and small decimals
        for _ in range(r.randint(1, 7)):
            g.append(k)
            x.append(r.choice([-1e308, 1e308, 1.7976931348623157e308, -1.7976931348623157e308, 0.0,
                               r.uniform(-1e300, 1e300), r.uniform(-10, 10), None]))
            m.append(r.choice([D(r.randint(-10 ** 18 + 1, 10 ** 18 - 1)) / 100, D(r.randint(-999, 999)) / 100,
                               None]))
    pq.write_table(pa.table({"g": pa.array(g, pa.int32()), "x": pa.array(x, pa.float64()),
                             "m": pa.array(m, pa.decimal128(18, 2))}), root / "t.parquet")
    return root


@pytest.fixture(scope="module")
def q_duck(q_dir):
    return duckdb_tables(q_dir)


@pytest.mark.parametrize("sql", [
    "select mad(x) from (values (-1e308), (1e308)) t(x)",
    "select median(x), quantile_cont(x, 0.5), quantile_cont(x, 0.25) from (values (-1e308), (1e308)) t(x)",
    "select mad(x), median(x) from (values (1.7976931348623157e308), (1.7976931348623157e308)) t(x)",
    "select mad(x), median(x) from (values (-999999999999999999::decimal(18,0)), "
    "(999999999999999999::decimal(18,0))) t(x)",
])
def test_constants_at_the_ends(sql, q_duck, q_dir, connect):
    compare(connect(q_dir).sql(sql).to_arrow(), q_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("col", ["x", "m"])
def test_grouped_quantiles(col, q_dir, q_duck, connect):
    qs = ", ".join(f"quantile_cont({col}, {q})" for q in QS)
    sql = f"select g, median({col}), mad({col}), {qs} from t group by g"
    compare(connect(q_dir).sql(sql).to_arrow(), q_duck.sql(sql).to_arrow_table())
