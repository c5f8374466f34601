"""Outer joins whose ON condition holds subqueries reading both sides (joined by row ids:
``sluice.sql.outer_on``), against DuckDB: LEFT / RIGHT / FULL, EXISTS / NOT EXISTS, IN / NOT IN
(NULLs on either side of IN), scalar subqueries compared with a column of each side, subqueries
under OR, plain conjuncts beside them, duplicate rows on both sides, and an empty side. ON with
NULL is no match; a left (right) row matching several right (left) rows appears once per match.
Also a correlated ``x IN (subquery)`` inside OR, CASE or the select list: NULL-aware per outer row;
and subqueries in an aggregate's FILTER or arguments, joined to the aggregate's input rows."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables


def write_tables(root, row_group_size: int = 2) -> None:
    """l, r, s and an empty e: NULLs on both sides of every comparison, duplicate rows."""
    pq.write_table(pa.table({"a": pa.array([1, 1, 2, 3, None, 2], pa.int32()),
                             "x": pa.array([10, 11, 20, 30, 40, 20], pa.int32())}), root / "l.parquet",
                   row_group_size=row_group_size)
    pq.write_table(pa.table({"b": pa.array([10, 20, 30, 40, None, 20], pa.int32()),
                             "y": pa.array([100, 200, 300, 400, 500, 200], pa.int32())}), root / "r.parquet",
                   row_group_size=2 * row_group_size)
    pq.write_table(pa.table({"a": pa.array([1, 1, 2, None, 3], pa.int32()),
                             "b": pa.array([10, 20, 20, 30, None], pa.int32())}), root / "s.parquet",
                   row_group_size=row_group_size)
    pq.write_table(pa.table({"b": pa.array([], pa.int32()), "y": pa.array([], pa.int32())}), root / "e.parquet")


@pytest.fixture(scope="module")
def oj_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("outer_on")
    write_tables(root)
    return root


@pytest.fixture(scope="module")
def oj_duck(oj_dir):
    return duckdb_tables(oj_dir)


QUERIES = {
    "left_exists": "select l.a, l.x, r.b from l left join r on exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "right_exists": "select l.a, l.x, r.b, r.y from l right join r on exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "full_exists": "select l.a, l.x, r.b, r.y from l full join r on exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "left_not_exists": "select l.a, l.x, r.b from l left join r on not exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "full_not_exists": "select * from l full outer join r on not exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "left_in": "select l.a, l.x, r.b from l left join r on l.a in (select s.a from s where s.b = r.b)",
    "left_in_right_column": "select l.a, l.x, r.b from l left join r on r.b in (select s.b from s where s.a = l.a)",
    "left_not_in": "select l.a, l.x, r.b from l left join r on r.b not in (select s.b from s where s.a = l.a)",
    "full_not_in": "select l.a, l.x, r.b from l full join r on r.b not in (select s.b from s where s.a = l.a)",
    "plain_and_in": "select l.a, l.x, r.b from l left join r on l.x > 10 and r.b in (select s.b from s where s.a = l.a)",
    "equi_and_exists": "select l.a, l.x, r.b, r.y from l full join r on l.x = r.b and exists "
                       "(select 1 from s where s.a = l.a or s.b = r.y)",
    "scalar_both": "select l.a, l.x, r.b from l left join r on r.b = (select max(s.b) from s where s.a = l.a and s.b <= r.b)",
    "scalar_count": "select l.a, r.b from l right join r on (select count(*) from s where s.a = l.a and s.b = r.b) > 0",
    "exists_or_plain": "select l.a, l.x, r.b from l left join r on l.x = r.b or exists "
                       "(select 1 from s where s.a = l.a and s.b = r.b)",
    "two_subqueries": "select l.a, l.x, r.b from l full join r on exists (select 1 from s where s.a = l.a) "
                      "and r.b in (select s.b from s where s.a = l.a)",
    "empty_right": "select l.a, l.x, e.b from l left join e on exists (select 1 from s where s.a = l.a and s.b = e.b)",
    "empty_full": "select l.a, e.b from l full join e on exists (select 1 from s where s.a = l.a and s.b = e.b)",
    "aggregated": "select l.a, count(r.b), sum(r.y) from l left join r on exists "
                  "(select 1 from s where s.a = l.a and s.b = r.b) group by l.a",
    "then_inner": "select l.a, r.b, s.a from l left join r on exists (select 1 from s where s.a = l.a and s.b = r.b) "
                  "join s on s.b = l.x",
    "in_derived": "select * from (select l.a, r.b from l left join r on r.b in (select s.b from s where s.a = l.a)) q "
                  "where q.a is not null",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_outer_join_on_subqueries(name, oj_dir, oj_duck, connect, edge_settings):
    sql = QUERIES[name]
    compare(connect(oj_dir, **edge_settings).sql(sql).to_arrow(), oj_duck.sql(sql).to_arrow_table(), check_types=True)


SEMI_ANTI = {
    "semi_exists": "select l.a, l.x from l semi join r on exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "anti_exists": "select l.a, l.x from l anti join r on exists (select 1 from s where s.a = l.a and s.b = r.b)",
    "semi_not_in": "select * from l semi join r on r.b not in (select s.b from s where s.a = l.a)",
    "anti_in_plain": "select * from l anti join r on l.x < r.b and r.b in (select s.b from s where s.a = l.a)",
    "anti_empty": "select * from l anti join e on exists (select 1 from s where s.a = l.a and s.b = e.b)",
}


@pytest.mark.parametrize("name", list(SEMI_ANTI))
def test_semi_anti_join_on_subqueries(name, oj_dir, oj_duck, connect):
    sql = SEMI_ANTI[name]
    compare(connect(oj_dir).sql(sql).to_arrow(), oj_duck.sql(sql).to_arrow_table(), check_types=True)


CORRELATED = {
    # the outer join sits inside a correlated subquery (or LATERAL) and its ON reads the outer row too
    "lateral_left": "select o.x, q.a, q.b from l o left join lateral (select l.a, r.b from l left join r on exists "
                    "(select 1 from s where s.a = l.a and s.b = r.b and s.a = o.a)) q on true",
    "lateral_semi": "select o.x, q.a, q.x from l o left join lateral (select l.a, l.x from l semi join r on exists "
                    "(select 1 from s where s.a = l.a and s.b = r.b and s.a = o.a)) q on true",
    "lateral_anti": "select o.x, q.a, q.x from l o left join lateral (select l.a, l.x from l anti join r on exists "
                    "(select 1 from s where s.a = l.a and s.b = r.b and s.a = o.a)) q on true",
    "scalar_count": "select o.x, (select count(*) from l left join r on exists "
                    "(select 1 from s where s.a = l.a and s.b = r.b) where l.x = o.x) from l o",
    "scalar_outer_in_on": "select o.x, (select count(r.b) from l left join r on exists "
                          "(select 1 from s where s.a = o.a and s.b = r.b) where l.x = o.x) from l o",
    "exists_semi": "select o.x, exists (select * from l semi join r on l.x = r.b and l.a = o.a) from l o",
}


@pytest.mark.parametrize("name", list(CORRELATED))
def test_correlated_outer_join_on_subqueries(name, oj_dir, oj_duck, connect):
    sql = CORRELATED[name]
    compare(connect(oj_dir).sql(sql).to_arrow(), oj_duck.sql(sql).to_arrow_table(), check_types=True)


CORRELATED_IN = {
    "select_list": "select l.a, l.x, l.a in (select s.a from s where s.b = l.x) from l",
    "non_equality": "select l.a, l.x, l.a in (select s.a from s where s.b >= l.x) from l",
    "not_in_nulls": "select l.a, l.x, l.x not in (select s.b from s where s.a = l.a) from l",
    "or_in_where": "select l.a, l.x from l where l.x = 40 or l.a in (select s.a from s where s.b > l.x)",
    "or_not_in": "select l.a, l.x from l where l.x = 40 or l.a not in (select s.a from s where s.b > l.x)",
    "case": "select l.a, case when l.a in (select s.a from s where s.b = l.x or s.b is null) then 1 else 2 end from l",
    "in_on_right_side": "select r.b, r.y, r.b in (select s.b from s where s.a = r.y / 100) from r",
    "empty": "select l.a, l.a in (select e.b from e where e.y = l.x), l.a not in (select e.b from e where e.y = l.x) from l",
}


@pytest.mark.parametrize("name", list(CORRELATED_IN))
def test_correlated_in_as_value(name, oj_dir, oj_duck, connect):
    sql = CORRELATED_IN[name]
    compare(connect(oj_dir).sql(sql).to_arrow(), oj_duck.sql(sql).to_arrow_table(), check_types=True)


AGGREGATE_INPUT = {
    "filter_constant": "select sum(x) filter (where a < (select 2)) from l",
    "filter_correlated": "select a, sum(x) filter (where a < (select min(s.a) from s where s.b = l.x)) from l group by a",
    "filter_exists_in": "select a, count(*) filter (where exists (select 1 from s where s.a = l.a)), "
                        "sum(x) filter (where x in (select b from s)) from l group by a",
    "filter_not_in": "select a, count(*) filter (where x not in (select b from s where s.a = l.a)) from l group by a",
    "argument": "select a, sum(x + (select count(*) from s where s.a = l.a)) from l group by a",
}


@pytest.mark.parametrize("name", list(AGGREGATE_INPUT))
def test_subqueries_in_aggregate_input(name, oj_dir, oj_duck, connect):
    sql = AGGREGATE_INPUT[name]
    compare(connect(oj_dir).sql(sql).to_arrow(), oj_duck.sql(sql).to_arrow_table(), check_types=True)
