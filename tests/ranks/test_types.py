"""Every type crosses ranks intact: integers of each width, floats with NaN, decimals (and a
SUM beyond 64 bits, whose exact values travel as digits), dates, timestamps with and without
a zone, booleans and strings with NULLs -- exchanged, joined, grouped, windowed and gathered
in 5-row chunks on 2 and 3 ranks, equal to DuckDB in values and type family."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.launch import run_job
from sluice.testing.oracle import compare, duckdb_connect

D = decimal.Decimal


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed")
    n = 40
    utc = dt.timezone.utc
    t = pa.table({
        "k": pa.array([i % 7 if i % 5 else None for i in range(n)], pa.int32()),
        "i8": pa.array([(i * 37) % 250 - 125 for i in range(n)], pa.int8()),
        "i16": pa.array([i * 999 - 20000 for i in range(n)], pa.int16()),
        "f32": pa.array([i / 3 if i % 4 else None for i in range(n)], pa.float32()),
        "f64": pa.array([float("nan") if i == 3 else i * 1.5 for i in range(n)], pa.float64()),
        "d": pa.array([D(f"{i}.{i:02d}") if i % 6 else None for i in range(n)], pa.decimal128(12, 2)),
        "big": pa.array([D("12345678901234567.89")] * n, pa.decimal128(20, 2)),
        "dt": pa.array([dt.date(1970 + i, 1 + i % 12, 1) if i % 9 else None for i in range(n)]),
        "ts": pa.array([dt.datetime(2020, 1, 1, i % 24, i) if i % 8 else None for i in range(n)], pa.timestamp("us")),
        "tz": pa.array([dt.datetime(2021, 6, 1, i % 24, tzinfo=utc) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "b": pa.array([None if i % 10 == 0 else i % 3 == 0 for i in range(n)], pa.bool_()),
        "s": pa.array([None if i % 11 == 0 else f"str-{i % 13}-é" for i in range(n)], pa.string()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=7)
    return root


QUERIES = {
    "all": "select * from t",
    "grouped": "select k, count(*), sum(i8), sum(i16), min(f32), max(f64), sum(d), min(dt), max(ts), min(tz), "
               "bool_and(b), min(s), max(s) from t group by k",
    "wide_sum_grouped": "select k, sum(big) from t group by k",
    "wide_sum": "select sum(big) from t",
    "distinct": "select distinct s, dt, b from t",
    "join": "select a.k, b.s, a.ts, b.d, a.tz from t a join t b on a.s = b.s and a.dt = b.dt",
    "timestamps": "select k, ts - interval 3 day as x, tz + interval 90 minute as y from t",
    "window": "select k, s, row_number() over (partition by k order by i16) rn, sum(d) over (partition by s) from t",
    "except": "select s, dt from t except select s, dt from t where i16 > 0",
    # MIN / MAX bounds on each rank's scan (minmax_bounds): row groups skipped per rank
    "minmax": "select k, min(i16), max(s), min(dt), max(d) from t group by k",
    "minmax_keyless": "select max(s), min(i8), max(dt) from t where b",
}


@pytest.mark.parametrize("ranks,wire", [(2, "arrow"), (3, "arrow"), (2, "tensor"), (3, "tensor")])
def test_every_type_crosses_ranks_intact(ranks, wire, typed):
    names = sorted(QUERIES)
    job = {"kind": "queries", "data": str(typed), "queries": [QUERIES[q] for q in names],
           "settings": {"device": "cpu", "broadcast_bytes": 0, "chunk_rows": 5, "dist_timeout_s": 60,
                        "exchange_wire": wire}}
    duck = duckdb_connect(typed)
    for name, ours in zip(names, run_job(ranks, job)):
        compare(ours, duck.sql(QUERIES[name]).to_arrow_table(), check_types=True)
