"""Device selection and the CUDA path. CUDA tests skip cleanly where there is no GPU; on the
GPU machine they compare CUDA results with CPU results and DuckDB (run the whole suite there
with ``pytest --device cuda`` as well)."""

import pytest
import torch

import sluice
from sluice.errors import ConfigError
from sluice.testing.oracle import compare
from sluice.testing.queries import ssb_queries, tpch_queries

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_auto_picks_cpu_without_cuda(tpch_dir):
    con = sluice.connect(tpch_dir, device="auto")
    assert con.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
def test_cuda_requested_without_cuda_is_a_clean_error(tpch_dir):
    with pytest.raises(ConfigError, match="no CUDA device"):
        sluice.connect(tpch_dir, device="cuda")


@needs_cuda
@pytest.mark.parametrize("name", sorted(tpch_queries()))
def test_tpch_cuda_equals_cpu(name, tpch_dir, tpch_duck):
    sql = tpch_queries()[name]
    gpu = sluice.connect(tpch_dir, device="cuda").sql(sql).to_arrow()
    cpu = sluice.connect(tpch_dir, device="cpu").sql(sql).to_arrow()
    compare(gpu, cpu)
    compare(gpu, tpch_duck.sql(sql).to_arrow_table())


@needs_cuda
@pytest.mark.parametrize("name", sorted(ssb_queries()))
def test_ssb_cuda_equals_cpu(name, ssb_dir):
    sql = ssb_queries()[name]
    compare(sluice.connect(ssb_dir, device="cuda").sql(sql).to_arrow(),
            sluice.connect(ssb_dir, device="cpu").sql(sql).to_arrow())


def _scan_reader(con, sql):
    """The ScanReader of the only scan in ``sql``'s plan, with a fresh execution context."""
    from sluice.physical.lower import lower_plan
    from sluice.exec.operators import ScanOp
    rel = con.sql(sql)
    (scan,) = [o for o in lower_plan(rel.plan, con.config).walk() if isinstance(o, ScanOp)]
    return scan.reader(rel._context())


@needs_cuda
def test_cuda_scan_consumer_never_synchronises(tpch_dir):
    # Deferred synchronisation: the consumer only wait_event()s on each transfer; reads,
    # decodes and copies (and any waiting) happen on the I/O threads.
    import threading
    import warnings
    con = sluice.connect(tpch_dir, device="cuda", chunk_rows=50_000)
    reader = _scan_reader(con, "select l_quantity, l_extendedprice from lineitem")
    main_syncs = []

    def record(message, *args, **kwargs):
        if "synchroniz" in str(message) and threading.current_thread() is threading.main_thread():
            main_syncs.append(str(message))

    total = torch.zeros((), dtype=torch.int64, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for chunk in reader:
                total += chunk.columns["l_quantity"].data.sum() + chunk.columns["l_extendedprice"].data.sum()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not main_syncs, main_syncs[:3]
    cpu = sluice.connect(tpch_dir, device="cpu").sql(
        "select sum(l_quantity) + sum(l_extendedprice) as s from lineitem").to_arrow()
    assert total.item() == int(cpu.column("s")[0].as_py() * 100)


def _device_growth(tpch_dir, **settings):
    con = sluice.connect(tpch_dir, device="cuda", chunk_rows=20_000, **settings)
    sql = "select sum(l_quantity), sum(l_extendedprice), max(l_shipdate), sum(l_orderkey) from lineitem"
    con.sql(sql).to_arrow()  # warm-up
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    con.sql(sql).to_arrow()
    return torch.cuda.max_memory_allocated() - base


@needs_cuda
def test_cuda_scan_device_memory_bounded_by_budget(tpch_dir):
    # Decoded tasks are copied to the device before they are queued, so the budget bounds
    # device memory too; overhead: the chunk in use and the aggregate's per-chunk temporaries.
    budget = 4 << 20
    overhead = 4 << 20
    growth = _device_growth(tpch_dir, scan_buffer_bytes=budget)
    blocking = _device_growth(tpch_dir, pipeline="blocking")  # the whole table on the device
    assert growth <= budget + overhead, f"grew {growth / 2**20:.1f} MiB"
    assert blocking > budget + overhead, f"blocking grew only {blocking / 2**20:.1f} MiB"
