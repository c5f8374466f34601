"""Names and positions as DuckDB binds them: DISTINCT ON (2) is the second select item (it was
the constant 2), a subquery's repeated column names are renamed ``a, a_1, ...`` (two columns
collapsed into one), a function's unit argument is a constant (``date_trunc(s, d)`` over a
column ``s`` once read the column's name as the unit), positions outside the select list are
errors (an ORDER BY position past a UNION's columns was an IndexError)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def names_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    t = pa.table({"a": pa.array([1, 2, 3, 4, 5, 6, None], pa.int32()),
                  "b": pa.array([1, 1, 2, 2, 3, None, 3], pa.int64()),
                  "s": pa.array(["month", "year", "day", "month", None, "x", "y"])})
    pq.write_table(t, root / "t.parquet", row_group_size=3)
    pq.write_table(pa.table({"MyCol": [1, 2], "x": [3, 4]}), root / "m.parquet")
    return root


@pytest.fixture(scope="module")
def names_duck(names_dir):
    return duckdb_tables(names_dir)


QUERIES = {
    "distinct_on_position": "select distinct on (2) a, b from t order by b, a",
    "distinct_on_positions": "select distinct on (2, 3) a, b, a % 2 as p from t order by b, p, a",
    "distinct_on_alias": "select distinct on (k) a, b * 10 as k from t order by k, a desc",
    "duplicate_subquery_names": "select * from (select 42 as a, 44 as a) t",
    "duplicate_names_three": "select * from (select a, b as a, a + 1 as a from t) x",
    "duplicate_name_reachable": "select a_1 from (select a, b as a from t) x",
    "duplicate_name_suffix_taken": "select * from (select a, b as a_1, a as a from t) x",
    "duplicate_cte_names": "with c as (select a, b as a from t) select * from c",
    "duplicate_names_case": "select * from (select a, b as A from t) x",
    "grouped_over_duplicates": "select a, count(*) from (select a, b as a from t) x group by a",
    "duplicate_names_mixed_case_source": "select * from m",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_names_and_positions(name, names_dir, names_duck, connect, edge_settings):
    sql = QUERIES[name]
    ours = connect(names_dir, **edge_settings).sql(sql).to_arrow()
    theirs = names_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, check_types=True)
    if name.startswith("duplicate"):
        assert ours.column_names == theirs.column_names


@pytest.mark.parametrize("sql, error", [
    ("select date_trunc(s, date '2020-05-06') from t", "unsupported: DATE_TRUNC with a unit that is not"),
    ("select date_diff(s, date '2020-05-06', date '2021-01-01') from t", "unsupported: DATE_DIFF with a unit"),
    ("select a from t union select b from t order by 2", "ORDER BY position 2 is not in the select list"),
    ("select a from t order by 3", "ORDER BY position 3 is not in the select list"),
    ("select distinct on (5) a from t", "DISTINCT ON position 5 is not in the select list"),
])
def test_names_and_positions_refused(sql, error, names_dir, connect):
    with pytest.raises(sluice.errors.SluiceError) as e:
        connect(names_dir).sql(sql).to_arrow()
    assert error in f"{e.value.category}: {e.value}"
