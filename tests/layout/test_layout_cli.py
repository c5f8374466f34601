"""`sluice inspect` and `sluice rewrite` on the command line, including bad input."""

import json
import os
import subprocess
import sys

import pytest


def sluice(*args):
    r = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return r.returncode, r.stdout, r.stderr


def test_inspect_and_rewrite(tpch_dir, tmp_path):
    rc, out, err = sluice("inspect", str(tpch_dir / "orders.parquet"))
    assert rc == 0, err
    assert "pages/chunk" in out and "o_comment" in out
    rc, out, err = sluice("inspect", "--json", str(tpch_dir))
    assert rc == 0, err
    assert len(json.loads(out)) == 8
    rep = tmp_path / "report.json"
    rc, out, err = sluice("rewrite", str(tpch_dir / "orders.parquet"), str(tmp_path / "o.parquet"), "--for", "gpu",
                          "--report", str(rep))
    assert rc == 0, err
    assert "o_orderkey" in out and "ratio" in out
    cols = json.loads(rep.read_text())[0]["columns"]
    assert {c["column"] for c in cols} >= {"o_orderkey", "o_comment"}


@pytest.mark.parametrize("args,expect", [
    (["inspect", "{bad}"], "not a readable parquet"),
    (["inspect", "{missing}"], "does not exist"),
    (["rewrite", "{bad}", "{out}"], "not a readable parquet"),
    (["rewrite", "{nation}", "{out}", "--compression", "zip"], "unknown codec"),
    (["rewrite", "{nation}", "{out}", "--encoding", "fancy"], "unknown encoding"),
    (["rewrite", "{nation}", "{nodir}"], "does not exist"),
    (["rewrite", "{nation}", "{out}", "--row-group-rows", "0"], "row-group-rows"),
])
def test_bad_input_is_one_line(args, expect, tpch_dir, tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 but not really" * 20)
    subst = {"bad": str(bad), "missing": str(tmp_path / "missing.parquet"), "out": str(tmp_path / "out.parquet"),
             "nation": str(tpch_dir / "nation.parquet"), "nodir": str(tmp_path / "no" / "x.parquet")}
    rc, out, err = sluice(*[a.format(**subst) for a in args])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc != 0 and len(lines) == 1 and "Traceback" not in err, err
    assert expect in lines[0].lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]
