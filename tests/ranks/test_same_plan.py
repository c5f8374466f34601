"""Every rank must issue the same collectives in the same order: for every query of the
suites, the plans lowered for each rank of 2 and 3 have the same fingerprint (exchanges in
stage order with the runtime filters each merges, and the row groups each scan shares out).
A difference would hang or fail a real run; here it is found by lowering alone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sluice
from sluice.exec.exchange import plan_fingerprint
from sluice.physical.lower import lower_plan
from sluice.testing.queries import ssb_queries, tpch_queries
from sluice.testing.tpcds import tpcds_queries

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_semantics import QUERIES as SEMANTICS  # noqa: E402
from test_semantics import small_dir  # noqa: E402,F401 - the suite's fixture

EXTRA = {  # shapes that once planned differently on rank 0 (a join on rank 0 only, and its filter)
    "right_join_in": "select count(*) from orders o right join customer c on o.o_totalprice < c.c_acctbal "
                     "where o.o_custkey in (select n_nationkey from nation)",
    "recursive_join": "with recursive r(n) as (select 1 union all select n + 1 from r where n < 30) "
                      "select n, n_name from r join nation on n = n_nationkey",
    "recursive_key_join": "with recursive d(node, dist) using key (node, min(dist)) as (select 0, 0 union "
                          "select n.n_nationkey, d.dist + 1 from d join nation n on n.n_regionkey = d.node % 5) "
                          "select node, dist, n_name from d join nation on node = n_nationkey",
    # DISTINCT aggregates without keys: one exchange per argument over a shared input
    "distinct_args": "select count(distinct l_suppkey), count(distinct l_comment), sum(distinct l_tax), count(*) "
                     "from lineitem",
}


def _check(data, queries: dict[str, str], settings: dict) -> None:
    con = sluice.connect(data, device="cpu", **settings)
    bad = []
    for name, sql in queries.items():
        plan = con.sql(sql).plan
        for world in (2, 3):
            fps = [plan_fingerprint(lower_plan(plan, con.config, r, world)) for r in range(world)]
            if len(set(fps)) != 1:
                bad.append(f"{name} on {world} ranks")
    assert not bad, bad


@pytest.mark.parametrize("settings", [{}, {"broadcast_bytes": 0}, {"broadcast_bytes": -1}],
                         ids=["default", "partitioned", "broadcast"])
def test_tpch_ssb_and_edges_plan_alike_on_every_rank(settings, tpch_spread, ssb_spread):
    _check(tpch_spread, tpch_queries() | EXTRA, settings)
    _check(ssb_spread, ssb_queries(), settings)


def test_semantics_plan_alike_on_every_rank(small_dir):  # noqa: F811
    _check(small_dir, SEMANTICS, {"broadcast_bytes": 0})


@pytest.mark.skipif(not tpcds_queries(), reason="TPC-DS queries need dsqgen")
def test_tpcds_plans_alike_on_every_rank(tpcds_spread):
    _check(tpcds_spread, tpcds_queries(), {"broadcast_bytes": 0})
