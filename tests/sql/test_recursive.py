"""WITH RECURSIVE against DuckDB: UNION ALL and UNION (which drops rows seen before and so
ends cycles), several anchor rows, joins to tables in the step, the step's types cast to the
anchor's, CTE column lists; in one-row chunks and with spilling forced too."""

import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare

QUERIES = {
    "count_to_ten": "with recursive t(n) as (select 1 union all select n + 1 from t where n < 10) select * from t",
    "step_cast_to_anchor_type": "with recursive t(n) as (select 1 union all select n + 0.5 from t where n < 3) "
                                "select n from t",
    "strings_union": "with recursive t(n, s) as (select 1, 'a' union select n + 1, s || 'b' from t where n < 5) "
                     "select * from t",
    "cycle_ends_by_union": "with recursive t(n) as (select 1 union select n % 3 + 1 from t) select * from t",
    "aggregate_over_it": "with recursive t as (select 1 as n union all select n + 1 from t where n < 100) "
                         "select sum(n), count(*) from t",
    "fibonacci": "with recursive f(a, b, i) as (select 0::bigint, 1::bigint, 0 union all "
                 "select b, a + b, i + 1 from f where i < 60) select * from f",
    "graph_walk_join": "with recursive r(k, d) as (select n_nationkey, 0 from nation where n_nationkey = 0 union "
                       "select n.n_nationkey, r.d + 1 from r join nation n on n.n_nationkey = r.k + 3 where r.d < 20) "
                       "select * from r",
    "reachable_regions": "with recursive p(r, hops) as (select r_regionkey, 0 from region where r_regionkey = 0 "
                         "union all select (p.r + 1) % 5, hops + 1 from p where hops < 12) "
                         "select p.hops, r_name from p join region on r_regionkey = p.r",
    "two_anchor_rows": "with recursive t(n) as (select 1 union all select 2 union all select n + 2 from t "
                       "where n < 9) select n from t",
    "null_rows_equal_in_union": "with recursive t(x) as (select null::int union select 1 from t) select * from t",
    "used_by_another_cte": "with recursive t(n) as (select 1 union all select n + 1 from t where n < 3), "
                           "u as (select n * 10 m from t) select * from u, t",
    "step_adds_nothing": "with recursive t(n) as (select 1 union all select n + 1 from t where false) select * from t",
    "not_actually_recursive": "with recursive t(n) as (select 5) select n + 1 from t",
    "cte_column_names": "with t(a, b) as (select 1 as x, 2 as y) select a, b from t",
    # A column shown twice in the anchor is two columns the step fills apart (the path was
    # written into the name column, and a nested CTE's x into every other column).
    "path_strings": "with recursive r as (select n_nationkey k, n_name, n_name as path from nation "
                    "where n_nationkey = 0 union all select n.n_nationkey, n.n_name, r.path || ' -> ' || n.n_name "
                    "from nation n join r on n.n_nationkey = r.k + 5) select * from r",
    "anchor_column_twice": "with recursive t(a, b) as (select n_nationkey, n_nationkey from nation where "
                           "n_nationkey = 1 union all select a + 1, b * 2 from t where a < 6) select * from t",
    # a table's column aliases (``nation AS n(k)``: the names were ignored, "unknown column")
    "outer_join_in_step_table_aliases": "with recursive t(x) as (select 1 union all select x + 1 from (select t.x + 1 "
                                        "from region as _(p) full outer join t on t.x = p) as _(x) where x < 10) "
                                        "select * from region as _(p, q) right outer join t on t.x = p",
    "table_column_aliases": "select k, nm, n_regionkey from nation as n(k, nm) where k < 5",
    "nested_recursive": "with recursive collatz(x, t, steps) as (select x, x, 0 from (with recursive n(t) as "
                        "(select 1 union all select t + 1 from n where t < 10) select * from n) as _(x) "
                        "union all (select x, case when t % 2 = 1 then t * 3 + p else t / 2 end, steps + p "
                        "from collatz, (with recursive n(t) as (select 1 union all select t + 1 from n where t < 1) "
                        "select * from n) as _(p) where t <> 1)) select * from collatz where t = 1",
}


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 1}, {"chunk_rows": 2, "force_spill": True}],
                         ids=["default", "one_row_chunks", "spilled"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_recursive(name, settings, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    compare(connect(tpch_dir, **settings).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(), None)


def test_recursion_that_never_ends_is_an_error(tpch_dir, connect):
    con = connect(tpch_dir, recursion_limit=50)
    with pytest.raises(ExecutionError, match="recursion_limit"):
        con.sql("with recursive t(n) as (select 1 union all select n from t) select count(*) from t").to_arrow()


ENDLESS_UNDER_LIMIT = [
    "with recursive t(n) as (select 1 union all select n + 1 from t) select n from t limit 10",
    # the step reads its work table twice: the CTE itself is still read once, as a stream
    "with recursive t(lab, n) as (select 'a', 0 union all (with x as (select n from t where lab = 'a'), "
    "y as (select n from t where lab = 'b') select 'b', n + 1 from x union all select 'a', n + 1 from y)) "
    "select n from t where lab = 'b' limit 5",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 1}], ids=["default", "one_row_chunks"])
@pytest.mark.parametrize("sql", ENDLESS_UNDER_LIMIT)
def test_recursion_without_end_read_under_a_limit(sql, settings, tpch_dir, tpch_duck, connect):
    """The LIMIT stops the iterations (the CTE was computed to the end when its own step's
    references counted as uses, and the query ran into recursion_limit)."""
    con = connect(tpch_dir, recursion_limit=50, **settings)
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table(), None)


@pytest.mark.parametrize("sql,error,message", [
    ("with recursive t(n) as (select n from t union all select 1) select * from t", UnsupportedError, "anchor"),
    ("with recursive t(n) as (select 1 union all select n, n from t) select * from t", PlanError, "columns"),
    ("with t(a, b, c) as (select 1, 2) select * from t", PlanError, "names"),
])
def test_bad_recursive_ctes(sql, error, message, tpch_dir, connect):
    with pytest.raises(error, match=message):
        connect(tpch_dir).sql(sql).to_arrow()


def test_each_step_builds_its_own_runtime_filter(tpch_dir, tpch_duck, connect):
    # The step joins the work table (build) to lineitem (probe), whose scan gets the join's
    # runtime filter: each step's filter holds that step's keys only (run state, reset with the
    # step), not every step's so far -- the last step's build side is empty.
    from sluice.exec.operators import ScanOp
    sql = ("with recursive r(k, d) as (select 1, 0 union select l.l_orderkey, r.d + 1 from r "
           "join lineitem l on l.l_orderkey = r.k + 1 where r.d < 6) select * from r")
    rel = connect(tpch_dir, scan_mode="pushdown").sql(sql)
    compare(rel.to_arrow(), tpch_duck.sql(sql).to_arrow_table())
    op, ctx = rel.last_run
    (spec,) = [s for o in op.walk() if isinstance(o, ScanOp) for s in o.runtime_filters]
    rf = ctx.runtime_filter(spec)
    assert rf.ready and rf.lo is None and rf.keys == 0


def test_table_column_aliases_name_the_columns(tpch_dir, tpch_duck, connect):
    sql = "select * from region as r(a, b)"
    assert connect(tpch_dir).sql(sql).to_arrow().column_names == tpch_duck.sql(sql).to_arrow_table().column_names


CORRELATED_CTES = [
    # a recursive CTE inside LATERAL / a scalar subquery reading the outer query's columns:
    # a CTE is computed once, so these are refused (they were "unknown column")
    "select x, y from generate_series(1, 4) as _(x), lateral (with recursive t(y) as (select _.x union all "
    "select y + 1 from t where y < 3) select * from t) as t",
    "select n_nationkey, (with recursive t(z) as (select n_regionkey union all select z + 1 from t where z < 3) "
    "select sum(z) from t) from nation",
    "select x, (with c as (select x + 1 as y) select y from c) from generate_series(1, 3) _(x)",
]


@pytest.mark.parametrize("sql", CORRELATED_CTES)
def test_correlated_cte_is_refused(sql, tpch_dir, tpch_duck, connect):
    tpch_duck.sql(sql).fetchall()  # DuckDB answers
    with pytest.raises(UnsupportedError, match="of an enclosing query"):
        connect(tpch_dir).sql(sql).to_arrow()


def test_cte_unknown_column_stays_an_error(tpch_dir, connect):
    with pytest.raises(PlanError, match="unknown column"):
        connect(tpch_dir).sql("with c as (select nope as y) select n_nationkey, (select y from c) from nation").to_arrow()
