"""``sluice doctor``: findings on tpchgen-cli files, on files built to have each problem (tiny
row groups, a codec that does not pay, no statistics, many small files, a list column), and
none of the layout findings after ``sluice rewrite`` with the preset it recommends."""

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sluice.layout.doctor import diagnose, format_report
from sluice.layout.rewrite import options_from, rewrite


def doctor(*args):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "doctor", *args], capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return r.returncode, r.stdout, r.stderr


def _problems(report, table):
    return " | ".join(f.problem for f in report.tables[table]["findings"])


def test_doctor_on_tpchgen_files(tpch_dir):
    rc, out, err = doctor(str(tpch_dir), "--for", "gpu")
    assert rc == 0 and err == ""
    assert out.startswith(f"{tpch_dir}: 8 table(s) checked for a GPU")
    assert "lineitem (600,572 rows, 1 file" in out or "lineitem (" in out
    assert "few pages per column chunk" in out and "fix: sluice rewrite" in out and "--for gpu" in out
    rc, out, _ = doctor(str(tpch_dir), "--for", "cpu")
    assert rc == 0 and "checked for the CPU" in out


def test_doctor_finds_each_problem_and_the_rewrite_fixes_the_layout(tmp_path):
    n = 1_200_000
    rng = np.random.default_rng(1)
    t = pa.table({"k": np.arange(n, dtype=np.int64), "noise": rng.integers(0, 2**62, n),
                  "tag": pa.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)])})
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(t, bad / "events.parquet", row_group_size=50_000, compression="snappy",
                   write_statistics=False, data_page_size=1 << 22)
    report = diagnose(bad, "cuda")
    found = _problems(report, "events")
    assert "row groups of 50,000 rows on average, sized for CPUs" in found
    assert "compression that does not pay on noise" in found
    assert "no min/max statistics for k, noise, tag" in found
    pq.write_table(t, bad / "one_page.parquet", row_group_size=n, data_page_size=1 << 30, max_rows_per_page=n)
    assert "few pages per column chunk in k, noise" in _problems(diagnose(bad / "one_page.parquet", "cuda"), "one_page")
    cpu = _problems(diagnose(bad, "cpu"), "events")
    assert "24 row groups of 50,000 rows" in cpu and "few pages" not in cpu

    good = tmp_path / "good"
    good.mkdir()
    rewrite(bad / "events.parquet", good / "events.parquet", options_from("gpu"))
    after = diagnose(good, "cuda")
    assert after.findings == [], format_report(after)
    assert "nothing to fix" in format_report(after)


def test_doctor_many_small_files_and_unqueryable_columns(tmp_path):
    folder = tmp_path / "data" / "clicks"
    folder.mkdir(parents=True)
    for i in range(20):
        pq.write_table(pa.table({"id": [i], "blob": pa.array([b"xy"], pa.binary())}), folder / f"part-{i}.parquet")
    rc, out, _ = doctor(str(tmp_path / "data"))
    assert rc == 0
    assert "20 files averaging" in out
    assert f"fix: sluice query \"select * from '{folder}/**/*.parquet'\" -o clicks.parquet" in out
    assert "columns sluice cannot query: blob (binary)" in out


def test_doctor_bad_input_is_one_line(tmp_path):
    rc, out, err = doctor(str(tmp_path / "missing"))
    assert rc == 1 and out == "" and len(err.strip().splitlines()) == 1 and "does not exist" in err
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    rc, out, err = doctor(str(tmp_path / "x.parquet"))
    assert rc == 1 and out == "" and "not a readable Parquet file" in err


def test_expected_gains_are_quoted_only_for_the_device_they_were_measured_on(tmp_path):
    """The doctor quotes the layout study's gain only where the report's device is the kind it
    was measured on (a CPU so far); a GPU report says it was not measured there (issue 49: it
    used to offer the CPU's `--for gpu` figures as a GPU fix's expected gain)."""
    from sluice.layout import doctor as d

    t = pa.table({"k": np.arange(300_000, dtype=np.int64)})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=10_000)
    gpu = format_report(diagnose(tmp_path, "cuda"))
    assert "expected: not measured on this device (a GPU)" in gpu
    assert "1.85x" not in gpu and "2.3x" not in gpu and "bench/layout.py" not in gpu
    cpu = format_report(diagnose(tmp_path, "cpu"))
    assert "expected: on TPC-H lineitem SF 1 (bench/layout.py on a 2-core CPU" in cpu and "1.85x" in cpu
    assert set(d.MEASURED) == {"cpu"}, "a new measurement needs its device's key and a bench/results file"
