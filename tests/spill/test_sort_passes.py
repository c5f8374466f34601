"""An external sort of more runs than one merge window takes (FAN_IN): the runs are merged in
passes first, and the answer is DuckDB's, in order -- strings, both directions, NULLs."""

from __future__ import annotations

import sluice
from sluice.exec import sort
from sluice.testing.oracle import compare, duckdb_connect

QUERY = ("select o_orderkey, o_custkey, o_comment, nullif(o_shippriority + o_orderkey % 3, 1) p from orders "
         "where o_orderkey % 7 = 1 order by p nulls first, o_custkey desc, o_orderkey")


def test_more_runs_than_a_merge_window(tpch_dir):
    con = sluice.connect(str(tpch_dir), device="cpu", force_spill=True, chunk_rows=100)
    rel = con.sql(QUERY)
    ours = rel.to_arrow()
    op, ctx = rel.last_run
    runs = [ctx.runs[o].memory.partitions for o in op.walk() if isinstance(o, sort.SortOp)]
    assert runs and runs[0] > 2 * sort.FAN_IN  # passes ran before the last merge
    compare(ours, duckdb_connect(tpch_dir).sql(QUERY).to_arrow_table(), [3, 1, 0])
