"""The device tier of spilling (docs/design.md §4), exercised on the CPU: with ``device_tier`` the
operators' state is held against a device budget, partitions that leave it go to host memory
(:class:`~sluice.io.spill.HostPages`), and from there to disk when the host budget is full.
On a GPU the same code moves the pages device -> pinned host -> disk."""

from __future__ import annotations

import pytest

import sluice.engine as engine
from sluice.exec.context import ExecContext
from sluice.io.memory import MemoryPool
from sluice.io.spill import HostPages
from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = ["q03", "q18"]


@pytest.fixture
def simulated_device(monkeypatch):
    def context(self, progress=None, op=None, device_limit=None):
        c = self._con
        scans = sum(1 for o in op.walk() if o.label == "Scan") if op is not None else 1
        pool = None if device_limit is None else MemoryPool(device_limit, "device_memory_limit", "device")
        return ExecContext(c.config, c.device, c._pool, c.cache, progress=progress, device_tier=True, dist=c.group,
                           scan_count=scans, device_memory=pool)
    monkeypatch.setattr(engine.Relation, "_context", context)
    targets = []
    orig = HostPages.__init__

    def spy(self, ctx, label):
        targets.append(self)
        orig(self, ctx, label)
    monkeypatch.setattr(HostPages, "__init__", spy)
    return targets


@pytest.mark.parametrize("name", QUERIES)
@pytest.mark.parametrize("host", ["64MiB", "512KiB"], ids=["host_holds", "host_spills_to_disk"])
def test_device_to_host_to_disk(name, host, simulated_device, tpch_dir, tpch_duck, connect):
    # Without runtime filters: the probe rows they drop at the scan (since every scan applies
    # a ready filter to slices read before it) no longer fill 512 KiB of host pages in q03.
    con = connect(tpch_dir, device_memory_limit="512KiB", host_memory_limit=host, chunk_rows=50000,
                  runtime_filters=False)
    sql = tpch_queries()[name]
    rel = con.sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
    op, ctx = rel.last_run
    assert ctx.device_memory is not None
    if ctx.device.type == "cuda":
        # On a real GPU the pool also carries the scan's read-ahead, which always admits one
        # read task (here far larger than 512 KiB): the bound is on each operator's state.
        peaks = [r.memory.peak_reserved for r in ctx.runs.values() if r.memory is not None]
        assert peaks and max(peaks) <= ctx.device_memory.limit * 1.5, peaks
    else:
        assert ctx.device_memory.peak <= ctx.device_memory.limit * 1.5
    assert simulated_device, "no partition left the device budget"
    went_to_disk = any(t.file is not None for t in simulated_device)
    assert went_to_disk == (host == "512KiB")


def test_out_of_device_memory_reruns_under_a_smaller_budget(simulated_device, monkeypatch, tpch_dir, tpch_duck,
                                                           connect):
    # A GPU holds less than the budget says (kernels' temporaries, other processes): the
    # simulated card here has 2 MiB, the budget 64 MiB. The first runs fail with CUDA's
    # out-of-memory error; the query reruns under a quarter of the budget each time until its
    # state spills instead, and answers right. (q03 holds ~5 MiB under a 16 MiB budget, under 1
    # MiB under 4 MiB.)
    import torch
    physical = 2 << 20
    grow = MemoryPool._grow

    def card(self, n, *args):
        ok = grow(self, n, *args)
        if self.kind == "device" and self.used > physical:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return ok
    monkeypatch.setattr(MemoryPool, "_grow", card)
    sql = tpch_queries()["q03"]
    con = connect(tpch_dir, device_memory_limit="64MiB", chunk_rows=50000)
    rel = con.sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
    _, ctx = rel.last_run
    assert ctx.oom_reruns == [16 << 20, 4 << 20] and ctx.device_memory.limit == 4 << 20
    assert "device out of memory: rerun 2x, last under a 4.0 MiB device budget" in rel.analyze()


def test_out_of_device_memory_past_the_reruns_is_one_line(simulated_device, monkeypatch, tpch_dir, connect):
    import torch
    from sluice.errors import ResourcesExhausted

    def card(self, n, *args):
        if self.kind == "device":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB\nmore text")
        return True
    monkeypatch.setattr(MemoryPool, "_grow", card)
    con = connect(tpch_dir, device_memory_limit="64MiB")
    with pytest.raises(ResourcesExhausted, match=r"device memory exhausted: CUDA out of memory. Tried to allocate "
                                                  r"2.00 MiB \(after 2 reruns with less\); lower device_memory_limit"):
        con.sql(tpch_queries()["q18"]).to_arrow()


def test_a_rerun_waits_for_the_failed_runs_read_tasks():
    # Before an out-of-memory rerun, queued read tasks are cancelled and running ones finish:
    # what they hold (device memory on a GPU) is free before the query starts again.
    import threading
    import types
    from concurrent.futures import ThreadPoolExecutor

    from sluice.engine import _settle_reads
    gate, started = threading.Event(), threading.Event()

    def task():
        started.set()
        gate.wait(5)
        return "done"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(task)
        queued = pool.submit(task)
        started.wait(5)
        reader = types.SimpleNamespace(pending=[(running, 0, 0, "direct"), (queued, 1, 0, "direct")])
        ctx = types.SimpleNamespace(readers=lambda: [reader])
        threading.Timer(0.2, gate.set).start()
        _settle_reads(ctx)
        assert running.done() and running.result() == "done"
        assert queued.cancelled()
