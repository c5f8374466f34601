"""Data that does not spread evenly: one key holding half the rows (its hash partition lands on
one rank, which must spill rather than fail under a small budget), ranks that scan zero row
groups, and empty tables -- answers equal DuckDB's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ranks import check_on_ranks


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    root = tmp_path_factory.mktemp("skewed")
    rng = np.random.default_rng(7)
    n = 200_000
    k = rng.integers(1, 5000, n)
    k[: n // 2] = 0  # one key, half the rows
    rng.shuffle(k)
    fact = pa.table({"id": np.arange(n), "k": k.astype(np.int64), "v": rng.integers(-1000, 1000, n),
                     "s": pa.array([f"s{x % 97}" for x in range(n)])})
    pq.write_table(fact, root / "fact.parquet", row_group_size=10_000)
    dim = pa.table({"k": np.arange(0, 5000, dtype=np.int64),
                    "name": pa.array([f"{'ab'[x % 2]}{x % 13}" for x in range(5000)])})
    pq.write_table(dim, root / "dim.parquet", row_group_size=2_500)  # two row groups
    pq.write_table(pa.table({"k": pa.array([], pa.int64()), "w": pa.array([], pa.string())}),
                   root / "empty.parquet")
    pq.write_table(pa.table({"k": pa.array([0, 1, None], pa.int64())}), root / "tiny.parquet")  # one row group
    return root


QUERIES = {
    "group": "select k, count(*) c, sum(v) s, min(s) m from fact group by k order by k",
    "join_group": "select d.name, count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k group by 1 order by 1",
    "window": "select k, count(*) c, max(rn) r, sum(v * rn) x from (select k, v, row_number() over "
              "(partition by k order by id) rn from fact) group by k order by k",
    "distinct": "select count(distinct k) dk, count(distinct v) dv, count(distinct s) ds from fact",
    "semi": "select count(*) c from fact where k in (select k from dim where name like 'a%')",
    "anti": "select count(*) c from fact where k not in (select k from tiny where k is not null)",
    "left_empty": "select t.k, e.w from tiny t left join empty e on t.k = e.k order by t.k",
    "empty_group": "select k, count(*) from empty group by k",
    "empty_global": "select count(*), sum(k), max(w) from empty",
    "tiny_join": "select t.k, count(*) c from fact f join tiny t on f.k = t.k group by t.k order by t.k",
    "few_build_keys": "select d.name, count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k "
                      "where d.k in (0, 7, 4001) group by 1 order by 1",
    "top": "select id, k, v from fact where k = 0 order by v desc, id limit 7",
    "union": "select k from tiny union all select k from empty union all select k from dim where k < 3 order by k",
}


@pytest.mark.parametrize("ranks, settings", [
    (2, {"broadcast_bytes": 0, "host_memory_limit": 24 << 20, "chunk_rows": 8192}),
    (4, {}),
    (3, {"exchange": "blocking", "broadcast_bytes": 0}),
], ids=["2 ranks partitioned 24 MiB", "4 ranks", "3 ranks blocking partitioned"])
def test_skew_and_empty_shares(ranks, settings, skewed):
    check_on_ranks(skewed, QUERIES, ranks, settings)
