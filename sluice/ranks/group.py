"""The process group of this process: joined once, from the environment torchrun (or the
local launcher, :mod:`sluice.launch`) sets -- ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT``. Nothing here discovers peers or moves bytes itself: the
rendezvous is PyTorch's (c10d), the transport its backends: gloo for control (counts, plan
fingerprints, host bytes) and, on CUDA, an NCCL group for the exchange's device bytes.

Collectives have a finite timeout (``dist_timeout_s``): a peer that hangs ends the query with
an error instead of a hang; a peer that dies closes its sockets and the next collective fails
at once. On any failure the group is aborted, not destroyed (``destroy_process_group`` can
hang after a peer died).
"""

from __future__ import annotations

import datetime
import hashlib
import os
from dataclasses import dataclass

import torch

from sluice.errors import RankFailed


def in_torchrun() -> bool:
    """Whether this process is one rank of a job torchrun (or our launcher) started."""
    return "TORCHELASTIC_RUN_ID" in os.environ or (
        int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ and "MASTER_ADDR" in os.environ)


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
            import torch.distributed as dist
            try:
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
        """Every rank must run the same exchanges in the same order: compare a hash of the
        plan's exchanges (an object collective, once per query)."""
        import torch.distributed as dist
        digest = hashlib.sha1(fingerprint.encode()).hexdigest()[:16]
        out: list = [None] * self.world
        try:
            dist.all_gather_object(out, digest, group=self.group)
        except Exception as e:  # noqa: BLE001 - a peer is gone
            raise self.fail(e) from None
        if len(set(out)) != 1:
            bad = [r for r, d in enumerate(out) if d != out[0]]
            raise RankFailed(f"ranks planned different queries (rank {bad[0]} differs from rank 0): "
                             "every rank needs the same data, settings and query")

    def gather_objects(self, obj) -> list | None:
        """``obj`` of every rank on rank 0 (None elsewhere); once per query, at its end."""
        import torch.distributed as dist
        out: list = [None] * self.world
        try:
            dist.all_gather_object(out, obj, group=self.group)
        except Exception as e:  # noqa: BLE001
            raise self.fail(e) from None
        return out if self.rank == 0 else None

    def abort(self) -> None:
        """Tear the group down on the error path without waiting for peers."""
        import torch.distributed as dist
        try:
            if dist.is_initialized():
                for pg in (self._data, dist.group.WORLD):
                    if pg is not None and hasattr(pg, "abort"):
                        pg.abort()
        except Exception:  # noqa: BLE001 - best effort: the process is about to exit
            pass


_GROUP: DistGroup | None = None


def current_group(timeout_s: float = 60.0) -> DistGroup | None:
    """This process's group (joined on first use) when it runs under torchrun; else None."""
    global _GROUP
    if _GROUP is not None:
        return _GROUP
    if not in_torchrun():
        return None
    import torch.distributed as dist
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if not dist.is_initialized():
        try:  # control and host bytes over gloo; DistGroup.data_group adds NCCL on CUDA
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))
        except Exception as e:  # noqa: BLE001 - the rendezvous failed: one line
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RankFailed(f"cannot join the ranks of this job: {msg[:200]}") from None
    _GROUP = DistGroup(dist.get_rank(), world, dist.group.WORLD, timeout_s)
    return _GROUP


def device_for_rank(device: torch.device, setting: str = "cuda") -> torch.device:
    """One GPU per rank: a rank on a CUDA machine takes the GPU of its local rank, unless the
    setting named one (``cuda:1``); ``device`` is the resolved (indexed) device."""
    if device.type == "cuda" and ":" not in setting:
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count()))
    return device
