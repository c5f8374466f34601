"""Aggregations over input ordered by their one integer key (``disjoint_groups``): partial pages
whose key ranges do not overlap are the answer without the final merge; where ranges share an
end (a group a chunk boundary cut in two), only that group's rows are merged. Where the input is
not ordered, the key has NULLs or there are several keys, the pages are merged. The answers are DuckDB's with the setting on and off."""

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
    # The same keys with NULLs scattered among them (NULL is a group: never skipped).
    kn = pa.array(k, mask=rng.random(n) < 0.01)
    pq.write_table(pa.table({"k": kn, **cols}), root / "nulls.parquet", row_group_size=5_000)
    # Few keys, shuffled: groups repeat in every chunk (no pass-through) and ranges overlap.
    ks = rng.permutation(np.repeat(np.arange(300, dtype=np.int64), 70))  # (n is about 24,000)
    pq.write_table(pa.table({"k": pa.array(ks), **{c: a.slice(0, len(ks)) for c, a in cols.items()}}),
                   root / "shuffled.parquet", row_group_size=5_000)
    return root


QUERIES = [
    "select k, sum(v) as sv, count(*) as c, min(s) as mn, max(s) as mx, avg(v) as a, sum(d) as sd "
    "from {t} group by k order by k",
    "select k, count(distinct v) as dv, sum(v) as sv from {t} group by k order by k",
    "select count(*) as c, sum(x) as x from (select k, sum(v) as x from {t} group by k having sum(v) > 10) q",
    "select k, s, count(*) as c from {t} group by k, s order by k, s",
]


@pytest.mark.parametrize("table", ["ordered", "aligned", "nulls", "shuffled"])
@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("forced", [{}, {"force_spill": True}, {"chunk_rows": 1 << 20}])
def test_answers_equal_duckdbs(data, table, on, forced, connect):
    con = connect(data, **{"disjoint_groups": on, "chunk_rows": 4_000, **forced})
    for q in QUERIES:
        sql = q.format(t=table)
        theirs = duckdb.sql(q.format(t=f"'{data / table}.parquet'")).to_arrow_table()
        compare(con.sql(sql).to_arrow(), theirs, [0] if "order by" in sql else [])


def test_only_groups_shared_at_range_ends_are_merged(data, connect, monkeypatch):
    seen = []
    real = hash_aggregate._range_split

    def spy(pages, keys):
        got = real(pages, keys)
        seen.append((len(pages), "merge all" if got is None else "ends" if got[1] else "none"))
        return got

    monkeypatch.setattr(hash_aggregate, "_range_split", spy)
    sql = "select k, sum(v) as sv from {t} group by k"
    # Chunks of whole row groups, each holding whole groups: several pages, nothing merged.
    connect(data, chunk_rows=4_000).sql(sql.format(t="aligned")).to_arrow()
    assert any(n > 1 for n, _ in seen) and {how for n, how in seen if n > 1} == {"none"}
    # Groups cut by row groups: only the cut groups merged (pages left at the end; compaction
    # may have merged some already).
    seen.clear()
    connect(data, chunk_rows=4_000).sql(sql.format(t="ordered")).to_arrow()
    assert {how for n, how in seen if n > 1} <= {"ends"}
    # Unordered keys, and NULL keys: everything merged.
    for t in ("shuffled", "nulls"):
        seen.clear()
        connect(data, chunk_rows=4_000).sql(sql.format(t=t)).to_arrow()
        assert any(n > 1 for n, _ in seen) and {how for n, how in seen if n > 1} == {"merge all"}
    # Spilled: a partition's pieces of consecutive ranges are never merged whole (the spill
    # writer may have combined them into one page already).
    seen.clear()
    connect(data, chunk_rows=4_000, force_spill=True).sql(sql.format(t="aligned")).to_arrow()
    assert {how for n, how in seen if n > 1} <= {"none"}
    # Turned off: never asked.
    seen.clear()
    connect(data, chunk_rows=4_000, disjoint_groups=False).sql(sql.format(t="aligned")).to_arrow()
    assert not seen


def _page(keys, valid=None) -> Chunk:
    data = torch.tensor(keys, dtype=torch.int64)
    cols = {"k": Column(data, INT64, None if valid is None else torch.tensor(valid)),
            "v": Column(torch.arange(len(keys), dtype=torch.int64), INT64)}
    return Chunk(cols, len(keys))


def _rows(pages):
    return sorted(r for p in pages for r in zip(p.columns["k"].data.tolist(), p.columns["v"].data.tolist()))


def test_range_split():
    split = hash_aggregate._range_split
    pages = [_page([5, 1, 3]), _page([9, 6]), _page([]), _page([12, 10])]
    alone, shared = split(pages, ["k"])
    assert shared == [] and _rows(alone) == _rows(pages)
    # 5 ends one range and starts the next, and is a page of its own between them.
    pages = [_page([1, 5, 3]), _page([5, 9, 7]), _page([5]), _page([9, 11])]
    alone, shared = split(pages, ["k"])
    assert sorted(k for p in shared for k in p.columns["k"].data.tolist()) == [5, 5, 5, 9, 9]
    assert sorted(k for p in alone for k in p.columns["k"].data.tolist()) == [1, 3, 7, 11]
    assert _rows(alone + shared) == _rows(pages)
    assert split([_page([1, 9]), _page([4, 6])], ["k"]) is None             # one range inside the other
    assert split([_page([1, 5]), _page([4, 9])], ["k"]) is None             # past a shared end
    assert split([_page([1, 2]), _page([4, 6], [True, False])], ["k"]) is None  # a NULL key
    assert split([_page([1, 2]), _page([4, 6])], ["k", "k"]) is None        # several keys
