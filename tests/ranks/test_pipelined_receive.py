"""The pipelined receive side (``exchange_receive=pipelined``): one exchange per plan hands each
round's rows to its consumer as they land. Every rank must still take part in every round,
whatever its consumer does -- a LIMIT that stops early, a join whose build side is empty on this
rank (its probe side is never pulled), a consumer that streams on into another exchange (the
rounds left are drained and kept), an error on one rank -- and answers must equal DuckDB's and
the materialised path's, in tiny chunks and batches and spilled."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ranks import check_on_ranks

import sluice
from sluice.errors import SluiceError
from sluice.exec.exchange import exchanges_in_order
from sluice.launch import run_job
from sluice.physical.lower import lower_plan
from sluice.testing.queries import tpch_queries


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipelined")
    rng = np.random.default_rng(11)
    n = 60_000
    fact = pa.table({"id": np.arange(n), "k": rng.integers(0, 3000, n).astype(np.int64),
                     "v": rng.integers(-1000, 1000, n), "s": pa.array([f"s{x % 89}" for x in range(n)])})
    pq.write_table(fact, root / "fact.parquet", row_group_size=5_000)
    dim = pa.table({"k": np.arange(3000, dtype=np.int64), "name": pa.array([f"n{x % 17}" for x in range(3000)])})
    pq.write_table(dim, root / "dim.parquet", row_group_size=1_000)
    return root


QUERIES = {
    # the probe side streams into the partial aggregate
    "join_group": "select d.name, count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k group by 1 order by 1",
    # a LIMIT stops pulling the probe side early on the rank that answers
    "limit": "select count(*) c from (select f.id from fact f join dim d on f.k = d.k limit 5)",
    # a build side of one row: empty on every other rank, whose probe side is never pulled
    "empty_build": "select count(*) c, sum(f.v) s from fact f join dim d on f.k = d.k where d.k = 17",
    # no aggregate: the join's rows stream on to the gather, whose first round drains the rest
    "stream_to_gather": "select f.id, d.name, f.s from fact f join dim d on f.k = d.k where f.v > 950",
    "outer": "select d.k, count(f.id) c from dim d left join fact f on d.k = f.k and f.v > 990 "
             "group by d.k order by d.k",
    # the only exchange is the final gather: its LIMIT stops early on rank 0, the others never pull it
    "gather_limit": "select count(*) c from (select id from fact where v > 0 limit 7)",
    "gather_stream": "select id, v, s from fact where v > 995",
    "group": "select k, count(*) c, sum(v) s, max(s) m from fact group by k order by k",
    "semi": "select count(*) c from fact where k in (select k from dim where name = 'n3')",
}


PIPELINED = {"exchange_receive": "pipelined"}


@pytest.mark.parametrize("ranks, settings", [
    (2, {**PIPELINED, "broadcast_bytes": 0, "chunk_rows": 1000, "exchange_batch_bytes": 8192}),
    (3, {**PIPELINED, "broadcast_bytes": 0, "force_spill": True, "chunk_rows": 4000}),
    (2, {**PIPELINED, "broadcast_bytes": 0, "exchange": "blocking"}),
    (2, {"exchange_receive": "materialized", "broadcast_bytes": 0, "chunk_rows": 1000,
         "exchange_batch_bytes": 8192}),
], ids=["2 ranks tiny chunks and batches", "3 ranks spilled", "2 ranks blocking", "2 ranks materialized"])
def test_answers_equal_duckdb(ranks, settings, small):
    check_on_ranks(small, QUERIES, ranks, settings)


def test_an_error_on_one_rank_ends_every_rank(small):
    """A rank whose consumer fails while pipelined rounds are left ends the query on every rank
    at once (no peer waits for a round that never comes)."""
    sql = ("select sum(cast(case when f.id = 12345 then 'x' else '1' end as integer)) from fact f "
           "join dim d on f.k = d.k")
    job = {"kind": "queries", "data": str(small), "queries": [sql],
           "settings": {"device": "cpu", "dist_timeout_s": 30, **PIPELINED, "broadcast_bytes": 0, "chunk_rows": 1000,
                        "exchange_batch_bytes": 8192}}
    t0 = time.monotonic()
    with pytest.raises(SluiceError, match="'x'"):
        run_job(2, job, timeout_s=30)
    assert time.monotonic() - t0 < 25


def _plan(data, sql: str, **settings):
    con = sluice.connect(data, device="cpu", **settings)
    return lower_plan(con.sql(sql).plan, con.config, 0, 2, in_job=True, device=con.device, cache=con.cache)


def test_one_streaming_exchange_is_pipelined(tpch_spread):
    """q03: the exchange under the final aggregate (fed by the join's probe side) is pipelined,
    no build side and nothing else; with broadcast_bytes=0 the probe side's exchange below the
    join is, not the build side's; materialized (the default): none."""
    q03 = tpch_queries()["q03"]
    order = exchanges_in_order(_plan(tpch_spread, q03, **PIPELINED))
    assert [e.pipelined for e in order].count(True) == 1
    chosen = next(e for e in order if e.pipelined)
    assert chosen.kind == "hash" and "l_orderkey" in chosen.describe()

    root = _plan(tpch_spread, q03, broadcast_bytes=0, **PIPELINED)
    pipelined = [e for e in exchanges_in_order(root) if e.pipelined]
    assert len(pipelined) == 1
    builds = {o.build for o in root.walk() if hasattr(o, "build")}
    assert pipelined[0] not in builds
    assert not any(e.pipelined for e in exchanges_in_order(_plan(tpch_spread, q03)))  # the default
