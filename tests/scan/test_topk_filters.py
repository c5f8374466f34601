"""Top-k runtime filters (``topk_filters``): once ORDER BY ... LIMIT k has k rows, the k-th
leading key bounds the scan it comes from. Answers equal DuckDB's with the filter on and off,
in each scan mode, ascending and descending, with OFFSET, NULL keys, a WHERE and a join on the
way; where NULLs sort first no filter is made; row groups beyond the bound are not read."""

import datetime as dt
import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.exec.operators import ScanOp
from sluice.testing.oracle import compare, duckdb_connect

N = 40_000


@pytest.fixture(scope="module")
def topk_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("topk")
    rng = random.Random(7)
    keys = list(range(N))
    rng.shuffle(keys)  # unique keys: the top k is one set of rows, whatever the ties rule
    t = pa.table({
        "k": pa.array([None if i % 101 == 0 else keys[i] for i in range(N)], pa.int64()),
        "d": pa.array([dt.date(1990, 1, 1) + dt.timedelta(days=keys[i]) for i in range(N)]),
        "p": pa.array([decimal.Decimal(keys[i]).scaleb(-2) for i in range(N)], pa.decimal128(12, 2)),
        "g": pa.array([i % 7 for i in range(N)], pa.int64()),
        # timestamps in seconds (widened to microseconds when read) and with a time zone
        "ts": pa.array([None if i % 53 == 0 else 1_000_000_000 + 37 * keys[i] for i in range(N)], pa.timestamp("s")),
        "tz": pa.array([1_600_000_000_000_000 + 1001 * keys[i] for i in range(N)], pa.timestamp("us", tz="UTC")),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=1000)
    pq.write_table(pa.table({"g": pa.array(range(5), pa.int64()), "name": ["a", "b", "c", "d", "e"]}),
                   root / "dim.parquet")
    return root


QUERIES = {
    "desc": "select k, g from t order by k desc limit 5",
    "asc_nulls_last": "select k from t order by k limit 7",
    "asc_nulls_first": "select k from t order by k nulls first limit 7",
    "desc_nulls_first": "select k from t order by k desc nulls first limit 3",
    "offset": "select k from t order by k desc limit 4 offset 10",
    "date": "select d, g from t order by d desc limit 6",
    "decimal": "select p from t order by p limit 6",
    "where": "select k from t where g = 3 order by k desc limit 5",
    "second_key": "select g, k from t order by g desc, k limit 5",
    "through_join": "select k, name from t join dim on t.g = dim.g order by k desc limit 5",
    "more_than_rows": "select k from t where g = 1 and k < 300 order by k desc limit 100000",
    "expression_key": "select k + 1 as x from t order by x desc limit 5",
    "timestamp": "select ts, g from t order by ts limit 6",
    "timestamp_desc": "select ts from t where g < 5 order by ts desc limit 4",
    "timestamptz": "select tz, k from t order by tz desc limit 5",
    # a join on timestamp keys: its runtime filter on t's scan
    "join_on_timestamp": "select count(*), sum(a.k) from t a join (select ts from t where k % 1000 = 7) b "
                         "on a.ts = b.ts",
}


@pytest.mark.parametrize("settings", [{}, {"topk_filters": False}, {"scan_mode": "pushdown"},
                                      {"scan_mode": "staging"}, {"chunk_rows": 700}, {"pipeline": "blocking"}],
                         ids=["default", "off", "pushdown", "staging", "small_chunks", "blocking"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_topk_answers(name, settings, topk_dir, connect):
    sql = QUERIES[name]
    compare(connect(topk_dir, **settings).sql(sql).to_arrow(), duckdb_connect(topk_dir).sql(sql).to_arrow_table(), [0])


def _filter(rel):
    rel.to_arrow()
    op, ctx = rel.last_run
    return [ctx.runtime_filter(spec) for o in op.walk() if isinstance(o, ScanOp) for spec in o.runtime_filters
            if spec.join.startswith("top ")]


@pytest.mark.parametrize("name", ["desc", "decimal", "through_join"])
def test_row_groups_beyond_the_bound_are_not_read(name, topk_dir, connect):
    # On demand (no read-ahead), every row group after the first is checked against the bound.
    (rf,) = _filter(connect(topk_dir, prefetch=False).sql(QUERIES[name]))
    assert rf.ready and rf.groups_skipped >= 15, rf.describe()  # of 40 (the first read task holds several)


def test_timestamps_get_filters(topk_dir, connect):
    # Timestamps filter as their microseconds (the file's seconds widened): a top-k's bound and
    # a join's keys both reach the scan.
    for name in ("timestamp", "timestamptz"):
        (rf,) = _filter(connect(topk_dir, prefetch=False).sql(QUERIES[name]))
        assert rf.ready and rf.rows_removed > 0, rf.describe()
    rel = connect(topk_dir, scan_mode="pushdown").sql(QUERIES["join_on_timestamp"])
    rel.to_arrow()
    op, ctx = rel.last_run
    joins = [ctx.runtime_filter(spec) for o in op.walk() if isinstance(o, ScanOp) for spec in o.runtime_filters
             if spec.join.startswith("join ") and spec.column == "ts"]
    assert joins and any(rf.rows_removed > 0.9 * rf.rows_in > 0 for rf in joins)


def test_no_filter_where_nulls_sort_first_or_switched_off(topk_dir, connect):
    assert not _filter(connect(topk_dir).sql(QUERIES["asc_nulls_first"]))
    assert not _filter(connect(topk_dir, topk_filters=False).sql(QUERIES["desc"]))
    assert not _filter(connect(topk_dir).sql(QUERIES["expression_key"]))
