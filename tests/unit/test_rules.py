"""What the rules' plans become once lowered and run, and the estimates they use. The rules
themselves are tested on logical before/after pairs: ``test_rule_fixtures.py`` and ``rules/``."""

import sluice
from sluice.exec.driver import explain
from sluice.physical.lower import lower_plan
from sluice.testing.queries import tpch_queries


def plan_text(con, sql):
    return "\n".join(explain(lower_plan(con.sql(sql).plan, con.config)))


def test_filters_reach_scans_and_prune_row_groups(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    text = plan_text(con, "select count(*) from (select * from orders) o where o.o_orderkey < 10")
    line = next(ln for ln in text.splitlines() if "Scan orders" in ln)
    assert "filter=" in line and "o_orderkey" in line
    pruned = int(line.rsplit("pruned=", 1)[1])
    assert pruned > 0  # orders is sorted by key: later row groups cannot hold keys < 10


def test_filter_only_columns_leave_the_scan(tpch_dir):
    # Q9: p_name is read for the LIKE filter but is not passed on to the join.
    con = sluice.connect(tpch_dir, device="cpu")
    rel = con.sql(tpch_queries()["q09"])
    rel.to_arrow()
    op, _ = rel.last_run
    scans = [o for o in op.walk() if o.label == "Scan" and o.table.name == "part"]
    assert len(scans) == 1 and "p_name" in scans[0].columns.values()
    assert scans[0].outputs is not None and all("p_name" not in k for k in scans[0].outputs)


def test_string_equality_selectivity_from_the_dictionary(tpch_dir):
    # p_type has 150 distinct values: p_type = '...' keeps 1/150 of part, not a default guess.
    from sluice.expr.functions.comparison import EQ_SEL
    from sluice.plan.estimate import distinct_in_row_group, estimate
    con = sluice.connect(tpch_dir, device="cpu")
    part = con.table("part")
    assert distinct_in_row_group(part.row_groups[0], "p_type") == 150
    assert distinct_in_row_group(con.table("lineitem").row_groups[0], "l_comment") is None  # nearly unique
    plan = con.sql("select p_partkey from part where p_type = 'ECONOMY ANODIZED STEEL'").plan
    rows, base = estimate(plan)
    assert rows < EQ_SEL * base / 10


def test_join_keys_not_carried_above_the_join(tpch_dir):
    # Q5: orders join customer on custkey; above it only o_orderkey and c_nationkey are used,
    # so the next join's build side holds two columns, not five.
    con = sluice.connect(tpch_dir, device="cpu")
    rel = con.sql(tpch_queries()["q05"])
    rel.to_arrow()
    op, _ = rel.last_run
    joins = {str(o.probe_keys[0]): o for o in op.walk() if o.label == "HashJoin"}
    oc = joins.get("orders.o_custkey") or joins["customer.c_custkey"]
    assert set(oc.outputs) == {"orders.o_orderkey", "customer.c_nationkey"}
    top = joins.get("lineitem.l_orderkey") or joins["orders.o_orderkey"]
    assert set(top.outputs) == {"lineitem.l_extendedprice", "lineitem.l_discount", "nation.n_name"}


_WRITTEN_ORDER = """
select n_name, count(*) as n from lineitem
join orders on l_orderkey = o_orderkey
join customer on o_custkey = c_custkey
join nation on c_nationkey = n_nationkey
left join region on n_regionkey = r_regionkey
where n_name = 'FRANCE' and o_orderdate < date '1995-01-01'
group by n_name"""


def test_join_on_chain_before_a_left_join_answers_as_duckdb(tpch_dir):
    # Its plan (ordered as a whole, the left join sunk to nation) is in rules/order_joins.sql
    # and rules/push_filters.sql.
    import duckdb
    con = sluice.connect(tpch_dir, device="cpu")
    duck = duckdb.connect()
    for t in ("lineitem", "orders", "customer", "nation", "region"):
        duck.execute(f"create view {t} as select * from '{tpch_dir}/{t}.parquet'")
    assert sorted(con.sql(_WRITTEN_ORDER).to_arrow().to_pylist(), key=str) == \
        sorted(duck.sql(_WRITTEN_ORDER).to_arrow_table().to_pylist(), key=str)


def test_which_conditions_reject_nulls():
    # simplify_outer_joins turns a left join inner only under a condition that rejects the
    # NULL-extended rows (cases in rules/simplify_outer_joins.sql).
    from sluice.expr.build import Col, make_compare, make_func
    from sluice.plan.rules.simplify_outer_joins import rejects_nulls
    from sluice.types import INT64
    a, b = Col("a", INT64), Col("b", INT64)
    assert rejects_nulls(make_compare("=", make_func("+", [a, b]), Col("c", INT64)), {"b"})
    assert not rejects_nulls(make_func("is_null", [a]), {"a"})
    assert not rejects_nulls(make_func("or", [make_compare("=", a, b), make_func("is_null", [b])]), {"b"})
