"""No round of an exchange waits on a header of its own: each round's message carries the next
round's sizes, so an exchange of many rounds has one small all-to-all of sizes (the first
round's) and the rounds still pair up on every rank -- one rank with no input at all, many
rounds, each variant and receive side -- with answers equal to DuckDB's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.launch import run_job
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("header")
    rng = np.random.default_rng(5)
    n = 40_000
    fact = pa.table({"id": np.arange(n), "k": rng.integers(0, 2000, n).astype(np.int64),
                     "v": rng.integers(-100, 100, n), "s": pa.array([f"t{x % 31}" for x in range(n)])})
    pq.write_table(fact, root / "fact.parquet", row_group_size=10_000)  # two row groups per rank
    dim = pa.table({"k": np.arange(2000, dtype=np.int64), "g": pa.array([f"g{x % 7}" for x in range(2000)])})
    pq.write_table(dim, root / "dim.parquet", row_group_size=500)
    return root


QUERIES = [
    "select d.g, count(*) c, sum(f.v) s, max(f.s) m from fact f join dim d on f.k = d.k group by 1 order by 1",
    # only the first row group passes: one rank's side of the exchange is empty in every round
    "select d.g, count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k where f.id < 3000 group by 1 order by 1",
    "select count(*) c from (select f.id from fact f join dim d on f.k = d.k limit 5)",
]


@pytest.mark.parametrize("variant, receive", [("deferred", "pipelined"), ("deferred", "materialized"),
                                              ("chunked", "pipelined"), ("blocking", "materialized")])
def test_one_size_exchange_per_exchange_and_answers_equal_duckdb(data, variant, receive):
    job = {"kind": "queries", "data": str(data), "queries": QUERIES, "analyze": True,
           "settings": {"device": "cpu", "dist_timeout_s": 60, "broadcast_bytes": 0, "chunk_rows": 1000,
                        "exchange_batch_bytes": 4096, "exchange": variant, "exchange_receive": receive,
                        "measure_reads": True}}
    st: dict = {}
    results = run_job(2, job, status=st)
    duck = duckdb_connect(data)
    for sql, ours in zip(QUERIES, results):
        compare(ours, duck.sql(sql).to_arrow_table(), [0] if "order by" in sql else [])  # ordered by g
    ranks = st["rank_stats"][0]  # the first query: what each rank did
    for r in ranks:
        rounds = [e["rounds"] for e in r["exchanges"] if e["rounds"]]
        counts = [e for e in r["events"] if e[0] == "wait" and e[5].endswith(" counts")]
        assert len(counts) == len(rounds), (len(counts), rounds)  # one per exchange, not one per round
        assert max(rounds) >= (1 if variant == "blocking" else 8)
