"""The progress bar of a query on several ranks counts every rank's scans (issue 52 item 6):
each rank's bytes read and to read travel with its watchdog's records, rank 0's bar sums them.
It showed rank 0's share before -- about half the bytes on two ranks."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

import sluice
from sluice.testing.oracle import duckdb_connect


def test_the_bar_on_two_ranks_shows_the_whole_scan(tpch_spread):
    pexpect = pytest.importorskip("pexpect")
    sql = "select count(*), max(l_comment) from lineitem"
    whole = sluice.connect(tpch_spread, device="cpu").sql(sql).bytes_to_scan()
    child = pexpect.spawn(str(Path(sys.executable).with_name("sluice")),
                          ["query", "--data", str(tpch_spread), "--device", "cpu", "--ranks", "2",
                           "--set", "chunk_rows=2048", sql],
                          env={**os.environ, "TERM": "xterm", "COLUMNS": "200", "LINES": "30"},
                          encoding="utf-8", timeout=180, dimensions=(30, 200))
    child.expect(pexpect.EOF)
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", child.before)
    totals = [float(m.group(2)) * {"KiB": 2**10, "MiB": 2**20}[m.group(3)]
              for m in re.finditer(r"scanning.*?([\d.]+)/([\d.]+) (KiB|MiB)", text)]
    assert totals, text
    assert abs(max(totals) - whole) <= 0.06 * 2**20, (totals, whole)  # the whole scan, not rank 0's half
    want = duckdb_connect(tpch_spread).execute(sql).fetchall()[0]
    assert str(want[0]) in text


def test_trace_on_two_ranks_has_one_process_per_rank(tpch_spread, tmp_path):
    """``--trace`` on several ranks: one Chrome trace, a process per rank ("rank 0", "rank 1"),
    each with its own scan and exchange events, on one time axis (rank 0 wrote only its own)."""
    import json
    import subprocess
    out = tmp_path / "trace.json"
    sql = "select l_returnflag, count(*) from lineitem group by l_returnflag order by 1"
    res = subprocess.run([sys.executable, "-m", "sluice", "query", "--data", str(tpch_spread), "--device", "cpu",
                          "--ranks", "2", "--trace", str(out), sql], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    for rank in (0, 1):
        stages = {e["cat"] for e in events if e["pid"] == rank and e["ph"] == "X"}
        assert {"read", "network"} <= stages, (rank, stages)
    starts = [e["ts"] for e in events if e["ph"] == "X"]
    assert 0 <= max(starts) - min(starts) < 120e6  # one time axis, in microseconds
