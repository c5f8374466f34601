"""RANGE(...) and GENERATE_SERIES(...) in FROM (sluice/sql/series.py) against DuckDB: bounds
excluded and included, negative steps, empty series, int64's ends, joins and aggregates over
them, aliases; a zero step, non-constant arguments and timestamp series are one-line errors."""

import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables

QUERIES = [
    "select * from range(5)",
    "select range from range(-3, 5) as r order by 1",
    "select sum(i), count(*), min(i), max(i) from generate_series(1, 10, 2) t(i)",
    "select * from generate_series(5, 1, -1)",
    "select * from range(5, 1, -1)",
    "select * from range(-1, -10, -3)",
    "select * from generate_series(-1, -10, -3)",
    "select count(*) from range(1, 5, -1)",
    "select count(*) from generate_series(3, 3)",
    "select count(*) from range(3, 3)",
    "select count(*), sum(range), min(range), max(range) from range(100000)",
    "select * from range(3) a, range(2) b order by 1, 2",
    "select * from range(9223372036854775806, 9223372036854775807)",
    "select * from generate_series(9223372036854775806, 9223372036854775807)",
    "select * from generate_series(-9223372036854775808, -9223372036854775807)",
    "select r.range * 2 from range(3) r where range > 0",
    "select generate_series % 3 as k, count(*) from generate_series(-20, 20) group by k",
    "select t.x, r.range from t join range(4) r on t.x = r.range",
    "select (select count(*) from range(10) r(v) where v < t.x) from t",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = tmp_path_factory.mktemp("series")
    pq.write_table(pa.table({"x": pa.array([0, 1, 3, None, 7, 3], pa.int64())}), root / "t.parquet")
    return root


@pytest.mark.parametrize("sql", QUERIES)
def test_series_as_duckdb(data, connect, edge_settings, sql):
    theirs = duckdb_tables(data).sql(sql).to_arrow_table()
    ours = connect(str(data), **edge_settings).sql(sql).to_arrow()
    compare(ours, theirs, list(range(ours.num_columns)) if "order by" in sql else None)


@pytest.mark.parametrize("sql,error", [
    ("select * from range(0, 10, 0)", PlanError),
    ("select * from range(1.5)", UnsupportedError),
    ("select * from t, range(t.x)", UnsupportedError),
    ("select * from generate_series(date '2020-01-01', date '2020-01-05', interval 1 day)", UnsupportedError),
    ("select * from range(99999999999999999999)", UnsupportedError),
    ("select count(*) from range(1000000000)", UnsupportedError),
])
def test_series_refused_in_one_line(data, connect, sql, error):
    with pytest.raises(error) as ei:
        connect(str(data)).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)
