"""AVG of TIMESTAMP / TIMESTAMPTZ against DuckDB (expr/functions/timestamp_average.py): exact
over values far apart (1800 to 2200), truncated toward zero below the epoch and rounded half
down above it, by group, over no rows, beside other aggregates; tiny chunks and forced
spilling. AVG of DATE (a TIMESTAMP_NS in DuckDB) is refused in one line."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def ta_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("timestamp_average")
    r = random.Random(47)
    n = 300
    us = [None if r.random() < .1 else r.choice([
        r.randint(-5_364_662_400 * 10**6, 7_258_118_400 * 10**6), r.randint(-3, 3), 1_700_000_000 * 10**6 + r.randint(-9, 9)])
        for _ in range(n)]
    pq.write_table(pa.table({"g": [r.randint(0, 9) for _ in range(n)], "t": pa.array(us, pa.timestamp("us")),
                             "k": [r.randint(0, 2) for _ in range(n)]}), root / "t.parquet", row_group_size=61)
    return root


QUERIES = [
    "SELECT avg(t), avg(t::TIMESTAMPTZ), count(t) FROM t",
    "SELECT g, avg(t), avg(t::TIMESTAMPTZ), min(t), count(*) FROM t GROUP BY g ORDER BY ALL",
    "SELECT g, k, avg(t) FROM t WHERE t BETWEEN TIMESTAMP '1969-12-31 23:59:59.999997' AND TIMESTAMP '1970-01-01 00:00:00.000003' "
    "GROUP BY g, k ORDER BY ALL",
    "SELECT k, avg(t) FROM t WHERE t > TIMESTAMP '2023-11-14' AND t < TIMESTAMP '2023-11-15' GROUP BY k ORDER BY ALL",
    "SELECT avg(t) FROM t WHERE g > 100",
    "SELECT g FROM t GROUP BY g HAVING avg(t) > TIMESTAMP '1990-01-01' ORDER BY ALL",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 7}, {"force_spill": True}], ids=["default", "tiny", "spill"])
@pytest.mark.parametrize("sql", QUERIES)
def test_timestamp_average(sql, settings, ta_dir, connect):
    ours = connect(ta_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(ta_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["SELECT avg(t::DATE) FROM t", "SELECT avg(t) FILTER (WHERE g > 1) FROM t",
                                 "SELECT avg(DISTINCT t) FROM t"])
def test_timestamp_average_refused(sql, ta_dir, connect):
    with pytest.raises(UnsupportedError):
        connect(ta_dir).sql(sql).to_arrow()
