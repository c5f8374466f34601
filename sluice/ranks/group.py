"""The process group of this process: joined once, from the environment torchrun (or the
local launcher, :mod:`sluice.launch`) sets -- ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT``. Nothing here discovers peers or moves bytes itself: the
rendezvous is PyTorch's (c10d), the transport its backends: gloo for control (counts, plan
fingerprints, host bytes) and, on CUDA, an NCCL group for the exchange's device bytes.

Joining waits at most ``dist_timeout_s`` for every peer (a peer lost before it joins ends the
others then). Once joined, a watchdog (:mod:`sluice.ranks.liveness`) ends the query on every
rank when one stops answering or makes no progress for ``dist_timeout_s``; the collectives'
own timeout is only a backstop (:data:`COLLECTIVE_BACKSTOP_S`), so ranks busy between two
collectives for longer than that are not failed. A peer that dies closes its sockets and the
next collective fails at once. On any failure the group is aborted, not destroyed
(``destroy_process_group`` can hang after a peer died).
"""

from __future__ import annotations

import datetime
import hashlib
import os
import sys
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from sluice.errors import ConfigError, RankFailed
from sluice.ranks import liveness
from sluice.ranks.job_env import in_torchrun

#: The collectives' own timeout once the watchdog runs: it only catches what the watchdog
#: cannot see (a rank whose watchdog thread runs while its collective never completes).
COLLECTIVE_BACKSTOP_S = 1800

#: What a rank does when the watchdog finds a rank lost: the local launcher's worker writes its
#: status first (:mod:`sluice.launch_worker`); by default the line goes to stderr and the
#: process ends -- a thread blocked in a collective cannot be woken by an exception.
ON_LOST = None


def _on_lost(line: str, rank: int) -> None:
    if ON_LOST is not None:
        ON_LOST(line, rank)
    try:
        print(f"{RankFailed.category}: {line}", file=sys.stderr, flush=True)
    finally:
        os._exit(1)


@dataclass
class DistGroup:
    """This rank in a job of ``world`` ranks; ``group`` carries control and data (gloo)."""

    rank: int
    world: int
    group: object
    timeout_s: float
    _data: object = None  # the NCCL group of CUDA ranks (created on first use)

    def data_group(self, device: torch.device):
        """Where an exchange's tensor bytes travel: on CUDA an NCCL group over the same ranks
        (each rank's tensors stay on its GPU), created on first use -- every rank reaches its
        first exchange in the same plan order, so the collective creation pairs up; on the
        CPU the control group itself (gloo)."""
        if device.type != "cuda":
            return self.group
        if self._data is None:
            try:
                with liveness.waiting():
                    self._data = dist.new_group(backend="nccl", timeout=datetime.timedelta(seconds=self.timeout_s))
            except Exception as e:  # noqa: BLE001 - no NCCL in this build, or it failed to start
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise RankFailed(f"rank {self.rank} cannot start NCCL for the exchange: {msg[:160]} "
                                 "(exchange_wire=arrow sends rows over gloo)") from None
        return self._data

    def fail(self, cause: BaseException) -> RankFailed:
        """The error of a collective that failed: a peer died, hung or aborted."""
        msg = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        return RankFailed(f"rank {self.rank} lost contact with its peers ({msg[:160]})")

    def check_same_plan(self, fingerprint: str) -> None:
        """Every rank must run the same exchanges in the same order, over the same data: compare
        a hash of the plan's exchanges and one of the data its scans share out (the lines of
        ``fingerprint`` starting ``data ``: row groups and their footers' digests), in one object
        collective per query; ranks that differ are refused in one line saying which part."""
        lines = fingerprint.splitlines()
        data = "\n".join(ln for ln in lines if ln.startswith("data "))
        plan = "\n".join(ln for ln in lines if not ln.startswith("data "))
        digest = tuple(hashlib.sha1(t.encode()).hexdigest()[:16] for t in (plan, data))
        out: list = [None] * self.world
        try:
            with liveness.waiting():
                dist.all_gather_object(out, digest, group=self.group)
        except Exception as e:  # noqa: BLE001 - a peer is gone
            raise self.fail(e) from None
        bad = [r for r, d in enumerate(out) if d != out[0]]
        if not bad:
            return
        if out[bad[0]][0] == out[0][0]:
            raise RankFailed(f"ranks read different data (rank {bad[0]}'s files differ from rank 0's in their row "
                             "groups, sizes or statistics): every rank must see the same copy of the tables")
        raise RankFailed(f"ranks planned different queries (rank {bad[0]} differs from rank 0): "
                         "every rank needs the same data, settings and query")

    def all_objects(self, obj) -> list:
        """``obj`` of every rank, in rank order, on every rank (one object collective)."""
        out: list = [None] * self.world
        try:
            with liveness.waiting():
                dist.all_gather_object(out, obj, group=self.group)
        except Exception as e:  # noqa: BLE001
            raise self.fail(e) from None
        return out

    def gather_objects(self, obj) -> list | None:
        """``obj`` of every rank on rank 0 (None elsewhere); once per query, at its end."""
        out = self.all_objects(obj)
        return out if self.rank == 0 else None

    def abort(self) -> None:
        """Tear the group down on the error path without waiting for peers."""
        try:
            if dist.is_initialized():
                for pg in (self._data, dist.group.WORLD):
                    if pg is not None and hasattr(pg, "abort"):
                        pg.abort()
        except Exception:  # noqa: BLE001 - best effort: the process is about to exit
            pass


_GROUP: DistGroup | None = None


def joined_group() -> DistGroup | None:
    """The group this process has joined, if any -- never a join (an error path must not wait
    for peers that are gone)."""
    return _GROUP


#: Launchers other than torchrun, by the variables they set: (name, task-count variable, rank variable).
FOREIGN_LAUNCHERS = (("Slurm's srun", "SLURM_NTASKS", "SLURM_PROCID"), ("Open MPI's mpirun", "OMPI_COMM_WORLD_SIZE",
                     "OMPI_COMM_WORLD_RANK"), ("an MPI launcher (PMI)", "PMI_SIZE", "PMI_RANK"))


def check_launcher(environ=os.environ) -> None:
    """A process that is one of several tasks of another launcher (srun, mpirun) but not of a
    torchrun job would run the whole query alone, once per task: N copies of the answer. Refused
    in one line with the way to launch (docs/ranks.md) -- sluice joins ranks only through
    torchrun's rendezvous -- unless ``SLUICE_LAUNCHER=none`` says each task is meant to run
    alone."""
    if in_torchrun(environ) or environ.get("SLUICE_LAUNCHER", "").lower() == "none":
        return
    for name, size, rank in FOREIGN_LAUNCHERS:
        try:
            n = int(environ.get(size, "1"))
        except ValueError:
            continue
        if n > 1 and rank in environ:  # (an salloc shell has the count but is no task)
            raise ConfigError(
                f"this process is task {environ.get(rank, '?')} of {n} started by {name}, not a rank of a torchrun "
                "job: each task would run the whole query alone; start one torchrun per node under it (srun torchrun "
                "--nnodes N --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint HEAD:29500 -m sluice query ...: "
                "docs/ranks.md), or set SLUICE_LAUNCHER=none to run every task alone")


def current_group(timeout_s: float = 60.0) -> DistGroup | None:
    """This process's group (joined on first use) when it runs under torchrun; else None (and
    a task of another launcher is refused: :func:`check_launcher`)."""
    global _GROUP
    if _GROUP is not None:
        return _GROUP
    if not in_torchrun():
        check_launcher()
        return None
    world = int(os.environ.get("WORLD_SIZE", "1"))
    store = None
    if not dist.is_initialized():
        try:  # control and host bytes over gloo; DistGroup.data_group adds NCCL on CUDA
            store, rank, world = _arrive(timeout_s)
            backstop = datetime.timedelta(seconds=max(COLLECTIVE_BACKSTOP_S, timeout_s))
            dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=backstop)
        except RankFailed:
            raise
        except Exception as e:  # noqa: BLE001 - the rendezvous failed: one line
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RankFailed(f"cannot join the ranks of this job: {msg[:200]}") from None
    _GROUP = DistGroup(dist.get_rank(), world, dist.group.WORLD, timeout_s)
    if store is not None:
        _GROUP.timeout_s = max(COLLECTIVE_BACKSTOP_S, timeout_s)
        liveness.watch(store, _GROUP.rank, world, timeout_s, _on_lost)
    return _GROUP


def _arrive(timeout_s: float):
    """The job's store (PyTorch's env:// rendezvous: torchrun's agent store or MASTER_ADDR/PORT)
    and a wait of at most ``timeout_s`` until every rank has arrived at it: joining is bounded
    by ``timeout_s``, while the group's collectives get the backstop (the watchdog watches them)."""
    store, rank, world = next(dist.rendezvous("env://", timeout=datetime.timedelta(seconds=timeout_s)))
    store.add(_ARRIVED, 1)
    deadline = time.monotonic() + timeout_s
    while (n := store.add(_ARRIVED, 0)) < world:
        if time.monotonic() > deadline:
            raise RankFailed(f"cannot join the ranks of this job: {n} of {world} ranks arrived within "
                             f"{timeout_s:g} s (dist_timeout_s)")
        time.sleep(0.05)
    return store, rank, world


_ARRIVED = "sluice/arrived"


def device_for_rank(device: torch.device, setting: str = "cuda") -> torch.device:
    """One GPU per rank: a rank on a CUDA machine takes the GPU of its local rank, unless the
    setting named one (``cuda:1``); ``device`` is the resolved (indexed) device."""
    if device.type == "cuda" and ":" not in setting:
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count()))
    return device
