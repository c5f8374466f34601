"""MEDIAN / QUANTILE_CONT / MAD at the ends of the double range and over large decimals,
against DuckDB: the midpoint of -1e308 and 1e308 was computed as lo + d (hi - lo), which
overflows (MEDIAN inf, MAD NaN; DuckDB 0 and 1e308); decimals are interpolated through one
fused double operation as DuckDB does (they are compared exactly), a REAL stays a REAL."""

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
    g, x, m, f = [], [], [], []
    for k in range(60):  # groups of 1..7 rows: extreme doubles, large and small decimals
        for _ in range(r.randint(1, 7)):
            g.append(k)
            x.append(r.choice([-1e308, 1e308, 1.7976931348623157e308, -1.7976931348623157e308, 0.0,
                               r.uniform(-1e300, 1e300), r.uniform(-10, 10), None]))
            m.append(r.choice([D(r.randint(-10 ** 18 + 1, 10 ** 18 - 1)) / 100, D(r.randint(-999, 999)) / 100,
                               None]))
            f.append(r.choice([-3.4e38, 3.4e38, 3e38, float("inf"), r.uniform(-10, 10), r.uniform(-1e30, 1e30), None]))
    pq.write_table(pa.table({"g": pa.array(g, pa.int32()), "x": pa.array(x, pa.float64()),
                             "m": pa.array(m, pa.decimal128(18, 2)),
                             "f": pa.array(f, pa.float32())}), root / "t.parquet")
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
    compare(connect(q_dir).sql(sql).to_arrow(), q_duck.sql(sql).to_arrow_table(), check_types=True)


@pytest.mark.parametrize("col", ["x", "m", "f"])
def test_grouped_quantiles(col, q_dir, q_duck, connect):
    qs = ", ".join(f"quantile_cont({col}, {q})" for q in QS)
    sql = f"select g, median({col}), mad({col}), {qs} from t group by g"
    compare(connect(q_dir).sql(sql).to_arrow(), q_duck.sql(sql).to_arrow_table(), check_types=True)


def test_a_real_stays_real(q_dir, q_duck, connect):
    """DuckDB's MEDIAN / QUANTILE_CONT / MAD of a REAL is a REAL, interpolated through doubles
    and rounded to float: the median of 1.1 and 1.2 as REALs is 1.15 in float32 (sluice gave
    the double midpoint, 4e-8 away)."""
    sql = ("select median(x), quantile_cont(x, 0.3), mad(x), percentile_cont(0.7) within group (order by x) "
           "from (values (1.1::real), (1.2::real), (1.7::real), (1.3::real)) t(x)")
    compare(connect(q_dir).sql(sql).to_arrow(), q_duck.sql(sql).to_arrow_table(), check_types=True)
