"""Inner joins whose duplicates nobody sees become semi joins (sluice.plan.rules.
semi_join_reduction), and semi/anti/mark joins with a residual settle rank by rank
(HashJoinOp._exists): answers equal DuckDB's, with default and small chunks and with every
pair expanded at once; plans before/after, including CTEs the rule must leave alone."""

import pytest

from sluice.exec.driver import explain
from sluice.physical.lower import lower_plan
from sluice.exec.hash_join import HashJoinOp
from sluice.testing.oracle import compare

# A Q95-shaped CTE over TPC-H: line items of one order from different suppliers.
PAIRS = ("with pairs as (select l1.l_orderkey ok, l1.l_suppkey s1, l2.l_suppkey s2 from lineitem l1, lineitem l2 "
         "where l1.l_orderkey = l2.l_orderkey and l1.l_suppkey <> l2.l_suppkey) ")

QUERIES = {
    "cte_in_two_subqueries": PAIRS + "select count(distinct o_orderkey), sum(o_totalprice) from orders "
                             "where o_orderdate < date '1993-06-01' and o_orderkey in (select ok from pairs) and "
                             "o_orderkey in (select l_orderkey from lineitem, pairs where l_orderkey = pairs.ok "
                             "and l_returnflag = 'R')",
    "cte_also_counted": PAIRS + "select (select count(*) from pairs) n, count(*) from orders "
                        "where o_orderkey in (select ok from pairs) and o_orderdate < date '1992-03-01'",
    "in_over_join": "select count(*) from part where p_partkey in (select ps_partkey from partsupp, supplier "
                    "where ps_suppkey = s_suppkey and s_acctbal > 9000)",
    "in_over_join_other_side": "select count(*) from supplier where s_suppkey in (select s_suppkey from partsupp, "
                               "supplier where ps_suppkey = s_suppkey and ps_availqty < 100)",
    "not_in_over_join": "select count(*) from part where p_partkey not in (select ps_partkey from partsupp, supplier "
                        "where ps_suppkey = s_suppkey and s_nationkey = 3)",
    "exists_residual": "select count(*) from orders where exists (select * from lineitem where l_orderkey = "
                       "o_orderkey and l_commitdate < l_receiptdate and l_suppkey <> o_custkey % 1000)",
    "not_exists_residual": "select count(*), sum(o_totalprice) from orders where not exists (select * from lineitem "
                           "where l_orderkey = o_orderkey and l_quantity > o_totalprice / 10000)",
    "exists_under_or": "select count(*) from orders where o_orderstatus = 'P' or exists (select * from lineitem "
                       "where l_orderkey = o_orderkey and l_shipdate > o_orderdate + interval 100 day)",
    "distinct_over_join": "select count(*) from (select distinct c_nationkey from customer, orders "
                          "where c_custkey = o_custkey and o_totalprice > 500000)",
    "nulls_in_residual": "select count(*) from orders where exists (select * from lineitem where "
                         "l_orderkey = o_orderkey and (case when l_linenumber = 1 then null else l_tax end) > 0.05)",
}


@pytest.mark.parametrize("variant", ["default", "small_chunks", "one_round"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_semi_join_reduction_matches_duckdb(tpch_dir, tpch_duck, connect, name, variant, monkeypatch):
    sql = QUERIES[name]
    if variant == "one_round":  # every pair past the first candidate expanded at once
        monkeypatch.setattr(HashJoinOp, "EXISTS_ROUNDS", 1)
    con = connect(tpch_dir, **({"chunk_rows": 4096} if variant == "small_chunks" else {}))
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(), None)


def plan_text(con, sql):
    return "\n".join(explain(lower_plan(con.sql(sql).plan, con.config)))


def test_cte_used_only_in_subqueries_becomes_semi_joins(tpch_dir, connect):
    text = plan_text(connect(tpch_dir), QUERIES["cte_in_two_subqueries"])
    assert "HashJoin inner [l1.l_orderkey" not in text and "HashJoin inner [l2.l_orderkey" not in text
    assert "residual=(l1.l_suppkey <> l2.l_suppkey)" in text or "residual=(l2.l_suppkey <> l1.l_suppkey)" in text
    assert "HashJoin inner [lineitem.l_orderkey" not in text  # the join inside the second IN too


def test_cte_counted_elsewhere_keeps_its_pairs(tpch_dir, connect):
    text = plan_text(connect(tpch_dir), QUERIES["cte_also_counted"])
    assert "HashJoin inner" in text and "l_suppkey <> " in text
    assert "residual=" not in text  # the pairs are counted: the join must stay inner
