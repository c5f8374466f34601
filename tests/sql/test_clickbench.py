"""ClickBench's 43 queries on a small generated ``hits`` table (``sluice datagen clickbench``),
checked against DuckDB on the same file. A query whose LIMIT cuts through ties (or that has no
ORDER BY) is checked for its ORDER BY columns and for every row being one of the query's rows
without the LIMIT; every other query for equal rows."""

import pytest

from sluice.datagen.clickbench import COLUMNS, generate_clickbench
from sluice.testing.oracle import compare, compare_limited, duckdb_connect
from sluice.testing.queries import clickbench_queries, limit_parts

QUERIES = clickbench_queries()


@pytest.fixture(scope="module")
def hits_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("clickbench")
    generate_clickbench(40_000, root)
    return root


def check(con, duck, sql):
    ours = con.sql(sql).to_arrow()
    theirs = duck.sql(sql).to_arrow_table()
    lim = limit_parts(sql, ours.column_names)
    if lim is None:
        compare(ours, theirs)
    else:
        compare_limited(ours, theirs, duck.sql(lim[0]).to_arrow_table(), lim[1])


def test_the_table_has_clickbench_columns(hits_dir):
    import pyarrow.parquet as pq
    schema = pq.ParquetFile(hits_dir / "hits.parquet").schema_arrow
    assert schema.names == [n for n, _ in COLUMNS] and len(schema) == 105


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_clickbench_query(name, hits_dir, connect):
    check(connect(hits_dir), duckdb_connect(hits_dir), QUERIES[name])


@pytest.mark.parametrize("name", ["q04", "q13", "q16", "q22", "q28", "q33", "q39", "q42"])
def test_clickbench_query_spilled_in_small_chunks(name, hits_dir, connect):
    check(connect(hits_dir, chunk_rows=3000, force_spill=True), duckdb_connect(hits_dir), QUERIES[name])
