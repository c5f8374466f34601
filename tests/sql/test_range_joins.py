"""Joins on inequalities, against DuckDB: with a conjunct ``probe OP build`` the build side is
sorted once and each probe value finds its run of build rows (sluice.exec.range_join), and
pairs are made and emitted a batch at a time. Every operator, both orientations, NULLs, NaN,
mixed numeric types, dates and timestamps, outer / semi / anti / mark joins, and a join whose
result is far larger than memory should allow for its pairs (it held all of a probe chunk's
pairs at once: three 1,000-row tables reached 24 GB)."""

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables

MEASURE = Path(__file__).parents[1] / "spill" / "measure_rss.py"
NAN = float("nan")


@pytest.fixture(scope="module")
def ineq_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ineq")
    a = pa.table({"k": pa.array(range(9)),
                  "x": pa.array([1, 5, None, 7, 3, 3, 10, -2, 6], pa.int32()),
                  "f": pa.array([0.5, NAN, 2.0, None, -1.0, 7.5, 3.0, 0.0, -0.0]),
                  "d": pa.array([dt.date(2020, 1, i) for i in (1, 5, 9, 3, 7, 2, 8, 4, 6)]),
                  "t": pa.array([dt.datetime(2020, 1, 1, i) for i in (1, 5, 9, 3, 7, 2, 8, 4, 6)])})
    b = pa.table({"j": pa.array(range(7)),
                  "y": pa.array([2, 5, 8, None, 3, -5, 6], pa.int64()),
                  "g": pa.array([decimal.Decimal(v) for v in ("0.5", "2.25", "7.50", "-1", "3.00", "9.99", "0")],
                                pa.decimal128(5, 2)),
                  "h": pa.array([1.0, NAN, None, 2.5, -0.0, 8.0, 3.0], pa.float32()),
                  "lo": pa.array([dt.date(2020, 1, i) for i in (1, 3, 5, 2, 4, 6, 8)]),
                  "hi": pa.array([dt.date(2020, 1, i) for i in (2, 6, 9, 3, 4, 8, 9)]),
                  "t0": pa.array([dt.datetime(2020, 1, 1, i) for i in (0, 2, 4, 6, 8, 1, 3)])})
    pq.write_table(a, root / "a.parquet", row_group_size=4)
    pq.write_table(b, root / "b.parquet", row_group_size=3)
    pq.write_table(pa.table({"z": pa.array([], pa.int32())}), root / "e.parquet")
    return root


@pytest.fixture(scope="module")
def ineq_duck(ineq_dir):
    return duckdb_tables(ineq_dir)


QUERIES = {
    "lt": "select k, j from a, b where a.x < b.y",
    "le": "select k, j from a join b on a.x <= b.y",
    "gt": "select k, j from a, b where a.x > b.y",
    "ge": "select k, j from a, b where b.y >= a.x",
    "band": "select k, j from a, b where a.x > b.y - 2 and a.x < b.y + 2",
    "float_nan": "select k, j from a, b where a.f < b.h",
    "float_decimal": "select k, j from a, b where a.f >= b.g",
    "int_decimal": "select k, j from a, b where a.x > b.g",
    "dates_between": "select k, j from a, b where a.d >= b.lo and a.d <= b.hi",
    "timestamps": "select k, j from a, b where a.t > b.t0 and a.x <> b.y",
    "with_more": "select k, j, a.x + b.y from a, b where a.x < b.y and a.f < 5 and b.j % 2 = 0",
    "left_join": "select k, j from a left join b on a.x < b.y and b.j > 2",
    "right_join": "select k, j from a right join b on a.x >= b.y",
    "full_join": "select k, j from a full join b on a.x > b.y + 4",
    "exists": "select k from a where exists (select 1 from b where b.y > a.x)",
    "not_exists": "select k from a where not exists (select 1 from b where b.y <= a.x)",
    "mark": "select k, exists (select 1 from b where b.h > a.f) from a",
    "count_below": "select k, (select count(*) from b where b.y < a.x) from a",
    "empty_build": "select k from a, e where a.x < e.z",
    "decimal_scales": "select k, j from a, b where a.x * 1000000000000 < b.g",  # different scales: plain compare
    "three_way": "select count(*), sum(a1.k + a2.k + b.j) from a a1, a a2, b where a1.x < a2.x and a2.x < b.y "
                 "and a1.f <= b.h",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_range_joins(name, ineq_dir, ineq_duck, connect, edge_settings):
    sql = QUERIES[name]
    compare(connect(ineq_dir, **edge_settings).sql(sql).to_arrow(), ineq_duck.sql(sql).to_arrow_table())


def test_a_large_inequality_join_streams(tpch_dir, tpch_duck):
    """3.5 M result rows of 20 M pairs: emitted a batch at a time, the process grows by little
    (it grew by about 700 MiB holding a probe chunk's pairs)."""
    sql = ("select count(*), sum(p_size) from part p, supplier s where p.p_size < s.s_nationkey "
           "and s.s_acctbal > p.p_retailprice")
    out = subprocess.run([sys.executable, str(MEASURE), str(tpch_dir), sql, json.dumps({"chunk_rows": 65536})],
                         capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["rows"] == [list(x) for x in tpch_duck.sql(sql).fetchall()]
    assert r["peak"] - r["base"] < 300 << 20, f"grew {(r['peak'] - r['base']) >> 20} MiB"
