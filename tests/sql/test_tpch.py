"""All 22 TPC-H queries against DuckDB on the same files, at the default chunk size and at
a chunk size of a few thousand rows (many chunks per row group)."""

import pytest

from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = tpch_queries()


#: Default path, tiny chunks, runtime filters off, and each scan data-movement mode forced
#: (auto with tiny chunks: many slices to sample on). Every one must give DuckDB's answer.
SETTINGS = {"default_chunks": {}, "tiny_chunks": {"chunk_rows": 3000},
            "runtime_filters_off": {"runtime_filters": False}, "scan_pushdown": {"scan_mode": "pushdown"},
            "scan_staging": {"scan_mode": "staging"},
            "scan_auto": {"scan_mode": "auto", "chunk_rows": 3000}}


@pytest.mark.parametrize("variant", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_tpch_query(name, variant, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    settings = SETTINGS[variant]
    ours = connect(tpch_dir, **settings).sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    assert theirs.num_rows > 0, "validation parameters must produce rows"
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))
