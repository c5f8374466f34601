"""The device tier of spilling (DESIGN §4), exercised on the CPU: with ``device_tier`` the
operators' state is held against a device budget, partitions that leave it go to host memory
(:class:`~sluice.io.spill.HostPages`), and from there to disk when the host budget is full.
On a GPU the same code moves the pages device -> pinned host -> disk."""

from __future__ import annotations

import pytest

import sluice.engine as engine
from sluice.exec.context import ExecContext
from sluice.io.spill import HostPages
from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = ["q03", "q18"]


@pytest.fixture
def simulated_device(monkeypatch):
    def context(self, progress=None, op=None):
        c = self._con
        scans = sum(1 for o in op.walk() if o.label == "Scan") if op is not None else 1
        return ExecContext(c.config, c.device, c._pool, c.cache, progress=progress, device_tier=True, dist=c.group,
                           scan_count=scans)
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
    con = connect(tpch_dir, device_memory_limit="512KiB", host_memory_limit=host, chunk_rows=50000)
    sql = tpch_queries()[name]
    rel = con.sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
    op, ctx = rel.last_run
    assert ctx.device_memory is not None and ctx.device_memory.peak <= ctx.device_memory.limit * 1.5
    assert simulated_device, "no partition left the device budget"
    went_to_disk = any(t.file is not None for t in simulated_device)
    assert went_to_disk == (host == "512KiB")
