"""LEFT JOINs that a condition above makes inner (sluice.plan.rules.simplify_outer_joins)
give DuckDB's answers, and so do those a condition must leave alone (IS NULL, COALESCE, an
OR with a branch that keeps NULL-extended rows), and inner joins moved below a LEFT JOIN's
preserved side (conditions naming the outer side kept above); default and small chunks."""

import pytest

from sluice.testing.oracle import compare

QUERIES = {
    "where_equality": "select n_name, count(*) c from customer left join orders on c_custkey = o_custkey, nation "
                      "where o_shippriority = n_regionkey and c_nationkey = n_nationkey group by n_name",
    "where_or_both_branches": "select count(*) from customer left join orders on c_custkey = o_custkey "
                              "where o_orderpriority = '1-URGENT' or o_totalprice > 400000",
    "where_or_keeps_nulls": "select count(*), count(o_orderkey) from customer left join orders on c_custkey = o_custkey "
                            "where o_orderkey is null or o_totalprice > 400000",
    "where_is_null": "select count(*) from customer left join orders on c_custkey = o_custkey where o_orderkey is null",
    "where_coalesce": "select count(*) from customer left join orders on c_custkey = o_custkey "
                      "where coalesce(o_totalprice, 0) < 1000",
    "chain_of_left_joins": "select count(*), count(l_orderkey) from customer left join orders on c_custkey = o_custkey "
                           "left join lineitem on l_orderkey = o_orderkey where o_orderdate < date '1993-01-01'",
    "dimensions_after_a_left_join": "select count(*), sum(coalesce(o_totalprice, 0)) from customer left join orders "
                                    "on c_custkey = o_custkey, nation where c_nationkey = n_nationkey and n_name = 'FRANCE'",
    "condition_naming_the_outer_side_stays_above": "select count(*) from customer left join orders on c_custkey = "
                                                   "o_custkey, nation where c_nationkey = n_nationkey and "
                                                   "coalesce(o_totalprice, 0) < n_nationkey * 10000",
    "q40_shape": "select n_name, sum(case when o_orderdate < date '1995-01-01' then l_extendedprice - "
                 "coalesce(o_totalprice, 0) else 0 end) s from lineitem left join orders on l_orderkey = o_orderkey "
                 "and o_orderstatus = 'F', supplier, nation where l_suppkey = s_suppkey and s_nationkey = n_nationkey "
                 "and n_regionkey = 2 group by n_name",
    "q93_shape": "select o_custkey, sum(case when l_quantity is not null then l_quantity * o_totalprice "
                 "else o_totalprice end) s from orders left join lineitem on l_orderkey = o_orderkey, part "
                 "where l_partkey = p_partkey and p_type = 'ECONOMY ANODIZED STEEL' group by o_custkey "
                 "order by s desc, o_custkey limit 20",
}


@pytest.mark.parametrize("chunk_rows", [None, 4096], ids=["default_chunks", "small_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_outer_join_simplification(tpch_dir, tpch_duck, connect, name, chunk_rows):
    sql = QUERIES[name]
    con = connect(tpch_dir, **({"chunk_rows": chunk_rows} if chunk_rows else {}))
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(), [1, 0] if "order by" in sql else None)
