"""All 22 TPC-H queries against DuckDB on the same files, at the default chunk size and at
a chunk size of a few thousand rows (many chunks per row group)."""

import pytest

from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = tpch_queries()


@pytest.mark.parametrize("chunk_rows", [None, 3000], ids=["default_chunks", "tiny_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_tpch_query(name, chunk_rows, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    settings = {"chunk_rows": chunk_rows} if chunk_rows else {}
    ours = connect(tpch_dir, **settings).sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    assert theirs.num_rows > 0, "validation parameters must produce rows"
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))
