"""Spill files never outlive their query: removed after success, after an error and after
Ctrl-C; folders left by a killed process are removed by the next connection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import sluice
from sluice.errors import ConfigError, ExecutionError

HEAVY = "select l_orderkey, sum(l_quantity), max(l_comment) from lineitem group by l_orderkey"


def spill_folders(d):
    return [e for e in os.listdir(d) if e.startswith("sluice-spill-")]


def test_removed_after_success(tpch_dir, tmp_path, connect):
    con = connect(tpch_dir, force_spill=True, spill_dir=str(tmp_path))
    rel = con.sql(HEAVY)
    assert rel.to_arrow().num_rows == 150_000
    op, ctx = rel.last_run
    assert ctx.spill_manager is not None and ctx.spill_manager.bytes_written > 0
    assert os.listdir(tmp_path) == []


def test_removed_after_an_error(tpch_dir, tmp_path, connect):
    con = connect(tpch_dir, force_spill=True, spill_dir=str(tmp_path))
    sql = ("select l_orderkey, count(*) as c from lineitem group by l_orderkey "
           "having count(*) % (count(*) - count(*)) = 0")
    with pytest.raises(ExecutionError, match="division by zero"):
        con.sql(sql).to_arrow()
    assert os.listdir(tmp_path) == []


def test_several_spill_dirs_round_robin(tpch_dir, tmp_path, connect):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    seen: set[str] = set()
    import sluice.io.spill as spill
    orig = spill.SpillFile.__init__

    def spy(self, manager, path):
        seen.add(path.parent.parent.name)
        orig(self, manager, path)
    spill.SpillFile.__init__ = spy
    try:
        connect(tpch_dir, force_spill=True, spill_dir=f"{a},{b}").sql(HEAVY).to_arrow()
    finally:
        spill.SpillFile.__init__ = orig
    assert seen == {"a", "b"}
    assert os.listdir(a) == [] and os.listdir(b) == []


def test_stale_folders_of_dead_processes_are_removed(tpch_dir, tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"sluice-spill-{dead.pid}-deadbeef"
    stale.mkdir()
    (stale / "HashJoin-1.pages").write_bytes(b"x" * 100)
    alive = tmp_path / f"sluice-spill-{os.getppid()}-cafe0000"  # a live process: kept
    alive.mkdir()
    sluice.connect(tpch_dir, spill_dir=str(tmp_path), device="cpu")
    assert not stale.exists() and alive.exists()


def test_bad_spill_dir(tpch_dir, tmp_path):
    with pytest.raises(ConfigError, match="spill_dir"):
        sluice.connect(tpch_dir, spill_dir=str(tmp_path / "missing"))


def test_removed_after_ctrl_c(tpch_dir, tmp_path):
    """SIGINT while the query spills: exit 130, one line, and the spill folder is gone."""
    cmd = [sys.executable, "-m", "sluice.cli", "query", "--data", str(tpch_dir), "--device", "cpu",
           "--set", "force_spill=true", "--set", f"spill_dir={tmp_path}", "--set", "chunk_rows=20000",
           # about 360 M joined pairs: it spills at once and runs for many seconds after
           "select sum(a.l_linenumber + b.l_linenumber) from lineitem a, lineitem b where a.l_suppkey = b.l_suppkey"]
    # SIGINT as a terminal delivers it: a test run started in the background of a script
    # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"},
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and not spill_folders(tmp_path) and p.poll() is None:
        time.sleep(0.05)
    assert spill_folders(tmp_path), "the query never spilled"
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines() == ["interrupted"] and "Traceback" not in err
    assert spill_folders(tmp_path) == []
