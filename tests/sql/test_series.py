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
    "select count(*), sum(range), min(range), max(range) from range(30000)",  # 10,000 chunks of 3
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


def test_one_long_window_partition_costs_linear_in_its_chunks(data, connect, monkeypatch):
    """A series is numbered by a Window over one partition: it summed the bytes of every chunk
    it held on each new chunk -- quadratic in chunks (range(100000) in 3-row chunks: 43 s for
    30,000 rows, 15 minutes of CI for 100,000). Counted, not timed: Chunk.nbytes calls per chunk."""
    from sluice.chunk import Chunk
    calls = [0]
    nbytes = Chunk.nbytes

    def counted(self):
        calls[0] += 1
        return nbytes.fget(self)
    monkeypatch.setattr(Chunk, "nbytes", property(counted))
    out = connect(str(data), chunk_rows=3).sql("select count(*), sum(range) from range(6000)").to_arrow()
    assert out.column(0).to_pylist() == [6000] and out.column(1).to_pylist() == [sum(range(6000))]
    assert calls[0] < 20 * 2000, calls[0]
