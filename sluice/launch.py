"""``--ranks N``: start N ranks of one query on this machine through PyTorch's elastic launcher
(the machinery behind ``torchrun --standalone``: a c10d rendezvous on a free local port, no
restarts), and report what happened in one line.

Each rank is ``python -m sluice.launch_worker JOB``: it joins the process group from the
environment the launcher sets, runs the job, and writes its outcome (``status-RANK.json``)
and, on rank 0, the result (Arrow IPC) into the job's temporary folder, which is removed
afterwards with the launcher's own log folder. Fail-stop: a rank that fails ends the query
on every rank -- an error aborts its process group, so peers waiting on it fail at once; a
rank killed by a signal is seen by the launcher, which stops the others. The first cause is
reported, naming its rank; spill folders of killed ranks are removed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa

from sluice.errors import InternalError, RankFailed, SluiceError

_CATEGORIES = {cls.category: cls for cls in SluiceError.__subclasses__()}


def _quiet() -> None:
    """The launcher's own warnings ("Terminating process ...") are not ours to print."""
    for name in ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing",
                 "torch.distributed.run", "torch.distributed.elastic.agent.server.api",
                 "torch.distributed.elastic.multiprocessing.api"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def run_job(ranks: int, job: dict, spill_dirs: list[str] | None = None, status: dict | None = None,
            timeout_s: float = 60) -> list[pa.Table]:
    """Run ``job`` (see :mod:`sluice.launch_worker`) on ``ranks`` local ranks; rank 0's results
    (and its status into ``status``). Raises the first rank's error (as its own category), or
    RankFailed naming the rank."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    _quiet()
    # The ranks' C++ logs (gloo's "Rank 1 failed to pass monitoredBarrier" when a peer stops)
    # are not ours to print: each rank reports its failure as a status, the launcher one line.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    folder = Path(tempfile.mkdtemp(prefix="sluice-ranks-"))
    try:
        (folder / "job.json").write_text(json.dumps({**job, "launcher": os.getpid(), "timeout_s": timeout_s}))
        cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=ranks, run_id=f"sluice-{uuid.uuid4().hex[:8]}",
                           rdzv_backend="c10d", rdzv_endpoint="127.0.0.1:0", max_restarts=0,
                           monitor_interval=0.1, logs_specs=DefaultLogsSpecs(log_dir=str(folder / "logs")))
        failure = None
        stop = threading.Event()
        stopped: list[int] = []  # ranks the launcher stopped itself (not a cause to report)
        reaper = threading.Thread(target=_stop_stragglers, args=(folder, ranks, stop, stopped), daemon=True)
        reaper.start()
        try:
            elastic_launch(cfg, sys.executable)("-m", "sluice.launch_worker", str(folder))
        except ChildFailedError as e:
            rank, f = min(e.failures.items(), key=lambda kv: kv[1].timestamp)
            failure = (rank, f.exitcode)
        except SignalException as e:  # Ctrl-C (or a kill) of this process: the ranks are stopped
            if e.sigval == signal.SIGINT:
                raise KeyboardInterrupt from None
            raise RankFailed(f"stopped by {signal.Signals(e.sigval).name}; the query stopped on every rank") from None
        except Exception as e:  # noqa: BLE001 - the launcher itself failed (rendezvous, spawn)
            raise RankFailed(f"could not start {ranks} ranks: {str(e).strip().splitlines()[0][:200]}") from None
        finally:
            stop.set()
            reaper.join()
        statuses = {}
        for p in folder.glob("status-*.json"):
            statuses[int(p.stem.split("-")[1])] = json.loads(p.read_text())
        errors = {r: s for r, s in statuses.items() if "error" in s}
        if failure is not None and spill_dirs:
            from sluice.io.spill import clean_stale
            clean_stale(spill_dirs)  # what killed ranks left behind
        came = {int(p.name.split("-")[1]) for p in folder.glob("joining-*")}
        if len(came) < ranks and any("cannot join" in s["error"] for s in errors.values()):
            missing = ", ".join(str(r) for r in range(ranks) if r not in came)
            raise RankFailed(f"rank {missing} did not join the job within {timeout_s:g} s (dist_timeout_s); "
                             "the query stopped on every rank")
        lost = {r: s for r, s in errors.items() if "lost" in s}
        if lost:  # the watchdog's line names the rank that hung (the launcher then stopped it)
            raise RankFailed(lost[min(lost)]["error"].split(": ", 1)[1])
        if failure is not None and failure[0] not in errors and failure[0] not in stopped:
            raise RankFailed(f"rank {failure[0]} {_exit_text(failure[1])}; the query stopped on every rank")
        if errors:
            raise _first_error(errors)
        if 0 not in statuses:
            raise InternalError("rank 0 ended without a result")
        if status is not None:
            status.update(statuses[0])
        return [pa.ipc.open_file(str(folder / f"result-{i}.arrow")).read_all()
                for i in range(statuses[0].get("results", 0))]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: After a rank reported an error, the ranks still running get this long to end by themselves
#: (a peer of a failed rank fails its next collective at once) before the launcher stops them:
#: one that hangs (stopped, or blocked where nothing wakes it) would keep the job open forever.
STRAGGLER_GRACE_S = 2.0


def _stop_stragglers(folder: Path, ranks: int, stop: threading.Event, stopped: list[int]) -> None:
    """Stop (SIGKILL) every rank still running :data:`STRAGGLER_GRACE_S` after the first error
    status appeared in the job's folder, into ``stopped``; nothing while every rank is healthy."""
    failed_at = None
    while not stop.wait(0.1):
        if failed_at is None:
            for p in folder.glob("status-*.json"):
                try:
                    if "error" in json.loads(p.read_text()):
                        failed_at = time.monotonic()
                except (OSError, ValueError):
                    continue
            continue
        if time.monotonic() - failed_at < STRAGGLER_GRACE_S:
            continue
        for r in range(ranks):
            pid_file = folder / f"pid-{r}"
            if (folder / f"status-{r}.json").exists() or not pid_file.exists():
                continue
            try:
                pid = int(pid_file.read_text())
                if str(folder).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():  # still that rank
                    stopped.append(r)
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        return


def _exit_text(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _first_error(errors: dict[int, dict]) -> SluiceError:
    """The cause, not its echoes: an error of the query itself before a rank's lost contact."""
    causes = {r: s for r, s in errors.items() if s.get("category") != RankFailed.category}
    pick = causes or errors
    rank = min(pick)
    s = pick[rank]
    cls = _CATEGORIES.get(s.get("category"), InternalError)
    text = s["error"].split(": ", 1)[1] if ": " in s["error"] else s["error"]
    same = len({v["error"] for v in pick.values()}) == 1 and len(pick) > 1
    return cls(text if same or cls is RankFailed else f"{text} (rank {rank})")


def run_cli(ranks: int, argv: list[str], spill_dirs: list[str] | None = None, timeout_s: float = 60) -> int:
    """``sluice query ... --ranks N``: the same command on N ranks; rank 0 prints."""
    run_job(ranks, {"kind": "cli", "argv": argv}, spill_dirs, timeout_s=timeout_s)
    return 0
