"""ENTROPY against DuckDB: over integers, strings, doubles (NaN equal to NaN, -0.0 to 0.0, as
DuckDB's map counts them), nested lists, NULLs skipped, by group and over no rows (0, not
NULL), in expressions and HAVING; tiny chunks and forced spilling."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def ent_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("entropy")
    r = random.Random(9)
    n = 400
    pq.write_table(pa.table({
        "g": [r.randint(0, 6) for _ in range(n)],
        "k": [None if r.random() < .1 else r.randint(0, 9) for _ in range(n)],
        "s": [None if r.random() < .1 else r.choice(["a", "b", "", "é", "語"]) for _ in range(n)],
        "f": [r.choice([0.0, -0.0, 1.5, float("nan"), None, 2.25]) for _ in range(n)],
        "l": [None if r.random() < .1 else [r.randint(0, 2) for _ in range(r.randint(0, 2))] for _ in range(n)],
    }), root / "t.parquet", row_group_size=57)
    return root


QUERIES = [
    "select entropy(k), entropy(s), entropy(f), entropy(l), entropy(NULL), entropy(1) from t",
    "select g, entropy(k), entropy(s || 'x'), entropy(f), count(*) from t group by g",
    "select entropy(k) from t where g > 100",
    "select entropy(k) + 1, entropy(k % 3) * 2 from t",
    "select g from t group by g having entropy(k) > 2.8",
]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 7}, {"force_spill": True}], ids=["default", "tiny", "spill"])
@pytest.mark.parametrize("sql", QUERIES)
def test_entropy(sql, settings, ent_dir, connect):
    ours = connect(ent_dir, **settings).sql(sql).to_arrow()
    compare(ours, duckdb_connect(ent_dir).sql(sql).to_arrow_table())
