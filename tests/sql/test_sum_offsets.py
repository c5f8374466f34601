"""SUM(x + c) rewritten as SUM(x) + c * COUNT(x) (plan rule ``sum_offsets``): equal to DuckDB with
NULLs, all-NULL groups, negative and constant-first offsets, and groups."""

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
]


@pytest.mark.parametrize("sql", QUERIES)
def test_sum_offsets_answer_as_duckdb(sql, offsets_dir, connect):
    compare(connect(offsets_dir).sql(sql).to_arrow(), duckdb_connect(offsets_dir).sql(sql).to_arrow_table())
