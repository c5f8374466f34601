"""A CTE every reference filters computes only the rows some reference keeps
(sluice.plan.rules.filter_shared_ctes), and an OR above an aggregation whose every branch tests
a group key filters below it: answers equal DuckDB's; the plan filters inside the CTE only
when every reference is filtered, below the aggregation only what the OR implies."""

import pytest

from sluice.exec.driver import explain
from sluice.physical.lower import lower_plan
from sluice.testing.oracle import compare

AGG = ("with m as (select o_custkey ck, extract(month from o_orderdate) mo, sum(o_totalprice) tot, count(*) n "
       "from orders group by 1, 2) ")

QUERIES = {
    "two_months": AGG + "select a.ck, a.tot, b.tot from m a, m b where a.ck = b.ck and a.mo = 4 and b.mo = 5 "
                  "order by 1, 2, 3 limit 50",
    "same_condition_twice": AGG + "select count(*), sum(a.n + b.n) from m a, m b where a.ck = b.ck and a.mo = 7 "
                            "and b.mo = 7",
    "one_reference_unfiltered": AGG + "select count(*), sum(a.tot) from m a, m b where a.ck = b.ck and a.mo = 3",
    "condition_with_nulls": "with c as (select c_custkey k, case when c_acctbal > 0 then c_nationkey end nk "
                            "from customer) select count(*) from c x, c y where x.k = y.k and x.nk is null "
                            "and (y.nk > 20 or y.nk is null)",
    "in_subquery_and_from": AGG + "select count(*) from m a where a.mo = 1 and a.ck in "
                            "(select ck from m where mo = 2 and n > 1)",
    "or_mixing_key_and_aggregate": AGG + "select count(*), sum(a.tot) from m a, m b where a.ck = b.ck and "
                                   "((a.mo = 4 and a.tot > 200000) or a.mo = 6) and b.mo = 5",
    "or_branch_without_key": "select count(*), sum(t) from (select o_custkey k, extract(month from o_orderdate) mo, "
                             "sum(o_totalprice) t from orders group by 1, 2) where mo = 4 or t > 400000",
    "or_over_grouping_no_cte": "select count(*), sum(t) from (select o_custkey k, extract(month from o_orderdate) mo, "
                               "sum(o_totalprice) t from orders group by 1, 2) where (mo = 4 and t > 300000) "
                               "or (mo = 9 and k < 1000)",
    "nested_ctes": "with a as (select l_orderkey k, l_linenumber ln, l_quantity q from lineitem), "
                   "b as (select k, sum(q) s from a where ln < 3 group by k) "
                   "select count(*), sum(x.s) from b x, b y, a where x.k = y.k and x.s > 60 and y.s < 80 "
                   "and a.k = x.k and a.ln = 7",
}


@pytest.mark.parametrize("chunk_rows", [None, 4096], ids=["default_chunks", "small_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_shared_cte_filters_match_duckdb(tpch_dir, tpch_duck, connect, name, chunk_rows):
    sql = QUERIES[name]
    con = connect(tpch_dir, **({"chunk_rows": chunk_rows} if chunk_rows else {}))
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(),
            [0, 1, 2] if "order by" in sql else None)


def plan_text(con, sql):
    return "\n".join(explain(lower_plan(con.sql(sql).plan, con.config)))


def test_or_of_the_references_conditions_goes_inside(tpch_dir, connect):
    text = plan_text(connect(tpch_dir), QUERIES["two_months"])
    shared = text.split("Shared", 1)[1]
    assert " = 4) OR " in shared and " = 5)" in shared  # below the aggregation, inside the CTE


def test_an_unfiltered_reference_keeps_the_cte_whole(tpch_dir, connect):
    text = plan_text(connect(tpch_dir), QUERIES["one_reference_unfiltered"])
    scans = [ln for ln in text.splitlines() if "Scan orders" in ln]
    assert scans and not any("filter=" in ln for ln in scans)
    assert "Filter (EXTRACT(MONTH FROM o_orderdate) = 3)" in text  # above its own reference only


def test_an_or_over_group_keys_and_aggregates_implies_a_key_filter_below(tpch_dir, connect):
    text = plan_text(connect(tpch_dir), QUERIES["or_over_grouping_no_cte"])
    scan = next(ln for ln in text.splitlines() if "Scan orders" in ln)
    assert "filter=" in scan and "= 4)" in scan and "= 9)" in scan
    text = plan_text(connect(tpch_dir), QUERIES["or_branch_without_key"])
    assert "filter=" not in next(ln for ln in text.splitlines() if "Scan orders" in ln)
