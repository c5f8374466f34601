"""The physical layer: join selection decided once, distributions, lowering's state."""

import pytest

import sluice
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.join_mode import JoinMode
from sluice.physical.joins import choose_build_side
from sluice.physical.lower import lower_plan
from sluice.physical.properties import BROADCAST, SINGLE, hashed
from sluice.plan.logical import Join, JoinKind


def _joins(con, sql):
    return [o for o in lower_plan(con.sql(sql).plan, con.config).walk() if isinstance(o, HashJoinOp)]


def _logical_joins(plan):
    out = [plan] if isinstance(plan, Join) else []
    for c in plan.children:
        out += _logical_joins(c)
    return out


def test_smaller_side_builds_whichever_side_sql_names_it(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    for sql in ["select count(*) from lineitem left join nation on l_suppkey = n_nationkey",
                "select count(*) from nation right join lineitem on l_suppkey = n_nationkey"]:
        (j,) = _joins(con, sql)
        assert any("Scan nation" in o.describe() for o in j.build.walk())
        assert j.mode == JoinMode.PROBE_OUTER  # lineitem's rows are kept: it probes


def test_left_join_whose_left_side_is_smaller_builds_it(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    (j,) = _joins(con, "select count(*) from nation left join lineitem on l_suppkey = n_nationkey")
    assert j.mode == JoinMode.BUILD_OUTER and any("nation" in o.describe() for o in j.build.walk())


def test_sides_that_must_stay_are_not_swapped(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    # NOT IN (null-aware anti) and a mark join build their right side whatever the sizes
    plan = con.sql("select count(*) from nation where n_nationkey not in (select l_suppkey from lineitem)").plan
    (anti,) = [j for j in _logical_joins(plan) if j.null_aware]
    c = choose_build_side(anti)
    assert c.build is anti.right and c.mode == JoinMode.ANTI


def test_join_kind_is_an_enum_and_rejects_unknown_kinds(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    (j,) = _logical_joins(con.sql("select count(*) from nation join region on n_regionkey = r_regionkey").plan)
    assert j.kind is JoinKind.INNER
    with pytest.raises(ValueError):
        Join(j.left, j.right, "sideways")


def test_one_rank_runs_every_operator_on_a_single_rank(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    op = lower_plan(con.sql("select n_name, count(*) from nation join region on n_regionkey = r_regionkey "
                            "group by 1 order by 1").plan, con.config)
    assert all(o.distribution == SINGLE for o in op.walk())


def test_lowering_for_several_ranks_places_exchanges(tpch_dir):
    """Two ranks: the aggregate splits into partial and final phases around an exchange on its
    keys, the root is gathered to rank 0, and what only rank 0 runs stands aside elsewhere."""
    from sluice.exec.driver import explain
    con = sluice.connect(tpch_dir, device="cpu")
    plan = con.sql("select n_regionkey, count(*) from nation group by 1").plan
    text = "\n".join(explain(lower_plan(plan, con.config, rank=0, world=2)))
    assert text.index("Gather to rank 0") < text.index("HashAggregate(final)") \
        < text.index("Exchange hash(nation.n_regionkey)") < text.index("HashAggregate(partial)")
    other = "\n".join(explain(lower_plan(plan, con.config, rank=1, world=2)))
    assert other.startswith("(on rank 0 only)")
    one = "\n".join(explain(lower_plan(plan, con.config)))
    assert "Exchange" not in one and "Gather" not in one and "partial" not in one


def test_distributions_print_as_explain_shows_them():
    assert str(hashed(["x"])) == "hash(x)" and str(BROADCAST) == "broadcast"


def test_statistics_order_is_one_rule():
    """Statistics aggregates and MIN / MAX bounds trust a column's statistics by one rule
    (types.statistics_in_sql_order; it was written twice, differing on decimals and strings)."""
    import pyarrow as pa

    from sluice.types import LType, statistics_in_sql_order as ok
    assert ok(pa.int32(), LType("int32")) and ok(pa.date32(), LType("date"))
    assert ok(pa.decimal128(15, 2), LType("decimal", 2)) and not ok(pa.decimal128(38, 2), LType("decimal", 2))
    assert not ok(pa.uint32(), LType("int64")) and not ok(pa.float64(), LType("float64"))
    assert not ok(pa.timestamp("ms"), LType("timestamp"))
    assert not ok(pa.string(), LType("string")) and ok(pa.string(), LType("string"), strings=True)
