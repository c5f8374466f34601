"""``finalize(agg(x) EXPORT_STATE)`` -- DuckDB's exported aggregate state finalized at once -- is
``agg(x)``: answered against DuckDB for plain, ordered, filtered and holistic aggregates, by
group and over no rows, with the text's quoting respected; FINALIZE of anything but one
aggregate call stays refused in one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("states")
    r = random.Random(3)
    n = 200
    pq.write_table(pa.table({"g": [r.randint(0, 6) for _ in range(n)],
                             "x": [None if r.random() < .1 else r.randint(-50, 50) for _ in range(n)],
                             "s": [None if r.random() < .1 else r.choice(["a", "b", "é", "", "zz"]) for _ in range(n)]}),
                   root / "t.parquet", row_group_size=33)
    return root


def _same(sql, root, connect):
    ours = connect(root).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)


AGGS = ["sum(x)", "count(x)", "count(*)", "min(s)", "max(x)", "avg(x)", "string_agg(s, '|' ORDER BY s)",
        "list(x ORDER BY x DESC)", "first(x ORDER BY x)", "arg_max(s, x)", "sum(x) FILTER (WHERE x > 0)",
        "median(x)", "stddev_samp(x)", "bool_or(x > 0)", "product(x % 3 + 1)"]


@pytest.mark.parametrize("where", ["", "WHERE x > 1000"])
def test_by_group_and_empty(where, state_dir, connect):
    cols = ", ".join(f"finalize({a} EXPORT_STATE) c{i}" for i, a in enumerate(AGGS))
    _same(f"select g, {cols} from t {where} group by g", state_dir, connect)
    _same(f"select {cols} from t {where}", state_dir, connect)


def test_in_expressions(state_dir, connect):
    _same("select g, finalize(sum(x) EXPORT_STATE) + 1 a, 'finalize(sum(x) EXPORT_STATE)' b, "
          "FINALIZE ( max(x)  export_state ) c from t group by g having finalize(count(*) EXPORT_STATE) > 5",
          state_dir, connect)


@pytest.mark.parametrize("sql", [  # (states themselves, COMBINE: tests/sql/test_agg_states.py)
    "select finalize(sum(x) OVER () EXPORT_STATE) from t",
    "select finalize(abs(x) EXPORT_STATE) from t",
])
def test_states_refused(sql, state_dir, connect):
    with pytest.raises(UnsupportedError, match="EXPORT_STATE") as ei:
        connect(state_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)


def test_distinct_state_is_an_error(state_dir, connect):
    """DuckDB: EXPORT_STATE is not supported for DISTINCT aggregates (a binder error)."""
    sql = "select finalize(sum(DISTINCT x) EXPORT_STATE) from t"
    with pytest.raises(Exception, match="DISTINCT"):
        duckdb_connect(state_dir).sql(sql).fetchall()
    with pytest.raises(PlanError, match="DISTINCT"):
        connect(state_dir).sql(sql).to_arrow()
