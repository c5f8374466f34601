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


def test_a_merge_counts_the_pages_it_holds_between_steps(tmp_path):
    """While the consumer works on what a merge step emitted, the merge holds a page of every
    run and the rows left over: they stay counted in the pool (before, nothing was counted
    between steps -- a 2-rank SF 10 sort's merge windows held tens of MiB per rank past its
    budget, in a cgroup where that got it killed)."""
    import random
    from dataclasses import dataclass

    import torch

    from sluice.chunk import Chunk, Column
    from sluice.config import Config
    from sluice.exec.context import ExecContext
    from sluice.exec.operators import Operator
    from sluice.expr.nodes import Col
    from sluice.io.memory import MemoryPool
    from sluice.plan.logical import SortKey
    from sluice.types import INT64

    @dataclass(eq=False)
    class Pages(Operator):
        pages: list
        label = "Pages"

        def execute(self, ctx):
            yield from self.pages

    r = random.Random(5)
    pages = [Chunk({"k": Column(torch.tensor([r.randrange(1 << 40) for _ in range(2000)]), INT64)}, 2000)
             for _ in range(8)]
    cfg = Config.from_settings({"force_spill": True, "spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(1 << 30, cap=None))
    op = sort.SortOp(Pages(pages), (SortKey(Col("k", INT64)),))
    held, out = [], []
    for chunk in op.stream(ctx):
        held.append(ctx.memory.used)
        out.append(chunk.columns["k"].data)
    assert torch.equal(torch.cat(out), torch.sort(torch.cat([p.columns["k"].data for p in pages])).values)
    assert len(held) > 1 and min(held[:-1]) > 0  # each step: the next pages of the runs, counted
    assert ctx.memory.used == 0
