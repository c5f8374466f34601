"""RANGE window frames over a TIMESTAMP ORDER BY with INTERVAL offsets of fixed units (weeks
to microseconds) against DuckDB: both directions, NULL keys, partitions, ties; tiny chunks.
Months and years (no one length) are refused in one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def tr_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timestamp_range_frames")
    r = random.Random(11)
    n = 120
    base = 1_600_000_000 * 10**6
    pq.write_table(pa.table({
        "i": list(range(n)), "g": [r.randint(0, 2) for _ in range(n)], "a": [r.randint(-9, 9) for _ in range(n)],
        "t": pa.array([None if r.random() < .08 else base + r.randint(0, 20) * 3_600_000_000 * r.choice([1, 7, 24])
                       + r.choice([0, 0, 1, -1]) for _ in range(n)], pa.timestamp("us"))}),
        root / "t.parquet", row_group_size=40)
    return root


QUERIES = [
    "SELECT i, sum(a) OVER (ORDER BY t RANGE BETWEEN INTERVAL 5 HOURS PRECEDING AND INTERVAL 5 HOURS FOLLOWING) FROM t ORDER BY i",
    "SELECT i, count(*) OVER (PARTITION BY g ORDER BY t RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND CURRENT ROW) FROM t ORDER BY i",
    "SELECT i, min(a) OVER (ORDER BY t DESC RANGE BETWEEN INTERVAL '1 day' PRECEDING AND INTERVAL '7 hours' FOLLOWING) "
    "FROM t ORDER BY i",
    "SELECT i, count(*) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND INTERVAL 1 MICROSECOND FOLLOWING) FROM t ORDER BY i",
    "SELECT i, count(*) OVER (ORDER BY t RANGE BETWEEN INTERVAL 1 WEEK PRECEDING AND INTERVAL 90 MINUTES PRECEDING) FROM t ORDER BY i",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 7}], ids=["default", "tiny"])
@pytest.mark.parametrize("sql", QUERIES)
def test_timestamp_range_frames(sql, settings, tr_dir, connect):
    ours = connect(tr_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(tr_dir).sql(sql).to_arrow_table())


def test_month_offset_refused(tr_dir, connect):
    with pytest.raises(UnsupportedError):
        connect(tr_dir).sql("SELECT count(*) OVER (ORDER BY t RANGE BETWEEN INTERVAL 1 MONTH PRECEDING AND CURRENT ROW) "
                            "FROM t").to_arrow()
