"""Joins the parser hangs on the first FROM item -- DuckDB's FROM-first ``FROM l SEMI JOIN r ON
...`` and parenthesised joins ``((l LEFT JOIN r ...) RIGHT JOIN s ...) ...`` -- read as the
SELECT's own joins, left to right (``sluice.sql.normalize._flatten_leading_joins``), and a group
as a later item joined as one item whose tables keep their names, against DuckDB; an aliased group
stays refused in one line."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def lj_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("leading_joins")
    pq.write_table(pa.table({"a": pa.array([1, 1, 2, 3, None], pa.int32()),
                             "x": pa.array([10, 11, 20, 30, 40], pa.int32())}), root / "l.parquet")
    pq.write_table(pa.table({"b": pa.array([10, 20, 30, None, 20], pa.int32()),
                             "y": pa.array([100, 200, 300, 500, 250], pa.int32())}), root / "r.parquet")
    pq.write_table(pa.table({"a": pa.array([1, 2, None, 4], pa.int32()),
                             "c": pa.array([10, 20, 30, 40], pa.int32())}), root / "s.parquet")
    return root


@pytest.fixture(scope="module")
def lj_duck(lj_dir):
    return duckdb_tables(lj_dir)


QUERIES = {
    "from_semi": "from l semi join r on l.x < r.b and r.y < 300",
    "from_anti": "from l anti join r on l.x < r.b and r.y < 300",
    "from_join_order": "from l join r on l.x = r.b order by l.a, r.y",
    "parenthesised": "select * from (l left join r on l.x = r.b) join s on s.a = l.a",
    "nested_right": "select * from ((l left join r on l.x = r.b) right join s on s.a = l.a) left join r r2 on r2.b = s.c",
    "nested_full": "select l.a, r.b, s.c from ((l full join r on l.x = r.b) left join s on s.a = l.a)",
    "derived_inside": "select * from ((select a from l) q left join r on q.a * 10 = r.b)",
    # a parenthesised group as a later item: one item, its tables visible by their own names
    "group_right_of_left": "select * from l left join (r left join s on r.b = s.c) on l.x = s.c",
    "group_full": "select * from l full join (r join s on r.b = s.c) on l.x = r.b",
    "group_nested": "select l.a, r.b, l2.x from l join ((r join s on r.b = s.c) join l l2 on l2.a = s.a) on l.x = l2.x",
    "group_comma": "select * from s, (l left join r on l.a = r.b)",
    # a later FROM subquery naming an earlier item's column unqualified: LATERAL, as DuckDB reads it
    "lateral_unqualified": "select * from l, (select x + b as z from r where r.b > 10)",
    "group_on_subquery": "select l.a, r.b, s.c from l left join (r join s on true) on exists "
                         "(select 1 from s s2 where s2.a = l.a and s2.c = r.b and s2.c = s.c)",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_leading_joins(name, lj_dir, lj_duck, connect):
    sql = QUERIES[name]
    compare(connect(lj_dir).sql(sql).to_arrow(), lj_duck.sql(sql).to_arrow_table(), check_types=True)


@pytest.mark.parametrize("sql,reason", [("select * from (l join r on l.x = r.b) q", "joins inside a table reference"),
                                        ("select * from s join (l join r on l.x = r.b) using (a)", "parenthesised join")])
def test_aliased_groups_and_using_are_refused(sql, reason, lj_dir, connect):
    with pytest.raises(UnsupportedError, match=reason):
        connect(lj_dir).sql(sql).to_arrow()
