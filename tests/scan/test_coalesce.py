"""Read tasks merged into larger chunks (``coalesce_rows``) give DuckDB's answers, merge only
what is loaded, stay within their bounds and keep the adaptive scan's accounting whole.

Merging happens when the consumer falls behind the I/O threads (on a GPU); here
``reader.WAIT_TO_COALESCE`` makes each merge wait for the tasks in flight, so every merge path
runs on a CPU whatever the timing."""

import pytest

import sluice.io.parquet.reader as reader_mod
from sluice.config import Config, ConfigError
from sluice.testing.oracle import compare
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


@pytest.mark.parametrize("variant", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_merged_tasks_match_duckdb(name, variant, waiting, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    ours = connect(tpch_dir, **SETTINGS[variant]).sql(sql).to_arrow()
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
