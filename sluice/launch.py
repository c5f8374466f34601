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
from sluice.io.spill import clean_stale

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
    folder = Path(tempfile.mkdtemp(prefix="sluice-ranks-"))
    try:
        (folder / "job.json").write_text(json.dumps({**job, "launcher": os.getpid(), "timeout_s": timeout_s}))
        stop = threading.Event()
        stopped: list[int] = []  # ranks the launcher stopped itself (not a cause to report)
        reaper = threading.Thread(target=_stop_stragglers, args=(folder, ranks, stop, stopped), daemon=True)
        reaper.start()
        try:
            failure = _launch(folder, ranks)
        finally:
            stop.set()
            reaper.join()
        statuses = _statuses(folder)
        _raise_failure(folder, ranks, statuses, failure, stopped, timeout_s, spill_dirs)
        if 0 not in statuses:
            raise InternalError("rank 0 ended without a result")
        if status is not None:
            status.update(statuses[0])
        return [pa.ipc.open_file(str(folder / f"result-{i}.arrow")).read_all()
                for i in range(statuses[0].get("results", 0))]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _launch(folder: Path, ranks: int) -> tuple[int, int] | None:
    """Start ``ranks`` workers on ``folder``'s job through PyTorch's elastic launcher and wait for
    them; the first failed rank and its exit code, or None."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs  # deferred: torch.distributed loads only where ranks run
    from torch.distributed.elastic.multiprocessing.api import SignalException  # deferred: torch.distributed loads only where ranks run
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError  # deferred: torch.distributed loads only where ranks run
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch  # deferred: torch.distributed loads only where ranks run

    _quiet()
    # The ranks' C++ logs (gloo's "Rank 1 failed to pass monitoredBarrier" when a peer stops)
    # are not ours to print: each rank reports its failure as a status, the launcher one line.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=ranks, run_id=f"sluice-{uuid.uuid4().hex[:8]}",
                       rdzv_backend="c10d", rdzv_endpoint="127.0.0.1:0", max_restarts=0,
                       monitor_interval=0.1, logs_specs=DefaultLogsSpecs(log_dir=str(folder / "logs")))
    try:
        elastic_launch(cfg, sys.executable)("-m", "sluice.launch_worker", str(folder))
    except ChildFailedError as e:
        rank, f = min(e.failures.items(), key=lambda kv: kv[1].timestamp)
        return rank, f.exitcode
    except SignalException as e:  # Ctrl-C (or a kill) of this process: the ranks are stopped
        if e.sigval == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise RankFailed(f"stopped by {signal.Signals(e.sigval).name}; the query stopped on every rank") from None
    except Exception as e:  # noqa: BLE001 - the launcher itself failed (rendezvous, spawn)
        raise RankFailed(f"could not start {ranks} ranks: {str(e).strip().splitlines()[0][:200]}") from None
    return None


def _statuses(folder: Path, query: int | None = None) -> dict[int, dict]:
    """Each rank's status: of the job (``status-RANK.json``: its end, or the error that ended
    it), or of one query of a served job (``status-QUERY-RANK.json``)."""
    pattern = "status-*.json" if query is None else f"status-{query}-*.json"
    out = {}
    for p in folder.glob(pattern):
        parts = p.stem.split("-")
        if len(parts) == (2 if query is None else 3):
            out[int(parts[-1])] = json.loads(p.read_text())
    return out


def _raise_failure(folder: Path, ranks: int, statuses: dict[int, dict], failure, stopped: list[int],
                   timeout_s: float, spill_dirs: list[str] | None) -> None:
    """The one line for a job that failed (nothing when it did not): a rank that never came to
    join, one the watchdog found hung, one killed by a signal, else the first error's cause."""
    errors = {r: s for r, s in statuses.items() if "error" in s}
    if failure is not None and spill_dirs:
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


class RankPool:
    """``ranks`` local ranks started once for a connection (``sluice.connect(DIR, ranks=N)``)
    that run its queries one after another: each query costs its own time, not the ranks'
    start (torch's import, the rendezvous, the process group: 5-12 s), and the ranks keep
    their footers cached between queries. A query that fails ends the pool (a rank's group may
    be broken); the next query starts a fresh one. :meth:`close` ends it (the connection's
    close; the workers also end with this process)."""

    def __init__(self, ranks: int, job: dict, spill_dirs: list[str] | None, timeout_s: float) -> None:
        self.ranks, self.job, self.spill_dirs, self.timeout_s = ranks, job, spill_dirs, timeout_s
        self.folder: Path | None = None
        self.queries = 0

    def run(self, query: dict) -> tuple[list[pa.Table], dict]:
        """Run one query (``queries``, ``registered``, ``write``, ``analyze`` as a ``queries``
        job's) on the ranks; rank 0's results and status."""
        if self.folder is None:
            self._start()
        k, folder = self.queries, self.folder
        self.queries += 1
        (folder / f".query-{k}.json").write_text(json.dumps(query))
        (folder / f".query-{k}.json").rename(folder / f"query-{k}.json")
        try:
            while True:
                done = _statuses(folder, k)
                if len(done) == self.ranks:
                    break
                if not self._thread.is_alive() or any("error" in s for s in _statuses(folder).values()):
                    self._fail()
                time.sleep(0.005)
            errors = {r: s for r, s in done.items() if "error" in s}
            if errors:
                self._fail()
            return ([pa.ipc.open_file(str(folder / f"result-{k}-{i}.arrow")).read_all()
                     for i in range(done[0].get("results", 0))], done[0])
        except BaseException:
            self.close()
            raise
        finally:
            for p in folder.glob(f"result-{k}-*.arrow"):
                p.unlink(missing_ok=True)

    def _start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sluice-ranks-"))
        self.queries = 0
        (self.folder / "job.json").write_text(json.dumps({**self.job, "kind": "serve", "launcher": os.getpid(),
                                                          "timeout_s": self.timeout_s}))
        self._stop = threading.Event()
        self._stopped: list[int] = []
        self._outcome: dict = {}
        self._reaper = threading.Thread(target=_stop_stragglers, args=(self.folder, self.ranks, self._stop,
                                                                       self._stopped), daemon=True)
        self._reaper.start()
        self._thread = threading.Thread(target=self._launch, name="sluice-ranks", daemon=True)
        self._thread.start()

    def _launch(self) -> None:
        try:
            self._outcome["failure"] = _launch(self.folder, self.ranks)
        except BaseException as e:  # noqa: BLE001 - raised by run() in the caller's thread
            self._outcome["error"] = e

    def _fail(self) -> None:
        """The pool's ranks failed: wait for them to end (the reaper stops stragglers), then
        raise the one line."""
        self._thread.join()
        self._stop.set()
        if "error" in self._outcome:
            raise self._outcome["error"]
        _raise_failure(self.folder, self.ranks, _statuses(self.folder), self._outcome.get("failure"),
                       self._stopped, self.timeout_s, self.spill_dirs)
        raise RankFailed("the ranks ended before the query did; the query stopped on every rank")

    def close(self) -> None:
        """End the ranks (they finish the query they run, if any) and remove the job's folder."""
        if self.folder is None:
            return
        folder, self.folder = self.folder, None
        (folder / "stop").touch()
        self._thread.join(timeout=self.timeout_s)
        self._stop.set()
        if self._thread.is_alive():  # a rank that does not end: stopped as a straggler would be
            for r in range(self.ranks):
                try:
                    os.kill(int((folder / f"pid-{r}").read_text()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            self._thread.join(timeout=10)
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
