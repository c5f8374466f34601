"""SKEWNESS against DuckDB: by group, of integers, decimals and doubles, with NULLs, groups of
fewer than three values or no spread (NULL), far from zero (moments about the mean, no
cancellation), in tiny chunks with spilling and across merged states; out of range is an error."""

import random
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.errors import ExecutionError, PlanError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def skew_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("skewness")
    r = random.Random(11)
    n = 300
    g = [r.randint(0, 9) for _ in range(n)]
    pq.write_table(pa.table({
        "g": g,
        "i": [None if r.random() < .1 else r.randint(-20, 60) ** 2 % 97 for _ in range(n)],
        "d": pa.array([None if r.random() < .1 else Decimal(r.randint(-9999, 9999)).scaleb(-2) for _ in range(n)],
                      pa.decimal128(10, 2)),
        "f": [r.expovariate(0.5) + 1e6 for _ in range(n)],
        "c": [7 if k != 9 else None for k in g]}), root / "t.parquet", row_group_size=41)
    return root


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 16, "force_spill": True}])
def test_skewness_by_group(settings, skew_dir, connect):
    for sql in ["SELECT g, skewness(i), skewness(d), skewness(f), skewness(c) FROM t GROUP BY g ORDER BY g",
                "SELECT skewness(i), skewness(d), skewness(f), skewness(c) FROM t",
                "SELECT g, skewness(i) FROM t WHERE g < 3 AND i < 20 GROUP BY g ORDER BY g",
                "SELECT skewness(i) FROM t WHERE g > 100"]:
        compare(connect(skew_dir, **settings).sql(sql).to_arrow(), duckdb_connect(skew_dir).sql(sql).to_arrow_table())


def test_skewness_out_of_range(skew_dir, connect):
    sql = "SELECT skewness(x) FROM (VALUES (-2e307), (0), (2e307)) v(x)"
    with pytest.raises(Exception, match="SKEW is out of range"):
        duckdb_connect(skew_dir).sql(sql).fetchall()
    with pytest.raises(ExecutionError, match="SKEW is out of range"):
        connect(skew_dir).sql(sql).to_arrow()


@pytest.mark.parametrize("func", ["skewness", "avg", "product", "var_samp", "var_pop", "stddev_samp", "stddev_pop"])
def test_numeric_aggregates_of_booleans_err_as_duckdb(func):
    """DuckDB binds SUM of booleans and none of these: sluice answered them (TRUE as 1)."""
    sql = f"select {func}(x) from (values (true), (false), (true)) t(x)"
    with pytest.raises(duckdb.Error):
        duckdb.sql(sql).fetchall()
    with pytest.raises(PlanError):
        sluice.connect(device="cpu").sql(sql).to_arrow()
    ok = "select sum(x) from (values (true), (false), (true)) t(x)"
    compare(sluice.connect(device="cpu").sql(ok).to_arrow(), duckdb.sql(ok).to_arrow_table())
