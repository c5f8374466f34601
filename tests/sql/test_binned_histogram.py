"""HISTOGRAM(x, bins) against DuckDB: integer, double, decimal and text values by group, unsorted
and repeated bounds, no bounds, values above every bound (the type's largest key), NULLs, NaN,
groups with no value (NULL), tiny chunks with spilling; other bounds refused in one line."""

import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def hist_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("histogram")
    r = random.Random(17)
    n = 260
    pq.write_table(pa.table({
        "g": [r.randint(0, 5) for _ in range(n)],
        "i": pa.array([None if r.random() < .1 else r.randint(-30, 80) for _ in range(n)], pa.int32()),
        "b": pa.array([r.randint(-2 ** 40, 2 ** 40) for _ in range(n)], pa.int64()),
        "f": [None if r.random() < .1 else r.choice([float("nan"), float("inf"), r.uniform(-50, 50)]) for _ in range(n)],
        "d": pa.array([None if r.random() < .1 else Decimal(r.randint(-9999, 9999)).scaleb(-2) for _ in range(n)],
                      pa.decimal128(8, 2)),
        "s": [None if r.random() < .1 else r.choice(["a", "aa", "b", "c", "zz", ""]) for _ in range(n)]}),
        root / "t.parquet", row_group_size=43)
    return root


HISTS = ["histogram(i, [10, -5, 40, 10, 60])", "histogram(i, [])", "histogram(i::TINYINT, [])", "histogram(d, [])",
         "histogram(i, [100])", "histogram(b, [0, 2000])",
         "histogram(i, [0, 3000000000])", "histogram(f, [-10, 0.5, 20])", "histogram(d, [-10, 0, 50.5])",
         "histogram(s, ['a', 'b', 'c'])", "histogram(i::SMALLINT, [1, 2])"]


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 16, "force_spill": True}])
def test_binned_histogram(settings, hist_dir, connect):
    cols = ", ".join(f"{h} h{k}" for k, h in enumerate(HISTS))
    for sql in [f"SELECT g, {cols} FROM t GROUP BY g ORDER BY g", f"SELECT {cols} FROM t",
                f"SELECT g, {cols} FROM t WHERE g = 5 OR i > 1000 GROUP BY g ORDER BY g",
                "SELECT histogram(i, [10, 20]) FROM t WHERE g = 2"]:
        compare(connect(hist_dir, **settings).sql(sql).to_arrow(), duckdb_connect(hist_dir).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql, error, match", [
    ("SELECT histogram(i, [10, NULL]) FROM t", PlanError, "cannot be NULL"),
    ("SELECT histogram(i, (SELECT [1, 2])) FROM t", UnsupportedError, "constant list"),
    ("SELECT histogram(i, [g]) FROM t", UnsupportedError, "not constants"),
    ("SELECT histogram(s, [1, 2]) FROM t", UnsupportedError, "HISTOGRAM of a string"),
])
def test_refused(sql, error, match, hist_dir, connect):
    with pytest.raises(error, match=match) as ei:
        connect(hist_dir).sql(sql).to_arrow()
    assert "\n" not in str(ei.value)
