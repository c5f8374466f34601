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
        if "synchroniz" in str(message) and "prototype" not in str(message) \
                and threading.current_thread() is threading.main_thread():
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
    # decoder=arrow: tasks reach the device decoded; the device decoder's working memory is
    # bounded by the device budget (decode_pool), not by scan_buffer_bytes.
    con = sluice.connect(tpch_dir, device="cuda", chunk_rows=20_000, decoder="arrow", **settings)
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


# ------------------------------------------------------------------ issue 29, items 1-3 on the CPU

def _fake_cuda(monkeypatch, count=2, current=0):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current)


def test_cuda_spellings_resolve_to_one_indexed_device(monkeypatch):
    # torch.device("cuda") != torch.device("cuda:0"): a stream cache keyed by the unindexed
    # spelling never hit, and tensors (which report cuda:0) never equal the context's device.
    from sluice.devices import resolve_device
    _fake_cuda(monkeypatch, current=1)
    assert resolve_device("cuda") == torch.device("cuda", 1)
    assert resolve_device("auto") == torch.device("cuda", 1)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_device("cuda:2")
    with pytest.raises(ConfigError, match="not a device name"):
        resolve_device("cuda:x")


@pytest.mark.parametrize("setting,local_rank,want", [("cuda", "1", 1), ("auto", "3", 1), ("cuda:0", "1", 0)])
def test_each_rank_takes_its_local_gpu_unless_one_is_named(monkeypatch, setting, local_rank, want):
    from sluice.devices import resolve_device
    from sluice.ranks.group import device_for_rank
    _fake_cuda(monkeypatch)
    monkeypatch.setenv("LOCAL_RANK", local_rank)
    assert device_for_rank(resolve_device(setting), setting) == torch.device("cuda", want)


def test_a_chunk_without_columns_names_its_device():
    from sluice.chunk import Chunk
    from sluice.errors import InternalError
    with pytest.raises(InternalError, match="without its device"):
        Chunk({}, 3)
    c = Chunk({}, 3, home=torch.device("meta"))
    assert c.device == torch.device("meta") and c.select([]).device == torch.device("meta")
    assert c.slice(0, 2).device == torch.device("meta")


def test_an_operator_output_on_another_device_is_an_internal_error():
    # The CPU-side check for "literal rows stay on the CPU on a CUDA connection": every
    # operator's output passes through timed(), which compares it with the query's device
    # (here a fake second device, meta).
    from sluice.chunk import Chunk, Column
    from sluice.errors import InternalError
    from sluice.exec.context import timed
    from sluice.metrics import OperatorStats
    from sluice.types import INT64
    meta = torch.device("meta")
    on_cpu = Chunk({"a": Column(torch.zeros(2, dtype=torch.int64), INT64)}, 2)
    with pytest.raises(InternalError, match="operator Values made a chunk on cpu"):
        list(timed(iter([on_cpu]), OperatorStats("Values"), None, meta))
    mixed = Chunk({"a": Column(torch.zeros(2, dtype=torch.int64, device=meta), INT64),
                   "b": Column(torch.zeros(2, dtype=torch.int64), INT64)}, 2)
    with pytest.raises(InternalError, match="operator Join made column b on cpu"):
        list(timed(iter([mixed]), OperatorStats("Join"), None, meta))
    with pytest.raises(InternalError, match="made a chunk on cpu"):
        list(timed(iter([Chunk({}, 1, home=torch.device("cpu"))]), OperatorStats("OneRow"), None, meta))
    ok = Chunk({"a": Column(torch.zeros(2, dtype=torch.int64, device=meta), INT64)}, 2)
    assert list(timed(iter([ok]), OperatorStats("Values"), None, meta)) == [ok]


@pytest.mark.parametrize("sql", [
    "select 5 as x",
    "select (select 5) as x, count(*) as n from nation",
    "select * from (values (1, 'a'), (2, 'b')) v(k, s) join nation on n_nationkey = k order by k",
    "select 1 as k union all select n_nationkey from nation order by k limit 3",
    "select count(*) from lineitem where l_quantity > 10",
    "select count(*) from (select 1 from nation, region)",
])
def test_literal_rows_live_on_the_query_device(sql, tpch_dir, tpch_duck, connect):
    # Each chunk made here passes the device check above (the test fails with an
    # InternalError otherwise); on a GPU (--device cuda) the same queries run on CUDA.
    compare(connect(tpch_dir).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())


def test_transferred_tensors_are_recorded_on_the_consuming_stream(monkeypatch):
    # Tensors copied on the side stream, consumed on another: record_stream() on every one
    # (data and validity), else the allocator may hand their memory to the next copy while
    # kernels queued on the consumer still read it.
    from sluice.io import pinned

    class FakeTensor:
        device = torch.device("cuda", 0)

        def __init__(self):
            self.recorded = []

        def record_stream(self, s):
            self.recorded.append(s)

    class FakeStream:
        waited = []

        def wait_event(self, e):
            self.waited.append(e)

    stream = FakeStream()
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: stream)
    cols = {k: types_ns(FakeTensor(), FakeTensor() if k == "b" else None) for k in "ab"}
    pinned.wait_for("event", cols)
    assert stream.waited == ["event"]
    assert all(c.data.recorded == [stream] for c in cols.values())
    assert cols["b"].valid.recorded == [stream]
    pinned.wait_for(None, cols)  # no side stream: nothing to hand over
    assert all(len(c.data.recorded) == 1 for c in cols.values())


def types_ns(data, valid):
    import types
    return types.SimpleNamespace(data=data, valid=valid)


@needs_cuda
@pytest.mark.parametrize("spelling", ["cuda", "cuda:0"])
@pytest.mark.parametrize("settings", [
    dict(copy_stream=True, pinned_memory=True), dict(copy_stream=False, pinned_memory=True),
    dict(copy_stream=True, pinned_memory=False), dict(decoder="device"), dict(scan_mode="staging")])
def test_race_probe_one_answer_in_ten_runs(tpch_dir, spelling, settings):
    # Issue 29's race probe: small chunks keep the copy stream's allocator busy; a block handed
    # back too early shows as a different answer in one of the runs.
    con = sluice.connect(tpch_dir, device=spelling, chunk_rows=65536, **settings)
    sql = ("select l_returnflag, sum(l_extendedprice * (1 - l_discount)) as s, count(*) as n, "
           "max(l_comment) as c from lineitem where l_quantity < 40 group by 1 order by 1")
    answers = {str(con.sql(sql).to_arrow().to_pylist()) for _ in range(10)}
    assert len(answers) == 1


def test_device_budget_is_a_share_of_what_the_process_can_have(monkeypatch):
    # Free memory now (another process may hold part of the card) plus what torch's cache holds
    # reserved -- not a share of the card's total.
    from sluice.io import memory
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (10 << 30, 80 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 2 << 30)
    monkeypatch.setattr(torch.cuda, "get_per_process_memory_fraction", lambda device=None: 1.0, raising=False)
    assert memory.default_device_limit(torch.device("cuda", 0)) == int((12 << 30) * memory.DEFAULT_DEVICE_SHARE)
    # A cap from torch.cuda.set_per_process_memory_fraction, which mem_get_info does not show.
    monkeypatch.setattr(torch.cuda, "get_per_process_memory_fraction", lambda device=None: 0.05, raising=False)
    assert memory.default_device_limit(torch.device("cuda", 0)) == int((4 << 30) * memory.DEFAULT_DEVICE_SHARE)


def test_pinned_page_buffers_count_against_the_host_budget(monkeypatch, tpch_dir):
    # On a GPU the device decoder's page buffer is pinned host memory: reserved on the host
    # budget while the column decodes (forced past it if need be), released after.
    import types

    import pyarrow.parquet as pq

    from sluice.io.memory import MemoryPool
    from sluice.io.parquet.decode.column import column_spec
    from sluice.io.parquet.decode.kernel_column import KernelPages
    from sluice.io.parquet.decoders import KernelDecoder
    from sluice.io.parquet.fetch import fetch_chunks
    from sluice.types import from_arrow
    path = str(tpch_dir / "orders.parquet")
    md = pq.read_metadata(path)
    f = md.schema.to_arrow_schema().field("o_totalprice")
    chunks, _ = fetch_chunks(path, md, [0], ["o_totalprice"])
    pages = KernelPages(chunks["o_totalprice"], column_spec(md, "o_totalprice", f.type, from_arrow(f.type)))
    host = MemoryPool(1 << 10, "host_memory_limit", "host")  # smaller than the pages: forced past it
    seen = []
    dec = KernelDecoder.__new__(KernelDecoder)
    dec.ctx = types.SimpleNamespace(device=torch.device("cuda", 0), host_pool=host,
                                     table=types.SimpleNamespace(name="orders"))
    monkeypatch.setattr(KernelDecoder, "_decode_reserved", lambda self, p: seen.append(host.used))
    dec._decode_pages(pages)
    assert seen == [pages.page_bytes()] and pages.page_bytes() > host.limit
    assert host.used == 0


@needs_cuda
def test_host_maps_and_group_counts_reach_the_gpu_without_a_wait():
    # Two waits a chunk on an H200 (q01): dictionary code maps copied from pageable memory and
    # bincount's host read of the largest id. Both are now sync-free on CUDA.
    from sluice.exec.aggregates import count_by
    from sluice.kernels.buffers import to_device
    dev = torch.device("cuda", torch.cuda.current_device())
    ids = torch.randint(0, 50, (100_000,), device=dev)
    valid = torch.rand(100_000, device=dev) > 0.5
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        mapped = to_device(torch.arange(1000, dtype=torch.int32), dev)
        counts = count_by(ids, 50)
        counted = count_by(ids, 50, valid)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert mapped.cpu().tolist() == list(range(1000))
    assert torch.equal(counts, torch.bincount(ids, minlength=50))
    assert torch.equal(counted, torch.bincount(ids[valid], minlength=50))


@needs_cuda
def test_runtime_filter_build_chunks_add_without_a_wait():
    # q10 at SF 10 on an H200 waited 0.54 s in max(): a build chunk's range read back per chunk.
    # Now each add queues its statistics and a pinned copy of its keys; publish reads them once.
    from sluice.chunk import Column
    from sluice.exec.runtime_filter import RuntimeFilter
    from sluice.types import INT64
    dev = torch.device("cuda", torch.cuda.current_device())
    chunks = [torch.randint(-50, 5000, (20_000,), device=dev) for _ in range(3)]
    valid = torch.rand(20_000, device=dev) > 0.1
    rf = RuntimeFilter("j", "k")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        rf.add(Column(chunks[0], INT64), 20_000)
        rf.add(Column(chunks[1], INT64, valid), 20_000)
        rf.add(Column(chunks[2], INT64), 20_000)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    rf.publish()
    keys = torch.cat([chunks[0], chunks[1][valid], chunks[2]]).cpu()
    assert (rf.lo, rf.hi, rf.keys) == (int(keys.min()), int(keys.max()), keys.numel())
    probe = torch.arange(-60, 5010, device=dev)
    keep = rf.mask(Column(probe, INT64), probe.numel()).cpu()
    assert bool(keep[torch.isin(probe.cpu(), keys)].all())  # no key of the build is dropped
