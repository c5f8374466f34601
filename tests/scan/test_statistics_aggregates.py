"""MIN / MAX / COUNT(*) over a whole table from row-group statistics (``stats_aggregates``):
answers equal DuckDB's with it on and off; it is used only where the statistics are exact, and
every other case reads the rows."""

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.exec.operators import StatisticsOp
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def stats_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    n = 5000
    t = pa.table({
        "i": pa.array([None if k % 13 == 0 else (k * 7919) % 10007 - 5000 for k in range(n)], pa.int64()),
        "s16": pa.array([k % 300 - 150 for k in range(n)], pa.int16()),
        "d": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=(k * 31) % 9000) for k in range(n)]),
        "p": pa.array([decimal.Decimal((k * 17) % 100000 - 50000).scaleb(-2) for k in range(n)], pa.decimal128(12, 2)),
        "f": pa.array([k / 3 - 100 for k in range(n)]),  # floats: NaN would order above every number
        "s": pa.array([f"v{(k * 13) % 997}" for k in range(n)]),
        "u": pa.array([k % 300 for k in range(n)], pa.uint32()),
        "allnull": pa.array([None if k < 1000 else k for k in range(n)], pa.int32()),  # first group: no stats
    })
    pq.write_table(t, root / "t.parquet", row_group_size=1000)
    pq.write_table(t, root / "nostats.parquet", row_group_size=1000, write_statistics=["s16"])
    pq.write_table(t.slice(0, 0), root / "empty.parquet")
    return root


FROM_STATS = {
    "min_max_count": "select min(i), max(i), count(*) from t",
    "every_type": "select min(s16), max(d), min(p), max(p), min(d) from t",
    "through_projection": "select max(x), min(y) from (select i as x, d as y from t)",
    "some_stats_written": "select min(s16), max(s16) from nostats",
}
FROM_ROWS = {
    "filtered": "select min(i), max(i) from t where s16 > 0",
    "grouped": "select s16 % 3, min(i) from t group by 1",
    "string": "select min(s), max(s) from t",
    "float": "select min(f), max(f) from t",
    "unsigned": "select max(u) from t",
    "count_column": "select count(i) from t",
    "no_stats": "select min(i) from nostats",
    "null_group_without_stats": "select min(allnull), max(allnull) from t",
    "expression": "select max(i + 1) from t",
    "empty": "select min(a), count(*) from (select i as a from empty)",
}


@pytest.mark.parametrize("on", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("name", sorted({**FROM_STATS, **FROM_ROWS}))
def test_statistics_aggregates_answer_as_duckdb(name, on, stats_dir, connect):
    sql = {**FROM_STATS, **FROM_ROWS}[name]
    rel = connect(stats_dir, stats_aggregates=on).sql(sql)
    compare(rel.to_arrow(), duckdb_connect(stats_dir).sql(sql).to_arrow_table())
    used = any(isinstance(o, StatisticsOp) for o in rel.last_run[0].walk())
    assert used == (on and name in FROM_STATS)
