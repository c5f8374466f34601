"""What a user sees of memory and spilling: the memory plan of --explain, the per-operator
spill metrics and spill I/O of --analyze and of the timeline."""

from __future__ import annotations

import subprocess
import sys

SQL = "select l_orderkey, count(*), max(l_comment) from lineitem group by l_orderkey order by 2 desc, 1 limit 3"


def cli(*args):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_explain_shows_the_memory_plan(tpch_dir):
    out = cli("query", "--data", str(tpch_dir), "--device", "cpu", "--explain", "--set", "host_memory_limit=64MiB",
              "select o_orderpriority, count(*) from orders, lineitem where o_orderkey = l_orderkey group by 1")
    plan = out.split("Memory plan:")[1]
    assert "host budget 64.0 MiB" in plan
    assert "HashJoin" in plan and "build side" in plan and "of budget" in plan
    assert "HashAggregate" in plan and "groups" in plan


def test_analyze_shows_spilling(tpch_dir, tmp_path):
    out = cli("query", "--data", str(tpch_dir), "--device", "cpu", "--analyze", "--set", "force_spill=true",
              "--set", f"spill_dir={tmp_path}", SQL)
    assert "memory: peak reserved" in out and "partitions" in out and "spilled" in out
    assert "spill: wrote" in out and "codecs" in out and "read back" in out


def test_timeline_records_spill_io(tpch_dir, connect, tmp_path):
    rel = connect(tpch_dir, force_spill=True, spill_dir=str(tmp_path)).sql(SQL)
    rel.to_arrow()
    op, ctx = rel.last_run
    stages = {e.stage for e in ctx.recorder.events}
    assert {"spill_write", "spill_read"} <= stages
    centres, bw, util = ctx.recorder.timeline(bins=20)
    assert sum(bw["spill_write"]) > 0 and sum(bw["spill_read"]) > 0
    from sluice.analyze import plot_timeline
    plot_timeline(op, ctx, str(tmp_path / "t.png"))
    assert (tmp_path / "t.png").stat().st_size > 1000
