"""--analyze, --plot, --trace and `sluice calibrate` from the command line."""

import json
import os
import subprocess
import sys


def sluice(*args, env=None):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})})
    return r.returncode, r.stdout, r.stderr


Q6 = ("select sum(l_extendedprice * l_discount) from lineitem where l_shipdate >= date '1994-01-01' "
      "and l_shipdate < date '1995-01-01' and l_discount between 0.05 and 0.07 and l_quantity < 24")


def test_calibrate_then_analyze_plot_trace(tpch_dir, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    rc, out, err = sluice("calibrate", "--data", str(tpch_dir), env=env)
    assert rc == 0, err
    assert "storage read, cold" in out and "page-cached" in out
    cal = json.loads((tmp_path / "cache" / "sluice" / "calibration.json").read_text())
    entry = cal[str(tpch_dir.resolve())]
    assert entry["read_cold_bps"] > 0 and entry["read_cached_bps"] > 0

    png, trace = tmp_path / "t.png", tmp_path / "t.json"
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--analyze", "--plot", str(png),
                          "--trace", str(trace), Q6, env=env)
    assert rc == 0, err
    assert "Scan lineitem" in out and "rows=" in out and "read " in out and "compressed" in out
    assert "bound by:" in out and "T_min (cached storage)" in out and "achieved" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = json.loads(trace.read_text())["traceEvents"]
    cats = {e.get("cat") for e in events}
    assert {"read", "decode", "operator"} <= cats
    assert {"Scan", "HashAggregate"} <= {e["name"] for e in events if e.get("cat") == "operator"}
    assert sorted(os.listdir(tmp_path)) == ["cache", "t.json", "t.png"]


def test_analyze_without_calibration_says_how(tpch_dir, tmp_path):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--analyze", "select count(*) from orders",
                          env={"XDG_CACHE_HOME": str(tmp_path)})
    assert rc == 0, err
    assert "sluice calibrate" in out


def test_bad_plot_name(tpch_dir, tmp_path):
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--plot", str(tmp_path / "x.jpg"), "select 1")
    assert rc != 0 and len(err.strip().splitlines()) == 1 and ".png" in err


def test_timeline_bins_conserve_bytes():
    from sluice.metrics import Recorder
    r = Recorder()
    t0 = r.t0
    r.add("read", t0 + 0.0, t0 + 0.3, 3000)
    r.add("decode", t0 + 0.1, t0 + 0.2, 1000)
    r.t_end = 0.4
    centres, bw, util = r.timeline(bins=40)
    width = 0.4 / 40
    assert abs(sum(bw["read"]) * width - 3000) < 1e-6
    assert abs(sum(bw["decode"]) * width - 1000) < 1e-6
    assert abs(sum(util["read"]) * width - 0.3) < 1e-9


def test_trace_marks_scan_mode_decisions(tpch_dir, tmp_path):
    trace = tmp_path / "m.json"
    rc, out, err = sluice("query", "--data", str(tpch_dir), "--device", "cpu", "--set", "scan_mode=auto",
                          "--set", "chunk_rows=10000", "--set", "adapt_min_slices=1", "--analyze", "--trace",
                          str(trace), Q6)
    assert rc == 0, err
    assert "modes: " in out and "policy: sample direct@0" in out
    marks = [e["name"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "mode"]
    assert marks and marks[0] == "lineitem: direct from slice 0"
