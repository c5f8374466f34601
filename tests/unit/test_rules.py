"""Plan rewrites, stated as before/after on real plans."""

import sluice
from sluice.exec.driver import explain
from sluice.physical.lower import lower_plan
from sluice.testing.queries import tpch_queries


def plan_text(con, sql):
    return "\n".join(explain(lower_plan(con.sql(sql).plan, con.config)))


def test_or_across_tables_implies_single_table_filters(tpch_dir):
    # Q7: (n1 = FRANCE and n2 = GERMANY) or (n1 = GERMANY and n2 = FRANCE) filters each nation scan.
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), tpch_queries()["q07"])
    scans = [ln for ln in text.splitlines() if "Scan nation" in ln]
    assert len(scans) == 2 and all("'FRANCE'" in s and "'GERMANY'" in s for s in scans)


def test_filters_reach_scans_and_prune_row_groups(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    text = plan_text(con, "select count(*) from (select * from orders) o where o.o_orderkey < 10")
    line = next(ln for ln in text.splitlines() if "Scan orders" in ln)
    assert "filter=" in line and "o_orderkey" in line
    pruned = int(line.rsplit("pruned=", 1)[1])
    assert pruned > 0  # orders is sorted by key: later row groups cannot hold keys < 10


def test_columns_pruned_to_what_is_used(tpch_dir):
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), "select sum(l_quantity) from lineitem")
    assert "Scan lineitem [l_quantity]" in text


def test_join_order_avoids_many_to_many(tpch_dir):
    # Q5: customer and supplier share only nationkey; joining them first would be many-to-many.
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), tpch_queries()["q05"])
    assert "[customer.c_nationkey = supplier.s_nationkey]" not in text
    assert "[supplier.s_nationkey = customer.c_nationkey]" not in text


def test_filter_only_columns_leave_the_scan(tpch_dir):
    # Q9: p_name is read for the LIKE filter but is not passed on to the join.
    con = sluice.connect(tpch_dir, device="cpu")
    rel = con.sql(tpch_queries()["q09"])
    rel.to_arrow()
    op, _ = rel.last_run
    scans = [o for o in op.walk() if o.label == "Scan" and o.table.name == "part"]
    assert len(scans) == 1 and "p_name" in scans[0].columns.values()
    assert scans[0].outputs is not None and all("p_name" not in k for k in scans[0].outputs)


def test_semi_join_pushed_below_inner_joins(tpch_dir):
    # Q18: the IN subquery filters orders before orders meet lineitem (not 60M joined rows after).
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), tpch_queries()["q18"])
    lines = text.splitlines()
    semi = next(i for i, ln in enumerate(lines) if "HashJoin semi" in ln)
    depth = len(lines[semi]) - len(lines[semi].lstrip())
    assert lines[semi + 1].strip().startswith("Scan orders")
    above = [ln for ln in lines[:semi] if "HashJoin inner" in ln]
    assert any(len(ln) - len(ln.lstrip()) < depth for ln in above)


def test_semi_join_over_both_inputs_stays_above(tpch_dir):
    # The EXISTS tests columns of both joined tables: it cannot move onto either one.
    sql = ("select count(*) from orders, customer where o_custkey = c_custkey and exists "
           "(select * from nation where n_nationkey = c_nationkey and n_regionkey = o_shippriority)")
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), sql)
    lines = text.splitlines()
    semi = next(i for i, ln in enumerate(lines) if "semi" in ln)
    assert "HashJoin inner" in lines[semi + 1]


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


def test_selective_dimension_joins_the_fact_table_first(tpch_dir):
    # Q8: lineitem meets the part filter (1/150) before the orders of two years (~2/7).
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), tpch_queries()["q08"])
    lines = text.splitlines()
    part_join = next(i for i, ln in enumerate(lines) if "l_partkey = part.p_partkey" in ln)
    orders_join = next(i for i, ln in enumerate(lines) if "o_orderkey" in ln and "HashJoin" in ln)
    assert part_join > orders_join  # deeper in the tree: joined earlier


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


def test_join_on_chain_before_a_left_join_is_ordered_with_where_filters(tpch_dir):
    # Written as JOIN ... ON then LEFT JOIN (TPC-DS Q72's shape): the inner run is ordered as
    # a whole, with the WHERE filters on its tables applied at the scans, so the fact table
    # probes the filtered dimension chain instead of lineitem meeting orders first.
    con = sluice.connect(tpch_dir, device="cpu")
    text = plan_text(con, _WRITTEN_ORDER)
    assert "filter=(nation.n_name = 'FRANCE')" in text
    assert "filter=(orders.o_orderdate <" in text
    lines = text.splitlines()
    first_join = [ln for ln in lines if "HashJoin inner" in ln][-1]  # the deepest inner join
    assert "lineitem" not in first_join
    # The LEFT JOIN on nation's key goes down to nation (push_filters' subquery-join sinking):
    # it joins one filtered nation row, not every joined lineitem row.
    left = next(i for i, ln in enumerate(lines) if "HashJoin probe_outer" in ln or "build_outer" in ln)
    assert any("Scan nation" in ln for ln in lines[left + 1:left + 3]), text
    import duckdb
    duck = duckdb.connect()
    for t in ("lineitem", "orders", "customer", "nation", "region"):
        duck.execute(f"create view {t} as select * from '{tpch_dir}/{t}.parquet'")
    assert sorted(con.sql(_WRITTEN_ORDER).to_arrow().to_pylist(), key=str) == \
        sorted(duck.sql(_WRITTEN_ORDER).to_arrow_table().to_pylist(), key=str)


def test_translator_leaves_join_order_to_the_order_joins_rule(tpch_dir):
    # Before: the FROM clause of Q5 is one InnerJoins node of six relations and their
    # conditions, in written order. After order_joins: a tree of Joins, no InnerJoins left,
    # every condition placed (no Filter above the joins holds a join key equality).
    from sluice.plan.logical import InnerJoins, Join
    from sluice.plan.rules.order_joins import order_joins
    from sluice.sql.parse import parse_sql
    from sluice.sql.translate import Translator
    con = sluice.connect(tpch_dir, device="cpu")
    before = Translator(con.table, con.files).translate(parse_sql(tpch_queries()["q05"])).plan

    def nodes(p, kind):
        return ([p] if isinstance(p, kind) else []) + [n for c in p.children for n in nodes(c, kind)]
    runs = nodes(before, InnerJoins)
    assert len(runs) == 1 and len(runs[0].inputs) == 6 and not nodes(before, Join)
    after = order_joins(before)
    assert not nodes(after, InnerJoins)
    joins = nodes(after, Join)
    assert len(joins) == 5 and all(j.kind == "inner" and j.left_keys for j in joins)


_NULL_REJECTED = """select n_name, count(*) from customer left join orders on c_custkey = o_custkey, nation
where o_orderpriority = n_comment or o_shippriority = n_nationkey group by n_name"""


def test_outer_join_made_inner_by_a_null_rejecting_condition(tpch_dir):
    # Before: LEFT JOIN inside the run of inner joins whose condition (an OR whose every branch
    # compares an orders column) rejects the NULL-extended rows. After simplify_outer_joins:
    # one InnerJoins of three relations, which order_joins may reorder.
    from sluice.plan.logical import InnerJoins, Join
    from sluice.plan.rules.simplify_outer_joins import rejects_nulls, simplify_outer_joins
    from sluice.sql.parse import parse_sql
    from sluice.sql.translate import Translator
    con = sluice.connect(tpch_dir, device="cpu")

    def nodes(p, kind):
        return ([p] if isinstance(p, kind) else []) + [n for c in p.children for n in nodes(c, kind)]
    before = Translator(con.table, con.files).translate(parse_sql(_NULL_REJECTED)).plan
    assert [j.kind for j in nodes(before, Join)] == ["left"]
    after = simplify_outer_joins(before)
    assert not nodes(after, Join)
    runs = nodes(after, InnerJoins)
    assert len(runs) == 1 and len(runs[0].inputs) == 3
    # conditions that keep NULL-extended rows leave the left join alone
    for keeps in ("o_orderpriority is null or o_shippriority = n_nationkey",
                  "coalesce(o_shippriority, 0) = n_nationkey"):
        sql = _NULL_REJECTED.split("where")[0] + f"where {keeps} group by n_name"
        plan = simplify_outer_joins(Translator(con.table, con.files).translate(parse_sql(sql)).plan)
        assert [j.kind for j in nodes(plan, Join)] == ["left"], keeps
    from sluice.expr.build import Col, make_compare, make_func
    from sluice.types import INT64
    a, b = Col("a", INT64), Col("b", INT64)
    assert rejects_nulls(make_compare("=", make_func("+", [a, b]), Col("c", INT64)), {"b"})
    assert not rejects_nulls(make_func("is_null", [a]), {"a"})
    assert not rejects_nulls(make_func("or", [make_compare("=", a, b), make_func("is_null", [b])]), {"b"})


def test_inner_joins_go_below_a_left_join_on_its_preserved_side(tpch_dir):
    # Before: InnerJoins([customer LEFT JOIN orders, nation]). After: the left join on top of
    # InnerJoins([customer, nation]) -- nation filters customer before orders is probed.
    from sluice.plan.logical import InnerJoins, Join
    from sluice.plan.rules.simplify_outer_joins import inner_joins_below_left_joins
    from sluice.sql.parse import parse_sql
    from sluice.sql.translate import Translator
    con = sluice.connect(tpch_dir, device="cpu")
    sql = ("select count(*) from customer left join orders on c_custkey = o_custkey, nation "
           "where c_nationkey = n_nationkey and n_name = 'FRANCE'")
    before = Translator(con.table, con.files).translate(parse_sql(sql)).plan

    def first(p, kind):
        return p if isinstance(p, kind) else next((x for c in p.children if (x := first(c, kind))), None)
    run = first(before, InnerJoins)
    assert isinstance(run.inputs[0], Join) and run.inputs[0].kind == "left"
    after = inner_joins_below_left_joins(before)
    top = first(after, Join)
    assert top.kind == "left" and isinstance(top.left, InnerJoins)
    assert {n.split(".")[0] for p in top.left.inputs for n in p.schema} == {"customer", "nation"}


def test_partition_aggregate_windows_share_only_the_columns_they_use(tpch_dir):
    # Each whole-partition window aggregate runs as Shared input -> Aggregate -> join back; the
    # second one's Shared holds the first's, so pruning must reach the inner one too (it read
    # all 16 lineitem columns, and a 256 MiB budget ran out).
    sql = ("select sum(x) from (select avg(l_extendedprice) over (partition by l_suppkey) "
           "+ sum(l_quantity) over (partition by l_returnflag) x from lineitem)")
    text = plan_text(sluice.connect(tpch_dir, device="cpu"), sql)
    scans = [ln.strip() for ln in text.splitlines() if "Scan lineitem" in ln]
    assert scans and "HashJoin" in text and "Window" not in text
    assert all(s.startswith("Scan lineitem [l_suppkey, l_quantity, l_extendedprice, l_returnflag]") for s in scans)
