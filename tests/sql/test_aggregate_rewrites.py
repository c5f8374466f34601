"""Aggregations the plan rules rewrite, against DuckDB: SUM(x + c) as SUM(x) + c * COUNT(x)
(``sum_offsets``: NULLs, all-NULL groups, negative and constant-first offsets, groups) and
GROUP BY keys computed from another key per group (``dependent_group_keys``: NULL keys, casts,
grouping sets, a key used in HAVING and ORDER BY)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def offsets_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("offsets")
    n = 3000
    pq.write_table(pa.table({
        "g": pa.array([k % 7 for k in range(n)], pa.int32()),
        "x": pa.array([None if k % 5 == 0 or k % 7 == 6 else k % 300 - 100 for k in range(n)], pa.int16()),
        "y": pa.array([k * 3 for k in range(n)], pa.int32()),
    }), root / "t.parquet", row_group_size=500)
    return root


QUERIES = [
    "select sum(x), sum(x + 1), sum(x + 2), sum(x - 40), sum(5 + x), count(*) from t",
    "select g, sum(x + 1), sum(x + 100), sum(y + 1), sum(y - 7), avg(x) from t group by g order by g",
    "select g, sum(x + 1) a, sum(x + 2) b from t where g = 6 group by g",  # every x NULL: NULL sums
    "select sum(x + 1) filter (where g < 3), sum(x + 2) filter (where g < 3) from t",
    "select x, x - 1, x * 2 + 1, count(*), sum(y) from t group by x, x - 1, x * 2 + 1 order by x nulls first",
    "select x, cast(x as bigint) + 7 k, count(*) c from t group by x, k having k > 0 order by k desc, x limit 20",
    "select g, x, x + 1, count(*) from t group by grouping sets ((g, x, x + 1), (g), ()) "
    "order by g nulls first, x nulls first, 3 nulls first",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_sum_offsets_answer_as_duckdb(sql, offsets_dir, connect):
    compare(connect(offsets_dir).sql(sql).to_arrow(), duckdb_connect(offsets_dir).sql(sql).to_arrow_table())
