"""Read tasks merged into larger chunks (``coalesce_rows``) give DuckDB's answers, merge only
what is loaded, stay within their bounds and keep the adaptive scan's accounting whole.

Merging happens when the consumer falls behind the I/O threads (on a GPU); here
``reader.WAIT_TO_COALESCE`` makes each merge wait for the tasks in flight, so every merge path
runs on a CPU whatever the timing."""

import pytest
import torch

import sluice.io.parquet.reader as reader_mod
from sluice.config import Config, ConfigError
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns, tpch_queries

QUERIES = tpch_queries()
#: Tasks (a row group of 100,000 rows each in lineitem at SF 0.1) merged two or three at a time; a scan cut into slices (auto); pushed
#: filters; the torch decoder; spilled state above merged chunks.
SETTINGS = {
    "merged": {"chunk_rows": 3000, "coalesce_rows": 250000},
    "merged_auto": {"chunk_rows": 3000, "coalesce_rows": 250000, "scan_mode": "auto"},
    "merged_pushdown": {"chunk_rows": 3000, "coalesce_rows": 2500000, "scan_mode": "pushdown"},
    "merged_device_decoder": {"chunk_rows": 5000, "coalesce_rows": 250000, "decoder": "device"},
    "merged_spill": {"chunk_rows": 3000, "coalesce_rows": 250000, "force_spill": True},
}


@pytest.fixture
def waiting(monkeypatch):
    monkeypatch.setattr(reader_mod, "WAIT_TO_COALESCE", True)


#: Without a GPU the device decoder runs in Triton's interpreter: there it reads the small TPC-H
#: (``device_decoder_dirs``: row groups of 1,000 rows) in tasks of 500 rows, for a few queries.
SMALL_DEVICE = {"chunk_rows": 500, "coalesce_rows": 2500, "decoder": "device"}
SMALL_QUERIES = ("q05", "q06", "q13")  # (q01 in the interpreter: 25 s)


@pytest.mark.parametrize("variant", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_merged_tasks_match_duckdb(name, variant, waiting, tpch_dir, tpch_duck, connect, request):
    sql = QUERIES[name]
    settings = SETTINGS[variant]
    if variant == "merged_device_decoder" and not torch.cuda.is_available():
        if name not in SMALL_QUERIES:
            pytest.skip("a few queries on small data in Triton's interpreter; all at SF 0.1 on CUDA")
        tpch_dir = request.getfixturevalue("device_decoder_dirs")[0]
        tpch_duck = duckdb_connect(tpch_dir)
        settings = SMALL_DEVICE
    ours = connect(tpch_dir, **settings).sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


def _scan(rel):
    rel.to_arrow()
    _op, ctx = rel.last_run
    return {r.table.name: r for r in ctx.readers()}


def test_merges_loaded_tasks_into_chunks_within_the_target(waiting, tpch_dir, connect, monkeypatch):
    seen = []
    orig = reader_mod.ScanReader._coalesced

    def spy(self, target):
        for chunk in orig(self, target):
            seen.append(chunk.num_rows)
            yield chunk

    monkeypatch.setattr(reader_mod.ScanReader, "_coalesced", spy)
    con = connect(tpch_dir, chunk_rows=3000, coalesce_rows=250000)
    rel = con.sql("select l_returnflag, l_linestatus, sum(l_quantity), count(*) from lineitem group by 1, 2")
    r = _scan(rel)["lineitem"]
    assert r.stats.merged > 0
    assert len(seen) < len(r.tasks)  # fewer chunks than tasks reached the consumer
    assert max(seen) <= 250000 and sum(seen) == r.stats.rows
    assert "merged into the chunk before them" in rel.analyze()


def test_nothing_is_merged_by_default_on_a_cpu_or_when_turned_off(tpch_dir, monkeypatch):
    monkeypatch.setattr(reader_mod, "WAIT_TO_COALESCE", True)
    import sluice
    for settings in ({"device": "cpu"}, {"device": "cpu", "coalesce_rows": 3000}):
        con = sluice.connect(tpch_dir, chunk_rows=3000, **settings)
        rel = con.sql("select sum(l_quantity) from lineitem")
        assert _scan(rel)["lineitem"].stats.merged == 0


def test_the_automatic_target(monkeypatch):
    cfg = Config(chunk_rows=1000)
    assert cfg.coalesce_target("cpu") == 0
    assert cfg.coalesce_target("cuda") == 8000
    assert Config(chunk_rows=1000, coalesce_rows=5000).coalesce_target("cpu") == 5000
    assert Config(chunk_rows=1000, coalesce_rows=1000).coalesce_target("cuda") == 0  # up to a chunk: off
    assert Config(chunk_rows=1000, prefetch=False).coalesce_target("cuda") == 0  # nothing loads ahead
    assert Config(chunk_rows=1000, pipeline="blocking").coalesce_target("cuda") == 0
    with pytest.raises(ConfigError, match="coalesce_rows"):
        Config(coalesce_rows=-1)


def test_plain_strings_are_not_merged(waiting, tpch_dir, connect):
    con = connect(tpch_dir, chunk_rows=3000, coalesce_rows=250000)
    # l_comment: about one dictionary entry per row
    r = _scan(con.sql("select count(*), max(l_comment) from lineitem"))["lineitem"]
    assert r.stats.merged == 0
    r = _scan(con.sql("select l_shipmode, count(*) from lineitem group by 1"))["lineitem"]
    assert r.stats.merged > 0


def test_an_adaptive_scan_observes_every_merged_slice(waiting, tpch_dir, connect, monkeypatch):
    observed = []
    from sluice.adapt.scan_policy import ScanPolicy
    orig = ScanPolicy.observe

    def spy(self, slice_idx, mode, rows, seconds):
        observed.append((slice_idx, rows))
        return orig(self, slice_idx, mode, rows, seconds)

    monkeypatch.setattr(ScanPolicy, "observe", spy)
    con = connect(tpch_dir, chunk_rows=3000, coalesce_rows=250000, scan_mode="auto", adapt_min_slices=1)
    rel = con.sql("select sum(l_extendedprice) from lineitem where l_discount between 0.05 and 0.07")
    r = _scan(rel)["lineitem"]
    assert r.policy is not None and r.stats.merged > 0
    assert sorted(i for i, _ in observed) == list(range(len(r.tasks)))
    assert sum(rows for _, rows in observed) == r.stats.rows
    assert sum(m.slices for m in r.stats.modes.values()) == len(r.tasks)


def _spy_chunks(monkeypatch):
    seen = []
    orig = reader_mod.ScanReader._coalesced

    def spy(self, target):
        for chunk in orig(self, target):
            seen.append(chunk)
            yield chunk

    monkeypatch.setattr(reader_mod.ScanReader, "_coalesced", spy)
    return seen


def test_a_plain_string_task_never_joins_a_merge(waiting, tmp_path, connect, monkeypatch):
    # Row groups alternate a two-entry dictionary and one entry a row: neither kind may be
    # merged onto the other (the check is of the task joining, not only of those merged).
    import pyarrow as pa
    import pyarrow.parquet as pq
    n, tables = 1000, []
    for g in range(8):
        s = ["a" if i % 2 else "b" for i in range(n)] if g % 2 == 0 else [f"plain-{g}-{i}" for i in range(n)]
        # (dictionary-typed in the file's schema: read as a dictionary per row group)
        tables.append(pa.table({"k": pa.array(range(g * n, (g + 1) * n), pa.int64()),
                                "s": pa.array(s).dictionary_encode()}))
    with pq.ParquetWriter(tmp_path / "t.parquet", tables[0].schema) as w:
        for t in tables:
            w.write_table(t, row_group_size=n)
    seen = _spy_chunks(monkeypatch)
    con = connect(tmp_path, chunk_rows=n, coalesce_rows=8 * n)
    rel = con.sql("select count(*), max(s), sum(k) from t")
    out = rel.to_arrow()
    assert [out.column(i)[0].as_py() for i in range(3)] == [8 * n, "plain-7-999", sum(range(8 * n))]
    seen.clear()
    r = _scan(rel)["t"]
    assert r.stats.merged == 0
    assert sorted(len(c.columns["s"].dictionary) for c in seen) == [2] * 4 + [n] * 4


def test_a_task_alone_keeps_chunks_of_chunk_rows(tmp_path, connect):
    # Nothing to merge (plain strings): the chunks are chunk_rows long as without coalescing.
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"s": [f"p{i}" for i in range(8000)]}), tmp_path / "u.parquet", row_group_size=1000)
    sizes = {}
    for target in (0, 2000):
        con = connect(tmp_path, chunk_rows=250, coalesce_rows=target)
        rel = con.sql("select s from u")
        rel.to_arrow()
        scan = [o for o in rel.last_run[0].walk() if o.label == "Scan"][0]
        sizes[target] = rel.last_run[1].run(scan).stats.chunks
    assert sizes[0] == sizes[2000] == 32


def test_merges_never_mix_the_adaptive_scans_modes(waiting, tmp_path, connect, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = 1000
    pq.write_table(pa.table({"k": pa.array(range(128 * n), pa.int64()),
                             "v": pa.array([i % 97 for i in range(128 * n)], pa.int64())}),
                   tmp_path / "f.parquet", row_group_size=n)
    mixed = []
    orig = reader_mod.ScanReader._consumed

    def spy(self, slices, t0):
        if len({m for _, m in slices}) > 1:
            mixed.append(slices)
        return orig(self, slices, t0)

    monkeypatch.setattr(reader_mod.ScanReader, "_consumed", spy)
    con = connect(tmp_path, chunk_rows=n, coalesce_rows=8 * n, scan_mode="auto", adapt_min_slices=1)
    rel = con.sql("select sum(k) from f where v < 10")
    assert rel.to_arrow().column(0).to_pylist() == [sum(k for k in range(128 * n) if k % 97 < 10)]
    r = _scan(rel)["f"]
    assert r.policy is not None and r.stats.merged > 0 and len(r.stats.modes) > 1
    assert not mixed
