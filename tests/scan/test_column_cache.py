"""The decoded-column cache (``column_cache_bytes``, io/column_cache.py, io/parquet/cached_decode.py)
on the CPU, where it is off by default and set here: a connection's second run of a query is
served from it with DuckDB's answers; its bytes are charged to the budget and given back, least
recently used first, when an operator's reservation needs them; a changed file is never served
stale; ``--analyze`` reports it. (On a GPU the same code keeps device tensors: docs/gpu.md.)"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import sluice
from sluice.chunk import Column
from sluice.config import Config
from sluice.io.column_cache import ColumnCache, Entry
from sluice.io.memory import MemoryPool
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns, tpch_queries
from sluice.types import INT64

MiB = 1 << 20


def _entry(nbytes: int, path: str = "f") -> Entry:
    col = Column(torch.zeros(nbytes // 8, dtype=torch.int64), INT64)
    return Entry(col, nbytes, path=path)


def _pool(limit: int) -> MemoryPool:
    return MemoryPool(limit, kind="host", cap=None)


# ---------------------------------------------------------------- the cache and the pool


def test_lru_eviction_order_within_the_limit():
    pool = _pool(100 * MiB)
    cache = ColumnCache()
    hold = cache.attach(pool, 3 * MiB)
    for k in "abc":
        assert cache.put(k, _entry(MiB))
    assert cache.get("a") is not None  # a is now the most recently used
    assert cache.put("d", _entry(MiB))  # the limit holds 3: b (least recently used) goes
    assert [k for k in "abcd" if cache.get(k) is not None] == ["a", "c", "d"]
    assert cache.bytes == 3 * MiB == hold.size == pool.used
    assert not cache.put("big", _entry(4 * MiB))  # larger than the limit: not kept, nothing evicted
    assert cache.bytes == 3 * MiB and cache.counters.refused == 1
    cache.detach(hold)
    assert pool.used == 0 and cache.bytes == 3 * MiB  # kept, charged to nothing between runs


def test_an_operator_reservation_evicts_the_cache_least_recently_used_first():
    pool = _pool(10 * MiB)
    cache = ColumnCache()
    cache.attach(pool, 10 * MiB)
    for k in "abcdefgh":
        assert cache.put(k, _entry(MiB))
    cache.get("a")
    assert pool.used == 8 * MiB
    assert pool.available == 10 * MiB  # the cache's bytes count as free for others
    res = pool.reservation("HashJoin build")
    assert res.try_grow(5 * MiB)  # 2 MiB were free: 3 entries go, b, c and d (a was used)
    assert [k for k in "abcdefgh" if cache.get(k) is None] == ["b", "c", "d"]
    assert pool.used == 10 * MiB == cache.bytes + res.size and pool.peak <= pool.limit
    res.grow(5 * MiB)  # grow() too: the cache empties before the budget error
    assert cache.bytes == 0 and pool.used == 10 * MiB
    res.free()
    assert not cache.put("x", _entry(11 * MiB))  # past what the budget can hold: refused


def test_cache_never_takes_room_an_operator_holds():
    pool = _pool(4 * MiB)
    cache = ColumnCache()
    cache.attach(pool, 4 * MiB)
    res = pool.reservation("Sort")
    assert res.try_grow(3 * MiB)
    assert cache.put("a", _entry(MiB))
    assert cache.put("b", _entry(MiB))  # evicts a (its own), never the operator's bytes
    assert cache.get("a") is None and cache.get("b") is not None
    assert pool.used == 4 * MiB and res.size == 3 * MiB
    res.force(MiB)  # bytes that exist already: the cache makes room
    assert cache.bytes == 0 and pool.used == 4 * MiB


def test_attach_under_a_smaller_budget_evicts_to_fit():
    cache = ColumnCache()
    hold = cache.attach(_pool(10 * MiB), 10 * MiB)
    for k in "abcd":
        cache.put(k, _entry(MiB))
    cache.detach(hold)
    small = _pool(2 * MiB)
    hold = cache.attach(small, 10 * MiB)
    assert cache.bytes == 2 * MiB == small.used and cache.get("d") is not None
    cache.detach(hold)
    cache.attach(_pool(10 * MiB), MiB)  # a smaller limit
    assert cache.bytes == MiB


def test_a_new_version_of_a_file_drops_the_old_entries():
    cache = ColumnCache()
    cache.attach(_pool(10 * MiB), 10 * MiB)
    cache.seen("f", (1, 1, 1))
    cache.put("k1", _entry(MiB, "f"))
    cache.put("k2", _entry(MiB, "g"))
    cache.seen("f", (1, 1, 1))
    assert len(cache) == 2
    cache.seen("f", (1, 2, 1))  # modified
    assert cache.get("k1") is None and cache.get("k2") is not None and cache.bytes == MiB


def test_setting_limits():
    assert Config(device="cpu").column_cache_limit("cpu", 8 << 30) == 0  # default: off on a CPU
    assert Config().column_cache_limit("cuda", 8 << 30) == 4 << 30  # half the device budget
    assert Config(column_cache_bytes=0).column_cache_limit("cuda", 8 << 30) == 0
    assert Config(column_cache_bytes=1 << 30).column_cache_limit("cpu", 8 << 30) == 1 << 30
    assert Config(column_cache_bytes=16 << 30).column_cache_limit("cuda", 8 << 30) == 8 << 30
    assert Config(column_cache_bytes=1 << 30, pipeline="blocking").column_cache_limit("cuda", 8 << 30) == 0
    assert Config.from_settings({"column_cache_bytes": "64MiB"}).column_cache_bytes == 64 * MiB
    with pytest.raises(sluice.errors.ConfigError):
        Config(column_cache_bytes=-2)


# ---------------------------------------------------------------- queries


def _scans(rel):
    _, ctx = rel.last_run
    return ctx.readers()


def _check(con, duck, sql):
    rel = con.sql(sql)
    ours = rel.to_arrow()
    theirs = duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))
    return rel


QUERIES = ["q01", "q03", "q05", "q06", "q09", "q13", "q18", "q22"]


@pytest.mark.parametrize("settings", [{}, {"decoder": "device"}, {"scan_mode": "staging", "chunk_rows": 250_000},
                                      {"scan_mode": "pushdown", "chunk_rows": 150_000}],
                         ids=["arrow", "device", "staging", "pushdown"])
def test_second_runs_are_served_from_the_cache(settings, tpch_dir, tpch_duck, device_decoder_dirs, connect):
    names = QUERIES
    if settings.get("decoder") == "device":  # small data without a GPU (Triton's interpreter), a few queries
        tpch_dir = device_decoder_dirs[0]
        tpch_duck = duckdb_connect(tpch_dir)
        if "small-pages" in tpch_dir.parent.name:
            names = ["q03", "q06", "q12"]  # (q01 in the interpreter: 25 s)
    con = connect(tpch_dir, column_cache_bytes="1GiB", **settings)
    queries = tpch_queries()
    for name in names:
        _check(con, tpch_duck, queries[name])
    assert con.column_cache.counters.misses > 0 and len(con.column_cache)
    for name in names:
        rel = _check(con, tpch_duck, queries[name])
        scans = _scans(rel)
        # every column the cache keeps is a hit now (strings read plain bypass it); staging's
        # other columns, decoded for the kept rows only, were not kept
        assert sum(s.stats.cache_hits for s in scans) > 0, name
        if settings.get("scan_mode") != "staging":
            assert sum(s.stats.cache_misses for s in scans) == 0, name


def test_staging_keeps_its_page_skipping_and_uses_whole_cached_columns(device_decoder_dirs, connect):
    """A staging slice decodes a column missing from the cache for its kept rows only (pages
    without one skipped, as without the cache: the device decoder counts them) and does not
    keep it; a column a direct scan cached before is served to it whole, then filtered."""
    tpch_dir = device_decoder_dirs[0]
    tpch_duck = duckdb_connect(tpch_dir)
    top = tpch_duck.execute("select max(l_orderkey) from lineitem").fetchall()[0][0]
    lo = top // 3
    sql = ("select count(*), sum(l_quantity), min(l_discount), count(l_receiptdate) from lineitem "
           f"where l_orderkey between {lo} and {lo + top // 30} or l_orderkey % {max(2, top // 20)} = 7")
    con = connect(tpch_dir, column_cache_bytes="1GiB", decoder="device", scan_mode="staging", chunk_rows=2_000_000)
    (s,) = _scans(_check(con, tpch_duck, sql))
    assert 0 < s.stats.pages_skipped < s.stats.pages_selected
    direct = connect(tpch_dir, column_cache_bytes="1GiB", decoder="device", scan_mode="direct",
                     chunk_rows=2_000_000)
    direct.column_cache = con.column_cache  # (one cache: as a connection whose mode changed)
    _check(direct, tpch_duck, sql)
    (s,) = _scans(_check(con, tpch_duck, sql))
    assert s.stats.cache_misses == 0 and s.stats.pages_selected == 0  # all from the cache, no page decoded


def test_other_task_shapes_still_hit_per_row_group(tpch_dir, tpch_duck, connect):
    """Entries are per row group: a run whose tasks group the row groups differently (another
    predicate prunes them, other chunk sizes) is served from them too."""
    con = connect(tpch_dir, column_cache_bytes="1GiB", chunk_rows=300_000)
    sql = "select sum(l_extendedprice), count(*), min(l_shipdate) from lineitem where l_orderkey > {k}"
    _check(con, tpch_duck, sql.format(k=0))
    rel = _check(con, tpch_duck, sql.format(k=250_000))  # prunes row groups: tasks start elsewhere
    (s,) = _scans(rel)
    assert s.stats.cache_hits > 0 and s.stats.cache_misses == 0


def test_disabled_and_the_default(tpch_dir, connect, device):
    """Off with 0 and with pipeline=blocking; by default off on a CPU, on on a GPU."""
    for settings in ({}, {"column_cache_bytes": 0}, {"column_cache_bytes": "1GiB", "pipeline": "blocking"}):
        con = connect(tpch_dir, **settings)
        for _ in range(2):
            rel = con.sql("select sum(l_quantity) from lineitem")
            rel.to_arrow()
        (s,) = _scans(rel)
        if not settings and con.device.type == "cuda":
            assert s.stats.cache_hits > 0 and s.stats.cache_misses == 0
            continue
        assert s.stats.cache_hits == s.stats.cache_misses == 0 and len(con.column_cache) == 0, settings


def test_analyze_reports_hits_misses_and_bytes(tpch_dir, connect):
    con = connect(tpch_dir, column_cache_bytes="1GiB")
    sql = "select l_returnflag, sum(l_quantity) from lineitem group by 1"
    first = con.sql(sql).analyze()
    assert "column cache: 0 hits, 12 misses" in first
    second = con.sql(sql).analyze()
    assert "column cache: 12 hits, 0 misses" in second
    assert "over the connection 12 hits, 12 misses" in second


def test_a_small_budget_evicts_the_cache_and_answers_stay(tpch_dir, tpch_duck, connect):
    """16 MiB of budget (the host's is the cache's pool on a CPU, the device's on a GPU), a cache
    allowed 1 GiB: operators' reservations take the room back, the cache never holds more than
    the budget."""
    con = connect(tpch_dir, column_cache_bytes="1GiB", host_memory_limit="16MiB", device_memory_limit="16MiB",
                  chunk_rows=50_000)
    queries = tpch_queries()
    for name in ["q06", "q03", "q18", "q06", "q01"]:
        rel = _check(con, tpch_duck, queries[name])
        _, ctx = rel.last_run
        assert con.column_cache.bytes <= ctx.scan_pool.limit
        assert con.column_cache.limit == 16 * MiB
    assert con.column_cache.counters.evictions > 0


@pytest.fixture
def changing(tmp_path):
    def write(values, where="t.parquet"):
        pq.write_table(pa.table({"k": pa.array(values, pa.int64()), "g": pa.array([v % 3 for v in values], pa.int64())}),
                       tmp_path / where, row_group_size=1000, use_dictionary=False, compression="none")
    return tmp_path, write


def test_a_rewritten_file_is_never_served_stale(changing, connect):
    root, write = changing
    con = connect(root, column_cache_bytes="64MiB")
    sql = "select g, sum(k), count(*) from t group by g"
    write(list(range(5000)))
    for _ in range(2):
        compare(con.sql(sql).to_arrow(), duckdb_connect(root).sql(sql).to_arrow_table(), [])
    st = os.stat(root / "t.parquet")
    # Same size, other values, the old modification time put back, written elsewhere and renamed
    # over (another inode); then rewritten in place (the same inode) with the old modification
    # time again: only its status-change time differs; then another size.
    write(list(range(7, 5007)), where="t.tmp")
    os.replace(root / "t.tmp", root / "t.parquet")
    os.utime(root / "t.parquet", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(root / "t.parquet").st_size == st.st_size
    _fresh(con, root, sql)
    ino = os.stat(root / "t.parquet").st_ino
    write(list(range(11, 5011)))
    os.utime(root / "t.parquet", ns=(st.st_atime_ns, st.st_mtime_ns))
    now = os.stat(root / "t.parquet")
    assert (now.st_ino, now.st_size, now.st_mtime_ns) == (ino, st.st_size, st.st_mtime_ns)
    _fresh(con, root, sql)
    write(list(range(100)))
    _fresh(con, root, sql)


def _fresh(con, root, sql):
    rel = con.sql(sql)
    compare(rel.to_arrow(), duckdb_connect(root).sql(sql).to_arrow_table(), [])
    (s,) = _scans(rel)
    assert s.stats.cache_hits == 0 and s.stats.cache_misses > 0
