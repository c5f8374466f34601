"""Row values against subqueries and RIGHT / FULL JOIN ... USING, against DuckDB on generated
data with NULLs in every column: ``(a, b) IN (SELECT ...)`` / NOT IN with the mark join's
three-valued logic per field, ``(a, b) op ANY / ALL (SELECT ...)`` for every op (ordered ones
compare rows as STRUCTs, NULL fields last), ``ROW(a, b)``, and the USING column of a RIGHT
join (the right side's value) and of a FULL join (COALESCE of both). Correlated row
subqueries, which DuckDB refuses, are checked against DuckDB answering the uncorrelated query
of each outer row."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("row_values")
    r = random.Random(11)

    def ints(n, p=0.2):
        return pa.array([None if r.random() < p else r.randint(0, 3) for _ in range(n)], pa.int32())
    pq.write_table(pa.table({"a": ints(14), "b": ints(14), "s": pa.array([r.choice(["p", "q", None]) for _ in range(14)])}),
                   root / "t.parquet", row_group_size=5)
    pq.write_table(pa.table({"x": ints(9), "y": pa.array([None if r.random() < 0.2 else r.randint(0, 3) for _ in range(9)],
                                                         pa.int64()),
                             "z": pa.array([r.choice(["p", "q", None]) for _ in range(9)])}),
                   root / "u.parquet", row_group_size=4)
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int32()), "y": pa.array([1, 2], pa.int64())}), root / "v.parquet")
    return root


@pytest.fixture(scope="module")
def duck(data):
    return duckdb_tables(data)


OPS = ["=", "<>", "<", "<=", ">", ">="]

FORMS = [
    # IN / NOT IN: the select list (TRUE / FALSE / NULL) and WHERE (only TRUE keeps a row)
    "select a, b, (a, b) in (select x, y from u), (a, b) not in (select x, y from u) from t",
    "select a, b from t where (a, b) in (select x, y from u)",
    "select a, b from t where (a, b) not in (select x, y from u)",
    "select a, b from t where not (a, b) in (select x, y from u where x is not null) and a > 0",
    "select a, b from t where (a, b) not in (select x, y from u where x is not null and y is not null)",
    "select a, s, (a, s) in (select x, z from u), (s, a, b) not in (select z, x, y from u) from t",
    "select a, b, row(a, b) in (select x, y from u), row(a, b) in (select (x, y) from u) from t",
    # a subquery of row values compares whole rows as STRUCTs: a NULL field equals a NULL field
    "select a, b, (a, b) not in (select (x, y) from u), (a, b) < all (select row(x, y) from u) from t",
    "select a, b, (a, b) in (select x, y from u union all select 3, NULL), (a, b) in (select x, y from u limit 0) from t",
    "select a, (a, 1) in (select x, y from u) or a is null, coalesce((b, a) not in (select y, x from u), false) from t",
    "select count(*) from t where (a, b) in (select x, y from u) and (b, a) not in (select x, y from u)",
    # constants (DuckDB's own tests' shapes)
    "select (1, 2) in (select x, y from v), (1, 3) in (select x, y from v), (NULL, 2) not in (select x, y from v)",
    "select (0, 0) < any (select 1, 0), (1, 1) <= all (select x, y from v), (2, NULL) > any (select x, y from v)",
] + [f"select a, b, (a, b) {op} any (select x, y from u), (a, b) {op} all (select x, y from u) from t" for op in OPS] + [
    f"select a, s, (s, a) {op} any (select z, x from u where y > 0), (a, s) {op} all (select x, z from u) from t"
    for op in ("<>", "<", ">=")] + [
    "select a, b, (a, b) = any (select x, y from u where false), (a, b) < all (select x, y from u where false) from t",
    "select a, b from t where (a, b) > all (select x, y from v) or (a, b) <> any (select x, y from v)",
    "select a, b, ROW(a, b) < ANY (select x, y from v), row(a, b) >= (1, 2), row(a, NULL) = (a, NULL) from t",
]


@pytest.mark.parametrize("sql", FORMS)
def test_answers_as_duckdb(sql, data, duck, connect):
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 3}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs)


# (sluice's correlated query, DuckDB's uncorrelated one for an outer row (a, b, s))
CORRELATED = [
    ("select a, b, s, (t.a, t.b) {op} {q} (select x, y from u where u.z = t.s) from t",
     "select ({a}, {b}) {op} {q} (select x, y from u where u.z = {s})"),
    ("select a, b, s, (t.a, t.b) in (select x, y from u where u.x >= t.b) from t",
     "select ({a}, {b}) in (select x, y from u where u.x >= {b})"),
]


def _lit(v):
    return "NULL::INT" if v is None else repr(v) if isinstance(v, str) else str(v)


@pytest.mark.parametrize("ours, theirs", CORRELATED)
def test_correlated_per_outer_row(ours, theirs, data, duck, connect):
    rows = duck.sql("select a, b, s from t").fetchall()
    forms = [(op, q) for op in OPS for q in ("any", "all")] if "{op}" in ours else [(None, None)]
    con = connect(data)
    for op, q in forms:
        got = sorted(map(repr, (tuple(r.values()) for r in con.sql(ours.format(op=op, q=q)).to_arrow().to_pylist())))
        want = sorted(repr((a, b, s, duck.sql(theirs.format(op=op, q=q, a=_lit(a), b=_lit(b),
                                                               s="NULL" if s is None else _lit(s))).fetchall()[0][0]))
                      for a, b, s in rows)
        assert got == want, (op, q)


JOINS = [
    "select * from t right join u on false right join (select x as a, y, z from u) w using (a)",
    "select * from t right join (select x as a, y as b, z from u) w using (a, b)",
    "select a, t.a, w.a, b from t right join (select x as a, y as b from u) w using (a, b)",
    "select * from t full join (select x as a, z as s from u) w using (a, s)",
    "select a, s, t.a, w.a, count(*) over (partition by a) from t full join (select x as a, z as s from u) w using (a, s)",
    "select * from t natural full join (select x as a, y, z as s from u) w",
    "select * from t natural right join (select x as a, z as s from u) w where a > 0",
    "select a, count(*) from t full join (select x as a from u) w using (a) group by a",
    "select * from t full join (select x as a, z from u) w using (a) full join (select y as a from u) w2 using (a)",
    "select * from t full join (select y as a, z from u) w using (a) join v on v.x = a",
    "select * from t asof right join (select x as a, x as b, z from u) w using (a, b)",
    "select a, b, t.b, w.b from t asof full join (select x as a, x as b, z from u) w using (a, b)",
]


@pytest.mark.parametrize("sql", JOINS)
def test_right_and_full_join_using(sql, data, duck, connect):
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 3}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs)


def test_not_equal_any_in_where_keeps_only_true(data, duck, connect):
    """DuckDB 2.0.1 keeps the rows whose ``(a, b) <> ANY (...)`` is NULL when it is a WHERE
    conjunct (in the select list the same rows show NULL): sluice keeps only TRUE, as DuckDB
    does for the same test wrapped in COALESCE."""
    sql = "select a, b from t where (a, b) <> any (select x, y from u where x = 1)"
    theirs = duck.sql(sql.replace("where (a, b) <> any (select x, y from u where x = 1)",
                                  "where coalesce((a, b) <> any (select x, y from u where x = 1), false)")).to_arrow_table()
    compare(connect(data).sql(sql).to_arrow(), theirs)


def test_refused_in_one_line(data, connect):
    # DuckDB: (1, 2) <> ANY (SELECT (1, NULL)) is NULL but (1, NULL) <> (1, NULL) false
    with pytest.raises(UnsupportedError, match="row value"):
        connect(data).sql("select (a, b) <> any (select (x, y) from u) from t").to_arrow()


@pytest.mark.parametrize("sql", [
    "select (a, b) in (select x, y, z from u) from t",
    "select (a, b) < any (select * from u) from t",
    "select (a, b) = all (select x from u union all select y from u) from t",
    "select (1, 2) in (select (x, y, y) from u)",
])
def test_column_count_mismatch_is_an_error(sql, data, duck, connect):
    with pytest.raises(Exception):
        duck.sql(sql).fetchall()
    with pytest.raises(PlanError):
        connect(data).sql(sql).to_arrow()
