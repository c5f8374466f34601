"""Every scan-pipeline switch, and the fully blocking path, give DuckDB's answers."""

import pytest

from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = tpch_queries()
MODES = {
    "blocking": {"pipeline": "blocking"},
    "no_prefetch": {"prefetch": False},
    "no_reader_combining": {"reader_combining": False},
    "no_metadata_cache": {"metadata_cache": False},
    "no_pruning": {"row_group_pruning": False},
    "tiny_scan_buffer": {"scan_buffer_bytes": "1MiB", "chunk_rows": 20000},
    "one_io_thread": {"io_threads": 1},
    "eight_io_threads": {"io_threads": 8, "chunk_rows": 20000},
    "decode_in_task": {"io_threads": 2, "chunk_rows": 20000},
    "decode_across_pool": {"io_threads": 2, "chunk_rows": 20000, "decode_in_task": False},
}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", ["q01", "q03", "q05", "q06", "q09", "q12", "q13", "q14", "q18", "q21", "q22"])
def test_mode_matches_duckdb(mode, name, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    ours = connect(tpch_dir, **MODES[mode]).sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


def test_blocking_reads_everything_before_computing(tpch_dir, connect):
    con = connect(tpch_dir, pipeline="blocking", chunk_rows=100_000)
    rel = con.sql("select count(*) from lineitem where l_quantity > 10")
    rel.measure_reads = True
    rel.to_arrow()
    op, ctx = rel.last_run
    (reader,) = ctx.readers()
    # the whole table was held at once, and no read ran on the I/O pool
    assert reader.stats.peak_buffered >= reader.stats.bytes_decoded
    assert all(e.thread == "MainThread" for e in ctx.recorder.events if e.stage in ("read", "decode"))


def test_overlapped_reads_on_io_threads_within_budget(tpch_dir, connect):
    con = connect(tpch_dir, chunk_rows=50_000, scan_buffer_bytes="2MiB")
    rel = con.sql("select sum(l_quantity), count(l_comment) from lineitem")
    rel.to_arrow()
    op, ctx = rel.last_run
    (reader,) = ctx.readers()
    one_task = max(reader.estimates)
    assert reader.stats.peak_buffered <= max(2 << 20, one_task) + one_task
    assert any(e.thread != "MainThread" for e in ctx.recorder.events if e.stage == "decode")


def test_reader_combining_starts_both_join_sides(tpch_dir, connect):
    con = connect(tpch_dir, measure_reads=True)
    # orders' comments make its decode last long enough (about 2 ms for its keys alone at SF
    # 0.1) that a thread scheduled late under load still starts lineitem's read before it ends.
    rel = con.sql("select count(*) from orders, lineitem where o_orderkey = l_orderkey and length(o_comment) >= 0")
    rel.to_arrow()
    op, ctx = rel.last_run
    starts = sorted(min(e.start for e in ctx.recorder.events if e.stage == "read" and e.label == t)
                    for t in ("orders", "lineitem"))
    ends = {t: max(e.end for e in ctx.recorder.events if e.stage == "decode" and e.label == t)
            for t in ("orders", "lineitem")}
    # the probe side (lineitem) began reading before the build side (orders) finished decoding
    assert starts[1] < min(ends.values())


def test_build_side_reads_are_queued_first(tpch_dir, connect):
    # Probing waits for the whole build side, so its read tasks go to the pool ahead of the
    # probe side's read-ahead (Q14: part is the build side of the join with lineitem).
    con = connect(tpch_dir, chunk_rows=50_000, io_threads=1)
    rel = con.sql(tpch_queries()["q14"])
    rel.measure_reads = True
    rel.to_arrow()
    op, ctx = rel.last_run
    reads = sorted((e.start, e.label) for e in ctx.recorder.events if e.stage == "read")
    part = [i for i, (_, t) in enumerate(reads) if t == "part"]
    assert part and part == list(range(len(part)))  # one I/O thread: all of part came first


def test_auto_adapts_only_on_scans_of_several_chunks(tpch_dir, tpch_duck, connect):
    # An adaptive scan is cut into ~64 slices; on a table of a few chunks those are far smaller
    # than a chunk and cost every operator above a chunk's overhead (TPC-H SF 1: 1.25x the time
    # of a fixed mode), so a scan of under ADAPT_MIN_CHUNKS chunks takes pushdown.
    from sluice.physical.scan import ADAPT_MIN_CHUNKS
    sql = "select sum(l_extendedprice) as s from lineitem where l_discount > 0.05"
    want = tpch_duck.sql(sql).fetchall()[0][0]
    # (SF 0.1: 600k rows in 6 row groups, so adapt_min_slices is lowered; the next test checks it)
    for rows, adapts in [(1 << 20, False), (600_000 // (2 * ADAPT_MIN_CHUNKS), True)]:
        rel = connect(tpch_dir, chunk_rows=rows, adapt_min_slices=1).sql(sql)
        assert rel.to_arrow()[0][0].as_py() == want
        _, ctx = rel.last_run
        (reader,) = ctx.readers()
        assert (reader.policy is not None) == adapts
        if not adapts:
            assert reader.mode == "pushdown" and set(reader.stats.modes) == {"pushdown"}


def test_auto_does_not_adapt_on_few_row_groups(tpch_dir, tpch_duck, connect):
    # A slice is at least a row group: on 6 of them every slice went to sampling the modes.
    from sluice.physical.scan import ADAPT_MIN_CHUNKS
    sql = "select sum(l_extendedprice) as s from lineitem where l_discount > 0.05"
    want = tpch_duck.sql(sql).fetchall()[0][0]
    rel = connect(tpch_dir, chunk_rows=600_000 // (2 * ADAPT_MIN_CHUNKS)).sql(sql)  # rows enough, 6 row groups
    assert rel.to_arrow()[0][0].as_py() == want
    (reader,) = rel.last_run[1].readers()
    assert len(reader.tasks) < 16
    assert reader.policy is None and set(reader.stats.modes) == {"pushdown"}


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_adaptive_scan_keeps_every_io_thread_busy(threads, tpch_dir, tpch_duck, connect):
    # The adaptive policy bounds the slices in flight (it assigns a mode when a slice is
    # queued), but never below the I/O pool: a fixed 3 left an H200's 8 threads 18 % busy.
    from sluice.physical.scan import ADAPT_MIN_CHUNKS
    sql = "select sum(l_extendedprice) as s from lineitem where l_discount > 0.05"
    rel = connect(tpch_dir, io_threads=threads, chunk_rows=600_000 // (2 * ADAPT_MIN_CHUNKS),
                  adapt_min_slices=1).sql(sql)
    assert rel.to_arrow()[0][0].as_py() == tpch_duck.sql(sql).fetchall()[0][0]
    (reader,) = rel.last_run[1].readers()
    assert reader.policy is not None
    assert len(reader.tasks) > 3  # more slices than a fixed depth of 3 (one row group each at least)
    assert reader.stats.peak_in_flight == min(len(reader.tasks), max(3, threads + 1))


def test_analyze_shows_the_tasks_in_flight(tpch_dir, connect):
    rel = connect(tpch_dir, io_threads=2, chunk_rows=100_000).sql("select sum(l_quantity) from lineitem")
    rel.to_arrow()
    (reader,) = rel.last_run[1].readers()
    assert reader.stats.peak_in_flight >= 2
    assert f"in {reader.stats.peak_in_flight} task(s) at once" in rel.analyze()


def test_reads_are_timed_apart_only_when_measured(tpch_dir, tpch_duck, connect):
    """Without ``measure_reads`` pyarrow reads as it decodes (no read stage, the same bytes
    counted); ``analyze()`` measures its run; both answer alike."""
    con = connect(tpch_dir)
    sql = "select l_returnflag, sum(l_quantity) q from lineitem group by 1 order by 1"
    rel = con.sql(sql)
    plain = rel.to_arrow()
    _, ctx = rel.last_run
    (reader,) = ctx.readers()
    assert not [e for e in ctx.recorder.events if e.stage == "read"] and reader.stats.bytes_read > 0
    report = rel.analyze()
    _, ctx = rel.last_run
    (measured,) = ctx.readers()
    assert [e for e in ctx.recorder.events if e.stage == "read"] and "  read     busy" in report
    assert measured.stats.bytes_read == reader.stats.bytes_read and rel.measure_reads is False
    compare(plain, tpch_duck.sql(sql).to_arrow_table(), [0])


@pytest.mark.parametrize("on", [True, False])
def test_tasks_decode_on_their_own_thread_when_each_thread_has_one(tpch_dir, connect, monkeypatch, on):
    """``decode_in_task``: with a load in flight for every I/O thread, pyarrow decodes a task on
    its thread (no thread pool, no pre-buffering); a scan of fewer tasks, the last tasks of a
    scan and a scan whose buffer holds one task at a time (ClickBench q23's 105 columns) still
    spread their columns over pyarrow's pool."""
    import pyarrow.parquet as pq
    calls = []
    real = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, columns=None, use_threads=True, **kw):
        calls.append(use_threads)
        return real(self, row_groups, columns=columns, use_threads=use_threads, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    con = connect(tpch_dir, io_threads=2, chunk_rows=20000, decode_in_task=on)
    con.sql("select sum(l_quantity) from lineitem").to_arrow()
    # (whether a thread has a load in flight when a task starts depends on the scheduler: on 2
    # loaded cores a few more tasks than the last two may find a thread idle and use the pool)
    assert len(calls) > 3 and (calls.count(False) >= len(calls) // 2 if on else set(calls) == {True})
    calls.clear()
    connect(tpch_dir, io_threads=2, decode_in_task=on).sql("select max(n_name) from nation").to_arrow()
    assert calls == [True]
    calls.clear()
    connect(tpch_dir, io_threads=2, chunk_rows=20000, scan_buffer_bytes=1 << 20,
            decode_in_task=on).sql("select sum(l_quantity) from lineitem").to_arrow()
    assert len(calls) > 3 and set(calls) == {True}


def test_blocking_turns_every_optimisation_switch_off(tpch_dir, connect):
    """``pipeline=blocking`` is the papers' baseline: no runtime or top-k filter, no row group
    pruned, no aggregate answered from statistics (each was left on before: they were read
    as plain settings, not through ``Config.on``)."""
    from sluice.exec.operators import ScanOp
    queries = {"join": "select count(*) from orders join lineitem on o_orderkey = l_orderkey where o_totalprice < 2000",
               "topk": "select l_orderkey from lineitem order by l_orderkey desc limit 3",
               "pruned": "select count(*) from lineitem where l_orderkey < 10",
               "stats": "select max(l_orderkey) from lineitem"}
    for name, sql in queries.items():
        plans = {}
        for pipeline in ("overlapped", "blocking"):
            rel = connect(tpch_dir, pipeline=pipeline, chunk_rows=20000).sql(sql)
            rel.to_arrow()
            op, _ = rel.last_run
            scans = [o for o in op.walk() if isinstance(o, ScanOp)]
            plans[pipeline] = (sum(len(s.runtime_filters) for s in scans), sum(s.pruned for s in scans), len(scans))
        on, off = plans["overlapped"], plans["blocking"]
        assert off[0] == 0 and off[1] == 0, (name, off)
        if name in ("join", "topk"):
            assert on[0] > 0, (name, on)  # the switch does something when on
        if name == "pruned":
            assert on[1] > 0, (name, on)
        if name == "stats":
            assert on[2] == 0 and off[2] == 1, (name, plans)  # answered from the footers only when on


def test_switches_are_read_one_way():
    """Every optimisation switch is read through ``Config.on`` (so blocking turns it off); a
    direct ``config.<switch>`` read anywhere in sluice/ fails here."""
    import ast
    from pathlib import Path

    import sluice
    from sluice.config import SWITCHES, Config
    assert set(SWITCHES) <= set(Config.keys())
    direct = []
    for p in Path(sluice.__file__).parent.rglob("*.py"):
        if p.name == "config.py":
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Attribute) and n.attr in SWITCHES and isinstance(n.ctx, ast.Load):
                base = n.value
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if name in ("config", "cfg"):
                    direct.append(f"{p.name}:{n.lineno} {name}.{n.attr}")
    assert not direct, direct
    with pytest.raises(KeyError):
        Config().on("chunk_rows")


def test_the_pipeline_setting_lists_every_switch():
    """The settings page (generated from the docstrings) names what blocking turns off."""
    import re

    import inspect

    from sluice.config import SWITCHES, Config
    src = inspect.getsource(Config)
    text = src[src.index("pipeline: str"):src.index("prefetch: bool")]
    assert set(re.findall(r"``(\w+)``", text)) - {"overlapped", "blocking", "Config.on"} == set(SWITCHES), text
