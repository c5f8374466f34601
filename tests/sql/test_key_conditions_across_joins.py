"""A condition on one side's join key also filters the other side's key where that is exact
(sluice.plan.rules.push_filters: ``_across`` and ``_holds``): through inner, LEFT (into the
null-supplying side), RIGHT, semi and anti joins, from WHERE or from a filter already on one
side -- never into a NOT IN subquery, whose NULLs decide its answer. Answers equal DuckDB's;
the plans show the condition at the other side's scan."""

import pytest

from sluice.exec.driver import explain
from sluice.physical.lower import lower_plan
from sluice.testing.oracle import compare

QUERIES = {
    "left_join_where": "select count(*), count(o_orderkey), sum(o_totalprice) from customer left join orders "
                       "on c_custkey = o_custkey where c_custkey < 100",
    "left_join_filtered_cte": "with a as (select o_custkey k, count(*) n from orders group by 1), "
                              "b as (select c_custkey k, c_nationkey nk from customer) "
                              "select count(*), sum(a.n), count(a.k) from (select * from b where k between 10 and 500) x "
                              "left join a on a.k = x.k",
    "two_left_joins": "with a as (select o_custkey k, count(*) n from orders group by 1), "
                      "l as (select o_custkey k, sum(l_quantity) q from lineitem, orders where l_orderkey = o_orderkey "
                      "group by 1) select count(*), sum(a.n), sum(l.q) from customer left join a on a.k = c_custkey "
                      "left join l on l.k = c_custkey where c_custkey % 10 = 3",
    "right_join": "select count(*), count(c_custkey) from customer right join orders on c_custkey = o_custkey "
                  "where o_custkey between 100 and 200",
    "anti_join": "select count(*) from customer where c_custkey < 50 and not exists "
                 "(select 1 from orders where o_custkey = c_custkey)",
    "semi_join": "select count(*) from customer where c_custkey between 20 and 90 and c_custkey in "
                 "(select o_custkey from orders where o_orderstatus = 'F')",
    "not_in_with_nulls": "select count(*) from orders where o_custkey < 100 and o_custkey not in "
                         "(select case when c_custkey % 7 = 0 then null else c_custkey end from customer)",
    "not_in_without_nulls": "select count(*) from orders where o_custkey < 100 and o_custkey not in "
                            "(select c_custkey from customer where c_custkey % 7 = 0)",
    "is_null_or_range": "select count(*), count(o_orderkey) from customer left join orders on c_custkey = o_custkey "
                        "where c_custkey is null or c_custkey < 3",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_key_conditions_across_joins_match_duckdb(tpch_dir, tpch_duck, connect, name):
    sql = QUERIES[name]
    compare(connect(tpch_dir).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("name,scan", [("left_join_where", "Scan orders"), ("left_join_filtered_cte", "Scan orders"),
                                       ("right_join", "Scan customer")])
def test_the_other_side_is_filtered_at_its_scan(tpch_dir, connect, name, scan):
    con = connect(tpch_dir)
    lines = explain(lower_plan(con.sql(QUERIES[name]).plan, con.config))
    assert any(scan in ln and "filter=" in ln and "custkey" in ln.split("filter=")[1] for ln in lines), "\n".join(lines)
