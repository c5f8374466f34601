"""Values of another type where DuckDB casts them, against DuckDB: LAG / LEAD's default cast to
the value's type (an integer default of a string column, a string or decimal default of an
integer one, a DATE default of a TIMESTAMP one), and an untyped NULL on either side of IN /
= ANY (subquery) taking the other side's type, NOT IN and correlated forms too; tiny chunks."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def ud_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("untyped_defaults")
    pq.write_table(pa.table({
        "a": [1, 1, 5, None, 2, 7], "b": [0, 1, 1, 1, 2, None],
        "t": pa.array([0, 7 * 3600 * 10**6, None, 3 * 86400 * 10**6 + 5, 1, 2], pa.timestamp("us"))}),
        root / "t.parquet")
    return root


QUERIES = [
    "SELECT a, b, LAG(CAST(a AS VARCHAR), 2, 3) OVER (ORDER BY a, b) FROM t ORDER BY ALL",
    "SELECT a, b, LEAD(a, 1, '42') OVER (ORDER BY a, b) FROM t ORDER BY ALL",
    "SELECT a, b, LEAD(a, 1, 2.7) OVER (PARTITION BY b ORDER BY a) FROM t ORDER BY ALL",
    "SELECT a, b, LAG(a::DOUBLE, 1, 7) OVER (ORDER BY a, b) FROM t ORDER BY ALL",
    "SELECT a, b, LAG(t, 1, DATE '2020-01-01') OVER (ORDER BY a, b) FROM t ORDER BY ALL",
    "SELECT LAG(v3, 10, 3) OVER () FROM (VALUES (0, 1::VARCHAR), (1, NULL)) AS v0(v1, v3)",
    "SELECT 1 = ANY(SELECT NULL)",
    "SELECT NULL = ANY(SELECT 2)",
    "SELECT NULL IN (SELECT NULL)",
    "SELECT a, a IN (SELECT NULL) FROM t ORDER BY ALL",
    "SELECT a, a NOT IN (SELECT NULL) FROM t ORDER BY ALL",
    "SELECT a, NULL IN (SELECT b FROM t WHERE b > 5) FROM t ORDER BY ALL",
    "SELECT a, NULL IN (SELECT b FROM t) FROM t ORDER BY ALL",
    "SELECT a FROM t WHERE a IN (SELECT NULL) OR a > 2 ORDER BY ALL",
    "SELECT a FROM t WHERE NULL NOT IN (SELECT b FROM t WHERE b > 5) ORDER BY ALL",
    "SELECT a, a IN (SELECT NULL FROM t t2 WHERE t2.b = t.b) FROM t ORDER BY ALL",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 2}], ids=["default", "tiny"])
@pytest.mark.parametrize("sql", QUERIES)
def test_untyped_defaults(sql, settings, ud_dir, connect):
    ours = connect(ud_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(ud_dir).sql(sql).to_arrow_table())
