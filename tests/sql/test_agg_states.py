"""Aggregate states (``agg(x) EXPORT_STATE``, FINALIZE, COMBINE, COMBINE_AGGR) against DuckDB:
states printed, kept in CTEs and subqueries, merged pairwise and by group, NULL states of
empty groups, compared, cast, on the default path and in tiny chunks with spilling; the forms
sluice does not answer are refused in one line (or are DuckDB's own binder errors)."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("agg_states")
    r = random.Random(5)
    n = 240
    pq.write_table(pa.table({"g": [r.randint(0, 7) for _ in range(n)],
                             "x": [None if r.random() < .15 else r.randint(-40, 40) for _ in range(n)],
                             "f": [None if r.random() < .1 else r.uniform(-5, 5) for _ in range(n)],
                             "s": [None if r.random() < .1 else r.choice(["a", "b", "é", "", "zz"]) for _ in range(n)]}),
                   root / "t.parquet", row_group_size=37)
    return root


def _same(sql, root, connect, **settings):
    ours = connect(root, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


#: The aggregates whose states sluice answers (``g = 7`` rows filtered away: an empty group's state).
AGGS = ["sum(x)", "min(s)", "max(x)", "count(x)", "count(*)", "avg(x)", "avg(f)", "bool_and(x > 0)",
        "bool_or(x > 30)", "var_samp(f)", "var_pop(x)", "stddev_samp(x)", "stddev_pop(f)", "product(x % 3 + 1)",
        "arg_min(CASE WHEN g < 7 THEN s END, f)", "arg_max(CASE WHEN g < 7 THEN x END, f)"]


def _cte(aggs=AGGS, filtered=True):
    cols = ", ".join(f"{a} FILTER (WHERE g < 7) EXPORT_STATE s{i}" if filtered and not a.startswith("arg_")
                     else f"{a} EXPORT_STATE s{i}" for i, a in enumerate(aggs))  # (ARG_MIN: no FILTER, its CASE)
    return f"WITH st AS (SELECT g, {cols} FROM t GROUP BY g)"


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 16, "force_spill": True}])
def test_printed_and_finalized(settings, state_dir, connect):
    """A state prints as DuckDB prints it (a one-value state its value, else its fields), FINALIZE
    gives the aggregate, by group, over no rows and for a group that filters every row away."""
    states = ", ".join(f"s{i}" for i in range(len(AGGS)))
    finals = ", ".join(f"finalize(s{i}) f{i}" for i in range(len(AGGS)))
    _same(f"{_cte()} SELECT g, {states}, {finals} FROM st ORDER BY g", state_dir, connect, **settings)
    cols = ", ".join(f"{a} EXPORT_STATE s{i}" for i, a in enumerate(AGGS))  # (over no rows: exact)
    _same(f"SELECT {cols} FROM t WHERE x > 1000", state_dir, connect, **settings)


def test_list_states(state_dir, connect):
    # (sorted: a LIST without ORDER BY lists rows in the order they arrive, in DuckDB as in sluice)
    _same("SELECT g, list_sort(finalize(list(s) EXPORT_STATE)) FROM t WHERE g < 3 GROUP BY g ORDER BY g",
          state_dir, connect)
    _same("SELECT list(x) EXPORT_STATE, (list(x) EXPORT_STATE)::BIGINT[] FROM (SELECT max(x) x FROM t)",
          state_dir, connect)  # (one row: a LIST without ORDER BY lists rows as they arrive)
    _same("WITH st AS (SELECT g, list(x) EXPORT_STATE l FROM t WHERE g < 3 GROUP BY g "
          "UNION ALL SELECT 9, list(x) EXPORT_STATE FROM t WHERE g > 100) "
          "SELECT a.g, b.g, list_sort(finalize(combine(a.l, b.l))) FROM st a, st b ORDER BY 1, 2", state_dir, connect)


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 16, "force_spill": True}])
def test_combine_pairs(settings, state_dir, connect):
    """COMBINE of two groups' states (a NULL state is no input) is the aggregate of both groups."""
    finals = ", ".join(f"finalize(combine(a.s{i}, b.s{i})) c{i}" for i in range(len(AGGS)))
    _same(f"{_cte()} SELECT a.g, b.g, {finals} FROM st a, st b WHERE b.g >= a.g ORDER BY 1, 2",
          state_dir, connect, **settings)


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 16, "force_spill": True}])
def test_combine_aggr(settings, state_dir, connect):
    aggs = [a for a in AGGS if not a.startswith(("var", "stddev"))]
    finals = ", ".join(f"finalize(combine_aggr(s{i})) c{i}" for i in range(len(aggs)))
    for where in ("", "WHERE g > 100"):
        _same(f"{_cte(aggs)} SELECT g % 3 b, {finals} FROM st {where} GROUP BY b ORDER BY b",
              state_dir, connect, **settings)
        _same(f"{_cte(aggs)} SELECT {finals} FROM st {where}", state_dir, connect, **settings)
    merged = ", ".join(f"combine_aggr(s{i}) m{i}" for i in range(len(aggs)))
    _same(f"{_cte(aggs)} SELECT g % 2 b, {merged} FROM st GROUP BY b ORDER BY b", state_dir, connect)


@pytest.mark.parametrize("times", ["3", "1", "0", "NULL::BIGINT", "2::SMALLINT"])
def test_combine_aggr_repeated(times, state_dir, connect):
    """COMBINE_AGGR(state, n): each state merged n times (0 or NULL: ignored)."""
    aggs = ["sum(x)", "min(s)", "count(*)", "avg(x)", "bool_or(x > 30)", "product(x % 3 + 1)", "arg_max(x, f)"]
    finals = ", ".join(f"finalize(combine_aggr(s{i}, {times})) c{i}" for i in range(len(aggs)))
    _same(f"{_cte(aggs, filtered=False)} SELECT g % 3 b, {finals} FROM st GROUP BY b ORDER BY b", state_dir, connect)


def test_states_as_values(state_dir, connect):
    """States through UNION ALL, DISTINCT, ORDER BY, =, IS NULL, CAST and TYPEOF."""
    _same("SELECT finalize(combine_aggr(s)) FROM (SELECT sum(x) EXPORT_STATE s FROM t WHERE g = 1 UNION ALL "
          "SELECT sum(x) EXPORT_STATE FROM t WHERE g > 100 UNION ALL SELECT sum(x) EXPORT_STATE FROM t WHERE g = 2)",
          state_dir, connect)
    _same("SELECT DISTINCT s FROM (SELECT g, max(x) EXPORT_STATE s FROM t GROUP BY g) ORDER BY s", state_dir, connect)
    _same("SELECT g, sum(x) EXPORT_STATE = sum(x) FILTER (WHERE g < 4) EXPORT_STATE, "
          "min(s) FILTER (WHERE g < 3) EXPORT_STATE IS NULL, (avg(x) EXPORT_STATE)::VARCHAR, "
          "(count(x) EXPORT_STATE)::INTEGER, typeof(sum(x) EXPORT_STATE) FROM t GROUP BY g ORDER BY g",
          state_dir, connect)


def test_null_states(state_dir, connect):
    """A state a LEFT JOIN leaves NULL prints, casts and finalizes as NULL."""
    _same("WITH st AS (SELECT g, avg(x) EXPORT_STATE a, var_pop(f) EXPORT_STATE b, arg_min(x, f) EXPORT_STATE c "
          "FROM t WHERE g < 4 GROUP BY g) SELECT k.g, st.a, (st.a)::VARCHAR, finalize(st.b), st.c, finalize(st.c) "
          "FROM (SELECT DISTINCT g FROM t) k LEFT JOIN st ON k.g = st.g ORDER BY 1", state_dir, connect)


@pytest.mark.parametrize("sql, error, match", [
    ("SELECT [sum(x) EXPORT_STATE] FROM t", UnsupportedError, "inside a LIST"),
    ("SELECT concat(sum(x) EXPORT_STATE, 'a') FROM t", UnsupportedError, "aggregate state"),
    ("SELECT (sum(x) EXPORT_STATE).value FROM t", PlanError, "aggregate state"),
    ("SELECT finalize(combine(sum(x) EXPORT_STATE, min(x) EXPORT_STATE)) FROM t", PlanError, "COMBINE"),
    ("SELECT finalize(combine_aggr(s)) FROM (SELECT g, var_pop(x) EXPORT_STATE s FROM t GROUP BY g)",
     UnsupportedError, "COMBINE_AGGR"),
    ("SELECT finalize(combine_aggr(s, g)) FROM (SELECT g, sum(x) EXPORT_STATE s FROM t GROUP BY g)",
     UnsupportedError, "repeat count"),
    ("SELECT finalize(combine_aggr(s, -1)) FROM (SELECT g, sum(x) EXPORT_STATE s FROM t GROUP BY g)",
     PlanError, "non-negative"),
    ("SELECT avg(TIMESTAMP '2020-01-01 00:00:00') EXPORT_STATE", UnsupportedError, "states of numbers"),
    ("SELECT finalize({'value': 1})", UnsupportedError, "FINALIZE of a struct"),
    ("SELECT approx_count_distinct(x) EXPORT_STATE FROM t", UnsupportedError, "EXPORT_STATE of APPROX_COUNT_DISTINCT"),
    ("SELECT avg(x::DECIMAL(9,2)) EXPORT_STATE FROM t", UnsupportedError, "AVG state of decimals"),
    ("SELECT finalize(sum(x) OVER () EXPORT_STATE) FROM t", UnsupportedError, "EXPORT_STATE"),
])
def test_refused(sql, error, match, state_dir, connect):
    with pytest.raises(error, match=match) as ei:
        connect(state_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)
