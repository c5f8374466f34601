"""Several machines are several torchrun launchers: two on this machine acting as two nodes
(``--nnodes 2``, c10d rendezvous on 127.0.0.1) run ``-m sluice query``; rank 0 writes the
answer, which equals DuckDB's, and the other node prints nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import tpch_queries


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_nodes(data: list, port: int, tmp_path, args: list[str], wrapped: bool | list = False,
               env: dict | None = None, during=None):
    """Two torchrun launchers of one node each (``--nnodes 2``) running ``sluice query ARGS`` on
    their ``data`` folders -- plain torchrun, or ``sluice torchrun`` when ``wrapped`` (a list: per
    node) --; their
    (stdout, stderr) and processes, ended within two minutes. ``during()`` runs once both started."""
    env = {**os.environ, "TORCH_DISTRIBUTED_DEBUG": "DETAIL", "OMP_NUM_THREADS": "1", **(env or {})}
    nodes = []
    for i, d in enumerate(data):
        wrap = wrapped[i] if isinstance(wrapped, list) else wrapped
        launcher = [sys.executable, "-m", "sluice", "torchrun"] if wrap else \
            [sys.executable, "-m", "torch.distributed.run"]
        command = ["query"] if wrap else ["-m", "sluice", "query"]
        cmd = [*launcher, "--nnodes", "2", "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"t{port}",
               "--log-dir", str(tmp_path / f"logs-{i}"),  # torchrun's own logs, not a torchelastic_* folder in /tmp
               *command, "--data", str(d), "--device", "cpu", "--set", "broadcast_bytes=0",
               "--set", "dist_timeout_s=60", *args]
        nodes.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    try:
        if during is not None:
            during()
        return [p.communicate(timeout=120) for p in nodes], nodes
    finally:
        for p in nodes:
            if p.poll() is None:
                p.kill()


def test_two_torchrun_nodes_answer_like_duckdb(tpch_spread, tmp_path):
    """One node under plain torchrun, the other under ``sluice torchrun`` (torchrun's own parser,
    launcher and rendezvous, called in process): one job, rank 0 writes the answer once."""
    sql = tpch_queries()["q05"]
    out = tmp_path / "q05.parquet"
    port = _free_port()
    done, nodes = _two_nodes([tpch_spread, tpch_spread], port, tmp_path, ["-o", str(out), sql], wrapped=[False, True])
    for p, (_, err) in zip(nodes, done):
        assert p.returncode == 0, err
    assert sorted("wrote" in err for _, err in done) == [False, True]  # rank 0 reports the file
    assert all(o == "" for o, _ in done)
    compare(pq.read_table(out), duckdb_connect(tpch_spread).sql(sql).to_arrow_table(), [0])


def test_two_nodes_with_different_copies_of_a_table_are_refused(tpch_spread, tmp_path):
    """Two nodes whose lineitem differ in content but not in row-group layout once answered with
    a sum over a mixture of the two copies (exit 0): the ranks compared only row-group counts
    and rows. Now the footers' sizes and statistics are compared too, and the query is refused
    in one line on every node."""
    import shutil

    import pyarrow.compute as pc
    other = tmp_path / "other"
    other.mkdir()
    for p in tpch_spread.glob("*.parquet"):
        if p.name != "lineitem.parquet":
            shutil.copy(p, other / p.name)
    li = pq.read_table(tpch_spread / "lineitem.parquet")
    li = li.set_column(li.schema.get_field_index("l_quantity"), "l_quantity",
                       pc.add(li["l_quantity"], pa.scalar(1, li.schema.field("l_quantity").type)))
    pq.write_table(li, other / "lineitem.parquet", row_group_size=10_000)
    assert pq.ParquetFile(other / "lineitem.parquet").num_row_groups == \
        pq.ParquetFile(tpch_spread / "lineitem.parquet").num_row_groups
    done, nodes = _two_nodes([tpch_spread, other], _free_port(), tmp_path, ["select sum(l_quantity) from lineitem"])
    for p, (out, err) in zip(nodes, done):
        assert p.returncode != 0, out
        assert out == ""
        mine = [ln for ln in err.splitlines() if ln.startswith("rank failed: ranks read different data")]
        assert len(mine) == 1, err


def test_sluice_torchrun_tells_an_error_in_one_line(tpch_spread, tmp_path):
    """Plain torchrun prints its own 30-line report (a launcher traceback and a box) below the
    rank's line; under ``sluice torchrun`` each node prints the query's one line, exit 1."""
    done, nodes = _two_nodes([tpch_spread, tpch_spread], _free_port(), tmp_path, ["select nosuch from lineitem"],
                             wrapped=True)
    for p, (out, err) in zip(nodes, done):
        assert p.returncode == 1 and out == ""
        assert err == "plan error: unknown column 'nosuch'\n", err


def test_sluice_torchrun_names_a_rank_killed_mid_query(tpch_spread, tmp_path):
    """Rank 1 killed with SIGKILL in the middle of a query: both nodes end, each with one line
    (the node that lost it names the rank and the signal), and no spill folder is left behind."""
    import signal
    import time
    import uuid

    from test_fail_stop import SLOW, _rank_pid
    mark = uuid.uuid4().hex
    spill = tmp_path / "spill"
    spill.mkdir()

    def rank_1() -> int | None:  # a rank, not its launcher (sluice torchrun)
        return _rank_pid(mark, 1, lambda args: b"torchrun" not in args)

    def kill_rank_1() -> None:
        deadline = time.time() + 90  # every rank joined, the query spilling (force_spill)
        while not any(p.is_file() for p in spill.rglob("*")) and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        pid = rank_1()
        assert pid is not None, "rank 1 is not running"
        os.kill(pid, signal.SIGKILL)

    done, nodes = _two_nodes([tpch_spread, tpch_spread], _free_port(), tmp_path,
                             ["--set", f"spill_dir={spill}", "--set", "force_spill=true", SLOW], wrapped=True,
                             env={"SLUICE_TEST_MARK": mark}, during=kill_rank_1)
    lines = []
    for p, (out, err) in zip(nodes, done):
        assert p.returncode != 0 and out == ""
        assert len(err.splitlines()) == 1, err
        lines.append(err.strip())
    assert "rank failed: rank 1 was killed by SIGKILL; the query stopped on every rank" in lines, lines
    assert all(ln.startswith("rank failed: ") for ln in lines), lines
    time.sleep(0.5)
    assert list(spill.iterdir()) == [], "spill folders left behind"


def test_sluice_torchrun_refuses_a_script(tmp_path):
    res = subprocess.run([sys.executable, "-m", "sluice", "torchrun", "--nproc-per-node", "1", "-m", "x"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "give a sluice command" in res.stderr
