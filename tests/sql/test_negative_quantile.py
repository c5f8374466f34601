"""QUANTILE_DISC with a negative quantile against DuckDB: |q| of the values sorted descending
(NULLs still skipped), -0.0 as 0, by group, over integers, doubles, strings and timestamps;
tiny chunks and forced spilling. A negative QUANTILE_CONT is refused in one line, and a
quantile beyond [-1, 1] is DuckDB's error."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def nq_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("negative_quantile")
    r = random.Random(25)
    n = 200
    pq.write_table(pa.table({
        "g": [r.randint(0, 5) for _ in range(n)],
        "x": [None if r.random() < .1 else r.randint(-50, 50) for _ in range(n)],
        "f": [None if r.random() < .1 else r.choice([r.random(), -0.0, 2.5]) for _ in range(n)],
        "s": [None if r.random() < .1 else r.choice(["a", "b", "é", ""]) for _ in range(n)],
        "t": pa.array([None if r.random() < .1 else r.randint(0, 10**12) for _ in range(n)], pa.timestamp("us")),
    }), root / "t.parquet", row_group_size=45)
    return root


QUERIES = [
    "SELECT quantile_disc(x, -0.25), quantile_disc(x, 0.75), quantile_disc(x, -0.1), quantile_disc(x, -1), "
    "quantile_disc(x, -0.0), quantile_disc(x, -0.5) FROM t",
    "SELECT g, quantile_disc(x, -0.3), quantile_disc(f, -0.6), quantile_disc(s, -0.2), quantile_disc(t, -0.9) "
    "FROM t GROUP BY g ORDER BY ALL",
    "SELECT quantile_disc(x, -0.4) FROM t WHERE g > 100",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 7}, {"force_spill": True}], ids=["default", "tiny", "spill"])
@pytest.mark.parametrize("sql", QUERIES)
def test_negative_quantile(sql, settings, nq_dir, connect):
    ours = connect(nq_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(nq_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql, error", [("SELECT quantile_cont(x, -0.25) FROM t", UnsupportedError),
                                        ("SELECT quantile_disc(x, -1.5) FROM t", PlanError)])
def test_negative_quantile_refused(sql, error, nq_dir, connect):
    with pytest.raises(error):
        connect(nq_dir).sql(sql).to_arrow()
