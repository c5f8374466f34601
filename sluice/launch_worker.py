"""One rank of a job the local launcher started (:mod:`sluice.launch`): run it and
write the outcome where the launcher reads it. Jobs: ``cli`` (a ``sluice`` command line;
rank 0 prints), ``queries`` (query texts on a data folder; rank 0 writes each result and,
with ``analyze``, what every rank did) and ``bandwidth`` (the ranks' all-to-all rate)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from sluice.errors import InternalError, RankFailed, SluiceError
import ctypes
import sluice
from sluice.cli import run


def main(folder: str) -> int:
    root = Path(folder)
    job = json.loads((root / "job.json").read_text())
    _die_with(job.get("launcher"))
    rank = int(os.environ.get("RANK", "0"))
    (root / f"pid-{rank}").write_text(str(os.getpid()))  # the launcher stops a rank left hanging
    status: dict = {}
    # Ctrl-C while torch loads raised KeyboardInterrupt inside pybind11's import machinery, which
    # ends the process with a C++ "terminate called" on stderr: held until the imports are done.
    held: list = []
    signal.signal(signal.SIGINT, lambda *_: held.append(1))
    try:
        import torch  # noqa: F401 -- deferred: loaded here, with Ctrl-C held (a KeyboardInterrupt in pybind11's import ends the process in C++)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if held:
            raise KeyboardInterrupt
        _write_status_when_lost(root, rank)
        from sluice.ranks.group import current_group  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
        (root / f"joining-{rank}").write_text("")  # the launcher names a rank that never came to join
        current_group(job.get("timeout_s", 60))
        (root / f"joined-{rank}").write_text("")
        if job["kind"] == "cli":
            run(job["argv"])  # errors raise: a cli run's own exit code is not used here
        elif job["kind"] == "bandwidth":
            status["bandwidth"] = _bandwidth(job)
        elif job["kind"] == "serve":
            _serve(job, root, rank)
        else:
            status.update(_queries(job, root, rank))
    except BaseException as e:  # noqa: BLE001 - every failure leaves as a status line
        try:
            status = _failure(e)
        except BaseException:  # noqa: BLE001 - e.g. interrupted mid-import: still one status, no traceback
            status = {"error": "interrupted" if isinstance(e, KeyboardInterrupt) else
                      f"internal error: {type(e).__name__}", "category": "internal error"}
    _write_status(root, rank, status)
    sys.stdout.flush()
    os._exit(0)  # the status file says how it went (the launcher would report a non-zero exit as a crash)


def _write_status(root: Path, rank: int | str, status: dict) -> None:
    tmp = root / f".status-{rank}.json"
    tmp.write_text(json.dumps(status))
    tmp.rename(root / f"status-{rank}.json")


def _write_status_when_lost(root: Path, rank: int) -> None:
    """When the ranks' watchdog finds a rank lost or hung (:mod:`sluice.ranks.liveness`), this
    rank's status names it and the process ends (its main thread may be blocked in a
    collective that nothing wakes); the launcher stops whatever rank is still hanging."""
    from sluice.ranks import group  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C

    def lost(line: str, lost_rank: int) -> None:
        _write_status(root, rank, {"error": f"{RankFailed.category}: {line}", "category": RankFailed.category,
                                   "lost": lost_rank})
        sys.stdout.flush()
        os._exit(3)
    group.ON_LOST = lost


def _die_with(launcher: int | None) -> None:
    """This rank ends when the process that launched it does -- also when that one is killed
    with SIGKILL and can stop nobody (Linux: the kernel signals a child whose parent died)."""
    if launcher is None or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != launcher:  # it died before the line above took effect
        os._exit(1)


def _failure(e: BaseException) -> dict:
    """The status of a rank that failed; its process group aborted, so peers waiting on it
    fail now, not at the timeout."""
    if isinstance(e, KeyboardInterrupt):  # the launcher stops its ranks (Ctrl-C): it reports that
        return {"error": "interrupted", "category": "interrupted"}
    err = e if isinstance(e, SluiceError) else InternalError(
        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    from sluice.ranks.group import joined_group  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
    g = joined_group()  # (a rank that failed to join must not try again here)
    if g is not None:
        g.abort()
    return {"error": str(err), "category": err.category}


def _queries(job: dict, root: Path, rank: int) -> dict:
    con = sluice.connect(job["data"], **job.get("settings", {}))
    try:
        return _run_queries(con, job, root, rank, "result")
    finally:
        con.close()


def _run_queries(con, job: dict, root: Path, rank: int, prefix: str) -> dict:
    """The job's queries on ``con``; rank 0 writes each result as ``PREFIX-I.arrow``."""
    import pyarrow as pa  # deferred: loaded with the engine, once main() holds Ctrl-C
    for name, path in job.get("registered", {}).items():
        if con._registered.get(name) != path:
            con.register(name, path)
    ranks, seconds, written = [], [], []
    for i, q in enumerate(job["queries"]):
        t0 = time.perf_counter()
        rel = con.sql(q)
        if job.get("write"):  # rank 0 streams the result into the file (Relation.write)
            written.append(rel.write(*job["write"]))
            seconds.append(time.perf_counter() - t0)
            continue
        table = rel.to_arrow()
        seconds.append(time.perf_counter() - t0)  # rank 0 has the answer when every rank is done
        if rank == 0:
            with pa.ipc.new_file(str(root / f"{prefix}-{i}.arrow"), table.schema) as w:
                w.write_table(table)
            if job.get("analyze"):  # what each rank did (bench/exchange.py reads it)
                ranks.append(rel.last_run[1].rank_stats or None)
    return {"results": 0 if job.get("write") else len(job["queries"]), "rank_stats": ranks, "seconds": seconds,
            "written": written}


#: How often an idle served rank looks for the next query (its latency: a fraction of a query's).
SERVE_POLL_S = 0.005


def _serve(job: dict, root: Path, rank: int) -> None:
    """Ranks kept for a connection (:class:`sluice.launch.RankPool`): one connection, the
    queries ``query-K.json`` as they come, each one's status ``status-K-RANK.json``, until the
    launcher writes ``stop``. A failing query raises out of here: the rank's status says why and
    the pool ends (its group may be broken)."""
    con = sluice.connect(job["data"], **job.get("settings", {}))
    try:
        k = 0
        while not (root / "stop").exists():
            q = root / f"query-{k}.json"
            if not q.exists():
                time.sleep(SERVE_POLL_S)
                continue
            _write_status(root, f"{k}-{rank}", _run_queries(con, json.loads(q.read_text()), root, rank, f"result-{k}"))
            k += 1
    finally:
        con.close()


def _bandwidth(job: dict) -> dict:
    from sluice.ranks.bandwidth import measure  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
    from sluice.ranks.group import current_group  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
    g = current_group()
    device = None
    if job.get("device", "cpu").startswith("cuda"):  # the NCCL data group, a GPU per rank
        import torch  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
        from sluice.ranks.group import device_for_rank  # deferred: loads torch: the worker imports it only once main() holds Ctrl-C
        device = device_for_rank(torch.device("cuda", 0), "cuda")
        torch.cuda.set_device(device)
    group = g.group if device is None else g.data_group(device)
    rates = measure(group, tuple(job["sizes"]), device) if job.get("sizes") else measure(group, device=device)
    return {str(n): bps for n, bps in rates.items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
