"""HAVING's names against DuckDB (sluice.sql.having_names): a select-list alias read where the
name is no group key (even if a column of that name exists), a grouped column read before an
alias of its name, GROUP BY ALL grouping by HAVING's plain columns too; tiny chunks."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def hv_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("having_names")
    pq.write_table(pa.table({"a": [1, 1, 5, None, 2, 7], "b": [0, 1, 1, 1, 2, None]}), root / "t.parquet")
    return root


QUERIES = [
    "SELECT b, sum(a) AS a FROM t GROUP BY b HAVING a > 1 ORDER BY ALL",
    "SELECT b, sum(a) AS b FROM t GROUP BY b HAVING b > 0 ORDER BY ALL",
    "SELECT b AS a, sum(a) AS x FROM t GROUP BY b HAVING a > 0 ORDER BY ALL",
    "SELECT b, sum(a) AS a FROM t GROUP BY b HAVING a + b > 1 ORDER BY a",
    "SELECT b, a + 1 AS a FROM t GROUP BY b, a HAVING a > 1 ORDER BY ALL",
    "SELECT b + 1, sum(a) AS b FROM t GROUP BY b + 1 HAVING b > 2 ORDER BY ALL",
    "SELECT b AS k, count(*) AS a FROM t GROUP BY ALL HAVING a > 1 ORDER BY ALL",
    "SELECT b FROM t GROUP BY ALL HAVING a > 1 ORDER BY ALL",
    "SELECT b FROM t GROUP BY ALL HAVING a + b > 1 ORDER BY ALL",
    "SELECT b, sum(a) FROM t GROUP BY ALL HAVING a IS NOT NULL ORDER BY ALL",
    "SELECT sum(a) FROM t GROUP BY ALL HAVING b > 0 ORDER BY ALL",
    "SELECT a + b FROM t GROUP BY ALL HAVING a + b > 1 ORDER BY ALL",
    "SELECT c0 FROM (SELECT 1, 1 UNION ALL SELECT 1, 2) t0(c0, c1) GROUP BY ALL HAVING c1 > 0 ORDER BY c0",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 2}], ids=["default", "tiny"])
@pytest.mark.parametrize("sql", QUERIES)
def test_having_names(sql, settings, hv_dir, connect):
    ours = connect(hv_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(hv_dir).sql(sql).to_arrow_table())
