"""ORDER BY x LIMIT k where x is NULL in most rows: each chunk's top-k candidates (the rows
within the k best leading keys, `exec/sort.py`) must keep the NULL rows when fewer than k rows
have a value, NULLS LAST too -- they fill the places left, ordered by the later keys. Before,
a 100,000-row table with 5 values answered 5 rows to LIMIT 10. Against DuckDB, for numbers,
strings (the 8-byte prefix cut), floats and dates, several chunk sizes."""

import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("topk_nulls")
    n = 5000
    has = {7, 1300, 2600, 2601, 4999}  # five values among 5,000 rows, in different chunks
    pick = [i in has for i in range(n)]
    pq.write_table(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array([(i * 37) % 11 if p else None for i, p in zip(range(n), pick)], pa.int64()),
        "s": pa.array([f"w{i % 7}" if p else None for i, p in zip(range(n), pick)], pa.string()),
        "f": pa.array([i / 3 if p else None for i, p in zip(range(n), pick)], pa.float64()),
        "d": pa.array([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) if p else None
                       for i, p in zip(range(n), pick)], pa.date32()),
        "none": pa.array([None] * n, pa.int64()),
    }), root / "t.parquet", row_group_size=1000)
    return root


@pytest.mark.parametrize("col", ["x", "s", "f", "d", "none"])
@pytest.mark.parametrize("order", ["", " desc", " nulls first", " desc nulls last"])
@pytest.mark.parametrize("k", [1, 5, 10, 60])
def test_sparse_leading_key_limit_equals_duckdb(col, order, k, sparse_dir, connect):
    sql = f"select {col}, id from t order by {col}{order}, id desc limit {k}"
    want = duckdb_tables(sparse_dir).sql(sql).to_arrow_table()
    for chunk_rows in (None, 1000, 300):
        con = connect(sparse_dir) if chunk_rows is None else connect(sparse_dir, chunk_rows=chunk_rows)
        compare(con.sql(sql).to_arrow(), want, order_cols=[0, 1])
    assert want.num_rows == k  # the NULL rows fill the limit (the case the cut got wrong)
