"""``--analyze`` with several ranks: every rank's rows and bytes, each exchange's size matrix
(its entries add up to the rows the ranks sent), a network stage, and T_min's network term
once ``sluice calibrate --ranks N`` measured the all-to-all bandwidth."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from sluice.testing.oracle import duckdb_connect


def _sluice(args, env=None):
    return subprocess.run([sys.executable, "-m", "sluice", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_analyze_shows_each_rank_and_the_size_matrix(tpch_spread, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    cal = _sluice(["calibrate", "--data", str(tpch_spread), "--ranks", "2"], env)
    assert cal.returncode == 0, cal.stderr
    assert "all-to-all, 2 ranks" in cal.stdout
    sql = "select l_returnflag, count(*) from lineitem group by 1 order by 1"
    res = _sluice(["query", "--data", str(tpch_spread), "--device", "cpu", "--ranks", "2", "--analyze", sql], env)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "network  busy" in out and "T_min (cached storage)" in out and "no network term" not in out
    table = out[out.index("ranks: 2"):]
    rows = [ln.split() for ln in table.splitlines()[2:4]]
    assert [r[0] for r in rows] == ["0", "1"]
    scanned = sum(int(r[2].replace(",", "")) for r in rows)
    assert scanned == duckdb_connect(tpch_spread).sql("select count(*) from lineitem").fetchall()[0][0]
    m = re.search(r"Exchange hash\(lineitem.l_returnflag\): ([\d,]+) rows.*\n.*from \\ to\s+0\s+1\n(.*)\n(.*)\n",
                  table)
    assert m, table
    sent = int(m.group(1).replace(",", ""))
    matrix = [[int(v.replace(",", "")) for v in ln.split()[1:]] for ln in (m.group(2), m.group(3))]
    assert sum(map(sum, matrix)) == sent and sent > 0
    assert all(len(r) == 2 for r in matrix)


def test_partitioned_join_filters_its_probe_scan_with_every_ranks_build_keys(tpch_spread):
    """The probe scan lies beyond an exchange: its runtime filter holds the build keys of
    every rank (merged), so it removes rows and the answer stays DuckDB's. (Small chunks: a
    scan of a few chunks reads them all ahead at once, before any filter is ready.)"""
    sql = ("select count(*), sum(l_extendedprice) from lineitem join orders on l_orderkey = o_orderkey "
           "where o_orderdate < date '1992-03-01'")
    res = _sluice(["query", "--data", str(tpch_spread), "--device", "cpu", "--ranks", "3", "--set", "broadcast_bytes=0",
                   "--set", "chunk_rows=20000", "--analyze", sql])
    assert res.returncode == 0, res.stderr
    m = re.search(r"runtime filter from join on lineitem.l_orderkey = orders.o_orderkey on l_orderkey "
                  r"\[(\d+), (\d+)\].*removed ([\d,]+) of ([\d,]+) rows", res.stdout)
    assert m, res.stdout
    assert int(m.group(3).replace(",", "")) > 0
    lo, hi = duckdb_connect(tpch_spread).sql("select min(o_orderkey), max(o_orderkey) from orders "
                                             "where o_orderdate < date '1992-03-01'").fetchall()[0]
    assert (int(m.group(1)), int(m.group(2))) == (lo, hi)  # the whole build side's range, not one rank's


def test_packed_exact_filter_merged_across_ranks(tmp_path):
    """Build keys over a span past 16 M values (140,000 keys, every 200th of 28 M): the runtime
    filter is an exact bitmap of packed bits, OR-ed across ranks as they are; it removes the
    probe rows no rank's build holds and the answer stays DuckDB's."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(3)
    pq.write_table(pa.table({"dk": np.arange(140_000, dtype=np.int64) * 200,
                             "w": np.arange(140_000, dtype=np.int64) % 7}), tmp_path / "dim.parquet", row_group_size=20_000)
    k = np.concatenate([rng.integers(0, 28_000_000, 150_000), rng.integers(0, 140_000, 50_000) * 200])
    pq.write_table(pa.table({"k": k, "v": np.arange(k.size, dtype=np.int64)}), tmp_path / "fact.parquet",
                   row_group_size=10_000)
    sql = "select count(*) c, sum(v) s, sum(w) t from fact join dim on k = dk"
    args = ["query", "--data", str(tmp_path), "--device", "cpu", "--ranks", "2", "--set", "broadcast_bytes=0",
            "--set", "chunk_rows=10000", "--set", "scan_mode=pushdown", "--set", "scan_buffer_bytes=1MiB"]
    out = tmp_path / "out.parquet"
    res = _sluice(args + ["--analyze", "-o", str(out), sql])
    assert res.returncode == 0, res.stderr
    m = re.search(r"on k \[0, 27999800\], exact bitmap 3417 KiB: removed ([\d,]+) of ([\d,]+) rows", res.stdout)
    assert m, res.stdout
    assert int(m.group(1).replace(",", "")) > 0
    import pyarrow.parquet as pq2
    assert list(pq2.read_table(out).to_pylist()[0].values()) == list(duckdb_connect(tmp_path).sql(sql).fetchall()[0])
