"""MIN / MAX bounds (``minmax_bounds``): an aggregation of only MIN and MAX lets the scan skip row
groups that cannot change its answer. The answers are DuckDB's with the setting on and off, at
a row group per task and at the default task size, spilled, filtered, with NULL keys and values,
a group that first appears in a row group the statistics alone would rule out, and a group whose
values stay NULL until late; and the skipping is checked to happen where it should."""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare

RG = 500
N = 40 * RG


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Values falling from row group to row group (the first groups hold the extremes, so later
    ones are skipped), keys from a small set with NULLs, and two traps: group 'late' only in the
    last row group, with the smallest values of all; group 'nulls' with NULL values until its
    last row group."""
    rng = np.random.default_rng(3)
    root = tmp_path_factory.mktemp("minmax_bounds")
    falling = np.arange(N)[::-1]  # row group by row group, smaller values
    k = rng.choice(["a", "b", "c", "d"], N).astype(object)
    k[rng.random(N) < 0.03] = None
    k[-7:] = "late"
    nulls = rng.choice(N - RG, 40, replace=False)
    k[nulls] = "nulls"
    k[N - RG - 3] = "nulls"  # its one value, in the last row group but one
    k2 = rng.integers(0, 3, N)
    i = falling * 10 + rng.integers(0, 10, N)
    i[-7:] = -5  # group 'late': below every other value (MIN) ...
    s = np.array([f"v{x:08d}" for x in i], dtype=object)
    s[rng.random(N) < 0.05] = None
    s[-7:] = "A"  # ... and the smallest string
    d = [dt.date(2000, 1, 1) + dt.timedelta(days=int(x) // 10) for x in i]
    dec = [decimal.Decimal(int(x)).scaleb(-2) for x in i]
    valid = np.ones(N, bool)
    valid[nulls] = False  # the 'nulls' group's values are NULL but one
    t = pa.table({
        "k": pa.array(k, pa.string()),
        "k2": pa.array(k2),
        "i": pa.array(i, mask=~valid),
        "s": pa.array(np.where(valid, s, None), pa.string()),
        "d": pa.array(d, pa.date32(), mask=~valid),
        "m": pa.array(dec, pa.decimal128(12, 2), mask=~valid),
        "f": pa.array(rng.random(N)),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=RG)
    # without group 'nulls': every group has a value from the first row group on
    pq.write_table(t.filter(pa.compute.fill_null(pa.compute.not_equal(t["k"], "nulls"), True)),
                   root / "p.parquet", row_group_size=RG)
    # rising values: nothing to skip for MAX (each row group beats the last), all for MIN
    pq.write_table(t.take(np.arange(N)[::-1]), root / "r.parquet", row_group_size=RG)
    return root


QUERIES = [
    "select max(s) as a, min(s) as b from {t}",
    "select max(i) as a from {t} where k2 = 1",
    "select k, max(s) as a from {t} group by k",
    "select k, min(s) as a, max(i) as b, min(d) as c, max(m) as e from {t} group by k",
    "select k, k2, max(d) as a from {t} group by k, k2",
    "select k, max(s) as a from {t} where f < 0.5 group by k",
    "select k2, min(i) as a from {t} where k is null group by k2",
    "select k, max(s) as a, count(*) as n from {t} group by k",     # not only MIN/MAX: no bound
    "select k, max(f) as a from {t} group by k",                    # floats: no bound
    "select max(s) as a from {t} where i < 0",                      # only the last rows
    "select max(i) as a from {t} where k2 = 7",                     # no rows
]


@pytest.mark.parametrize("table", ["t", "r", "p"])
@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("forced", [{"chunk_rows": RG}, {}, {"chunk_rows": RG, "force_spill": True}])
def test_answers_equal_duckdbs(data, table, on, forced, connect):
    con = connect(data, **{"minmax_bounds": on, **forced})
    for q in QUERIES:
        theirs = duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table()
        ours = con.sql(q.format(t=table)).to_arrow()
        compare(ours, theirs, [])


def _bound(rel):
    _, ctx = rel.last_run
    assert len(ctx.bounds) <= 1
    return next(iter(ctx.bounds.values()), None)


def test_row_groups_are_skipped_and_late_groups_kept(data, connect):
    # Loads on demand: with read-ahead, how many tasks are loaded before the aggregation
    # publishes its first bound is a race (the answers are the same either way).
    con = connect(data, chunk_rows=RG, prefetch=False)
    for q, table in (("select max(s) as a from {t}", "t"),
                     ("select k, max(i) as a, max(s) as b from {t} group by k", "p"),
                     ("select k, min(s) as a, min(d) as b from {t} group by k", "r"),
                     ("select max(m) as a from {t} where k2 = 2", "t")):
        rel = con.sql(q.format(t=table))
        ours = rel.to_arrow()
        compare(ours, duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table(), [])
        b = _bound(rel)
        assert b is not None and b.groups_skipped >= 10, (q, table, b and b.describe())
    rows = {r["k"]: r for r in con.sql("select k, max(i) as a, min(s) as b from p group by k").to_arrow().to_pylist()}
    assert rows["late"]["a"] == -5 and rows["late"]["b"] == "A"  # in the last row group only
    # group 'nulls' has no value until the last row group but one: nothing is skipped before it
    rel = con.sql("select k, max(i) as a from t group by k")
    rows = {r["k"]: r["a"] for r in rel.to_arrow().to_pylist()}
    assert rows["nulls"] is not None and _bound(rel).groups_skipped == 0


def test_no_bound_where_it_could_change_the_answer(data, connect):
    con = connect(data, chunk_rows=RG)
    for q in ("select k, max(s) as a, count(*) as n from t group by k",   # COUNT sees every row
              "select k, max(f) as a from t group by k",                  # float: NaN above all
              "select k, max(distinct s) as a from t group by k",
              "select upper(k) as u, max(s) as a from t group by u",      # key computed
              "select k, max(s || 'x') as a from t group by k"):          # argument computed
        rel = con.sql(q)
        rel.to_arrow()
        assert _bound(rel) is None, q
    rel = connect(data, chunk_rows=RG, minmax_bounds=False).sql("select max(s) as a from t")
    rel.to_arrow()
    assert _bound(rel) is None


def test_many_groups_turn_the_bound_off(data, connect, monkeypatch):
    """Keys unique to each row group are never all seen: nothing is skipped. Past MAX_GROUPS
    groups the aggregation stops publishing its bound."""
    rel = connect(data, chunk_rows=RG).sql("select i, max(s) as a from p group by i")
    compare(rel.to_arrow(), duckdb.sql(f"select i, max(s) as a from '{data / 'p'}.parquet' group by i")
            .to_arrow_table(), [])
    assert _bound(rel).groups_skipped == 0
    import sluice.exec.minmax_bounds as minmax_bounds
    monkeypatch.setattr(minmax_bounds, "MAX_GROUPS", 3)
    q = "select k, max(i) as a from {t} group by k"
    rel = connect(data, chunk_rows=RG).sql(q.format(t="p"))
    compare(rel.to_arrow(), duckdb.sql(q.format(t=f"'{data / 'p'}.parquet'")).to_arrow_table(), [])
    b = _bound(rel)
    assert b.off and b.groups_skipped == 0 and "off" in b.describe()


def test_keys_compared_as_stored(tmp_path, connect):
    """Dates and timestamps beyond Python's years 1-9999 and NaN as group keys: compared as
    stored, never as Python dates (which raised), and NaN never taken for a seen group."""
    n = 200
    t = pa.table({"d": pa.array([-800000 if j % 2 else 10 + j % 3 for j in range(n)], pa.date32()),
                  "ts": pa.array([(2 ** 62 if j % 3 else 0) + j % 2 for j in range(n)], pa.timestamp("us")),
                  "f": pa.array([float("nan") if j % 4 == 0 else float(j % 3) for j in range(n)]),
                  "i": pa.array(range(n)[::-1], pa.int64())})
    pq.write_table(t, tmp_path / "x.parquet", row_group_size=10)
    con = connect(tmp_path, chunk_rows=10, prefetch=False)
    for q in ("select d, max(i) as m from x group by d", "select ts, max(i) as m from x group by ts",
              "select f, max(i) as m from x group by f", "select d, ts, min(i) as m from x group by d, ts"):
        theirs = duckdb.sql(q.replace(" x ", f" '{tmp_path / 'x.parquet'}' ")).to_arrow_table()
        rel = con.sql(q)
        compare(rel.to_arrow(), theirs, [])
        assert _bound(rel) is not None, q
    rel = con.sql("select d, max(i) as m from x group by d")
    rel.to_arrow()
    assert _bound(rel).groups_skipped >= 10


def test_recursive_steps_rerun_their_bounded_aggregation(data, connect):
    """A recursive CTE's step reruns its aggregation over the same scan, each run with a bound
    of its own (a stale one could not lose a group there -- same rows, and a group's best is in
    a row group its bound cannot rule out -- but its counters and state would carry over)."""
    q = ("with recursive r(n, tag, m) as (select 0, 'late', 0 union all "
         "select r.n + 1, r.tag, x.m from r join (select k, max(i) as m from {t} group by k) x "
         "on coalesce(x.k, '') = r.tag where r.n < 4) select * from r")
    con = connect(data, chunk_rows=RG, prefetch=False)
    theirs = duckdb.sql(q.format(t=f"'{data / 'p'}.parquet'")).to_arrow_table()
    rel = con.sql(q.format(t="p"))
    compare(rel.to_arrow(), theirs, [])
    assert 0 < _bound(rel).groups_skipped < 40  # the last step's run only: 38 of 40 per run
