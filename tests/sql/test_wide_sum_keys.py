"""A SUM beyond 64 bits (a DECIMAL(18,0) column's total past 9.2e18, DuckDB's HUGEINT range) holds
its exact values for output only -- its tensor is zeros. Used as a sort, group, join or window
key, or as an aggregate's argument, it computed with those zeros: ORDER BY the sum LIMIT 2
returned two arbitrary groups, COUNT(DISTINCT) of it 1 of 40, MAX of it 0. Such a use is now
refused in one line; output, and keys that are not the sum, stay answered as DuckDB's."""

import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables

BIG = [9 * 10 ** 17, -9 * 10 ** 17, 8 * 10 ** 17, 1, 5 * 10 ** 17]


@pytest.fixture(scope="module")
def wide_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("wide_sum")
    r = random.Random(1)
    n = 3000
    pq.write_table(pa.table({
        "g": pa.array([i % 40 for i in range(n)], pa.int32()),
        "v": pa.array([decimal.Decimal(r.choice(BIG)) for _ in range(n)], pa.decimal128(18, 0)),
    }), root / "w.parquet", row_group_size=500)
    return root


SUMS = "(select g, sum(v) s from w group by g) q"


@pytest.mark.parametrize("sql", [
    "select g, sum(v) s from w group by g",
    "select g, sum(v) s from w group by g order by g desc limit 5",
    f"select q.g, q.s from {SUMS} where q.g < 3",
    f"select * from {SUMS} union all select * from {SUMS}",
])
def test_wide_sum_output_equals_duckdb(sql, wide_dir, connect):
    want = duckdb_tables(wide_dir).sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 7}):
        compare(connect(wide_dir, **settings).sql(sql).to_arrow(), want)


@pytest.mark.parametrize("sql", [
    "select g, sum(v) s from w group by g order by s desc, g",
    "select g, sum(v) s from w group by g order by s, g limit 3",
    f"select q.s, count(*) from {SUMS} group by q.s",
    f"select count(distinct q.s) from {SUMS}",
    f"select max(q.s), min(q.s) from {SUMS}",
    f"select q.g, rank() over (order by q.s) from {SUMS}",
    f"select q.g, max(q.s) over () from {SUMS}",
    f"select a.g, b.g from {SUMS.replace(' q', ' a')} join {SUMS.replace(' q', ' b')} on a.s = b.s",
])
def test_wide_sum_as_key_or_argument_is_refused(sql, wide_dir, connect):
    # DuckDB answers; sluice computed with zeros (a wrong answer), now refuses
    assert duckdb_tables(wide_dir).sql(sql).fetchall()
    with pytest.raises(UnsupportedError, match="SUM exceeding 64 bits"):
        connect(wide_dir).sql(sql).to_arrow()
