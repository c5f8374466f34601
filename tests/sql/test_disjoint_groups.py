"""Aggregations over input ordered by their one integer key (``disjoint_groups``): partial pages
whose key ranges do not overlap are the answer without the final merge. Where a group spans two
chunks (their ranges touch), the input is not ordered, the key has NULLs or there are several
keys, the pages are merged. The answers are DuckDB's with the setting on and off."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import sluice.exec.hash_aggregate as hash_aggregate
from sluice.chunk import Chunk, Column
from sluice.types import INT64
from sluice.testing.oracle import compare

N_KEYS = 6_000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(3)
    root = tmp_path_factory.mktemp("disjoint")
    # Sorted keys with 1-7 rows each: row groups of 5,000 rows cut some groups in two.
    k = np.repeat(np.arange(N_KEYS, dtype=np.int64) * 3, rng.integers(1, 8, N_KEYS))
    n = len(k)
    cols = {"v": pa.array(rng.integers(-50, 50, n)), "s": pa.array(rng.choice(["a", "bb", "c", "dd"], n)),
            "d": pa.array((rng.integers(0, 10_000, n) / 100).astype(str)).cast(pa.decimal128(10, 2))}
    pq.write_table(pa.table({"k": pa.array(k), **cols}), root / "ordered.parquet", row_group_size=5_000)
    # Exactly 4 rows a key and row groups of 4,000 rows: every group within one row group.
    ka = np.repeat(np.arange(N_KEYS, dtype=np.int32), 4)
    pq.write_table(pa.table({"k": pa.array(ka), "v": pa.array(rng.integers(-50, 50, len(ka))),
                             "s": pa.array(rng.choice(["x", "yy", "z"], len(ka))),
                             "d": pa.array(np.full(len(ka), "1.25")).cast(pa.decimal128(10, 2))}),
                   root / "aligned.parquet", row_group_size=4_000)
    perm = rng.permutation(n)
    kn = pa.array(k[perm], mask=rng.random(n) < 0.01)
    pq.write_table(pa.table({"k": kn, **{c: a.take(pa.array(perm)) for c, a in cols.items()}}),
                   root / "shuffled.parquet", row_group_size=5_000)
    return root


QUERIES = [
    "select k, sum(v) as sv, count(*) as c, min(s) as mn, max(s) as mx, avg(v) as a, sum(d) as sd "
    "from {t} group by k order by k",
    "select k, count(distinct v) as dv, sum(v) as sv from {t} group by k order by k",
    "select count(*) as c, sum(x) as x from (select k, sum(v) as x from {t} group by k having sum(v) > 10) q",
    "select k, s, count(*) as c from {t} group by k, s order by k, s",
]


@pytest.mark.parametrize("table", ["ordered", "aligned", "shuffled"])
@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("chunk_rows", [4_000, 1 << 20])
def test_answers_equal_duckdbs(data, table, on, chunk_rows, connect):
    con = connect(data, disjoint_groups=on, chunk_rows=chunk_rows)
    for q in QUERIES:
        sql = q.format(t=table)
        theirs = duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table()
        compare(con.sql(sql).to_arrow(), theirs, [0] if "order by" in sql else [])


def test_the_merge_is_skipped_only_where_ranges_do_not_overlap(data, connect, monkeypatch):
    seen = []
    real = hash_aggregate._disjoint_ranges

    def spy(pages, keys):
        got = real(pages, keys)
        seen.append((len(pages), got))
        return got

    monkeypatch.setattr(hash_aggregate, "_disjoint_ranges", spy)
    sql = "select k, sum(v) as sv from {t} group by k"
    # Chunks of whole row groups, each holding whole groups: several pages, no merge.
    connect(data, chunk_rows=4_000).sql(sql.format(t="aligned")).to_arrow()
    assert seen and all(got for pages, got in seen if pages > 1) and any(pages > 1 for pages, _ in seen)
    # Groups cut by row groups (ranges touch) and unordered keys: merged (where pages are left
    # at the end: compaction may have merged them into one already).
    for t in ("ordered", "shuffled"):
        seen.clear()
        connect(data, chunk_rows=4_000).sql(sql.format(t=t)).to_arrow()
        assert not any(got for pages, got in seen if pages > 1)
    # Turned off: never asked.
    seen.clear()
    connect(data, chunk_rows=4_000, disjoint_groups=False).sql(sql.format(t="aligned")).to_arrow()
    assert not seen


def _page(keys, valid=None) -> Chunk:
    data = torch.tensor(keys, dtype=torch.int64)
    return Chunk({"k": Column(data, INT64, None if valid is None else torch.tensor(valid))}, len(keys))


def test_ranges_that_touch_or_hold_nulls_are_not_disjoint():
    check = hash_aggregate._disjoint_ranges
    assert check([_page([5, 1, 3]), _page([9, 6]), _page([]), _page([12, 10])], ["k"])
    assert not check([_page([1, 5]), _page([5, 9])], ["k"])        # group 5 in both pages
    assert not check([_page([1, 9]), _page([4, 6])], ["k"])        # one range inside the other
    assert not check([_page([1, 2]), _page([4, 6], [True, False])], ["k"])  # a NULL key
    assert not check([_page([1, 2]), _page([4, 6])], ["k", "k"])   # several keys
