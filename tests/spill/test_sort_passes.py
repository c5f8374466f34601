"""An external sort of more runs than one merge window takes (FAN_IN): the runs are merged in
passes first, and the answer is DuckDB's, in order -- strings, both directions, NULLs."""

from __future__ import annotations

from dataclasses import dataclass

import sluice
from sluice.exec import sort
from sluice.exec.operators import Operator
from sluice.testing.oracle import compare, duckdb_connect

@dataclass(eq=False)
class Pages(Operator):
    """Stands in for a scan: the chunks it was given."""
    pages: list
    label = "Pages"

    def execute(self, ctx):
        yield from self.pages


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

    import torch

    from sluice.chunk import Chunk, Column
    from sluice.config import Config
    from sluice.exec.context import ExecContext
    from sluice.expr.nodes import Col
    from sluice.io.memory import MemoryPool
    from sluice.plan.logical import SortKey
    from sluice.types import INT64

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


def test_wide_rows_merge_fewer_runs_at_once_within_the_budget(tmp_path):
    """A run's page is at least 1,024 rows, so with wide rows a window of FAN_IN runs' pages
    outgrows a small budget: the merge then reads fewer runs at once, in more passes, and the
    pool never holds more than the budget (before: 64 runs' pages forced past it -- 11.9 MiB on
    8 -- and the Window the sort fed was refused the room to read a parked partition back)."""
    import random

    import pyarrow as pa
    import torch

    from sluice.arrow import arrow_to_column, column_to_arrow
    from sluice.chunk import Chunk
    from sluice.config import Config
    from sluice.exec.context import ExecContext
    from sluice.expr.nodes import Col
    from sluice.io.memory import MemoryPool
    from sluice.plan.logical import SortKey
    from sluice.types import STRING

    r = random.Random(7)
    words = [[f"{r.randrange(10**9):09d}" + "x" * 200 for _ in range(1200)] for _ in range(40)]
    pages = [Chunk({"s": arrow_to_column(pa.array(w), STRING)}, len(w)) for w in words]
    limit = 4 << 20
    cfg = Config.from_settings({"force_spill": True, "spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(limit, cap=None))
    op = sort.SortOp(Pages(pages), (SortKey(Col("s", STRING)),))
    out = []
    for chunk in op.stream(ctx):
        out += column_to_arrow(chunk.columns["s"]).to_pylist()
    assert out == sorted(w for ws in words for w in ws)
    assert ctx.memory.peak <= limit
    assert ctx.memory.used == 0


def test_input_sorted_already_holds_a_page_per_run(tmp_path):
    """Runs whose key ranges follow each other (a sort of rows that arrive nearly in order): the
    merge emits the first run while the others wait, each holding one page. Before, every run
    loaded its next page every step and the rows above the bound piled up -- all of the later
    runs held at once, past the budget."""

    import torch

    from sluice.chunk import Chunk, Column
    from sluice.config import Config
    from sluice.exec.context import ExecContext
    from sluice.expr.nodes import Col
    from sluice.io.memory import MemoryPool
    from sluice.plan.logical import SortKey
    from sluice.types import INT64

    n = 20_000
    pages = [Chunk({"k": Column(torch.arange(i * n, (i + 1) * n), INT64)}, n) for i in range(8)]
    limit = 1 << 20
    cfg = Config.from_settings({"force_spill": True, "spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(limit, cap=None))
    op = sort.SortOp(Pages(pages), (SortKey(Col("k", INT64)),))
    out = torch.cat([c.columns["k"].data for c in op.stream(ctx)])
    assert torch.equal(out, torch.arange(8 * n))
    # the runs' pages (1,024 rows each), joined and sorted: 3 x 8 pages of 8 KiB, not 8 runs of 160 KiB
    assert ctx.memory.peak <= 400 << 10, ctx.memory.peak
    assert ctx.memory.used == 0
