"""The all-to-all bandwidth of this job's ranks: what T_min's network term divides by
(``sluice calibrate --ranks N``) and the raw baseline ``bench/exchange.py`` compares the
exchange with. Each rank sends ``nbytes`` to every other rank in one ``all_to_all_single``;
the rate is the bytes a rank sends to others per second, timed on the slowest rank (one rank
alone: to itself, the transport an ``exchange_loopback`` run uses). On CUDA the buffers live on
the GPU and the group is the NCCL data group."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
import json
from sluice.ranks.group import current_group

#: Message sizes per destination: below a few MiB the rate falls (PystachIO Fig. 7).
SIZES = (64 << 10, 1 << 20, 4 << 20, 16 << 20)


def all_to_all_rate(group, nbytes: int, repeats: int = 5, device: torch.device | None = None) -> float:
    """Bytes per second one rank sends to the others with ``nbytes`` per destination."""
    world = dist.get_world_size(group)
    send = torch.ones(nbytes * world, dtype=torch.uint8, device=device)
    recv = torch.empty_like(send)
    cuda = send.device.type == "cuda"
    dist.all_to_all_single(recv, send, group=group)  # warm-up: connections, buffers
    if cuda:
        torch.cuda.synchronize(send.device)
    # NCCL's barrier names its GPU (without it torch warns and guesses the current device)
    if cuda:
        dist.barrier(group=group, device_ids=[send.device.index])
    else:
        dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(repeats):
        dist.all_to_all_single(recv, send, group=group)
    if cuda:  # NCCL returns once the work is queued
        torch.cuda.synchronize(send.device)
    took = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=device)
    dist.all_reduce(took, op=dist.ReduceOp.MAX, group=group)
    return nbytes * max(1, world - 1) * repeats / float(took)


def measure(group, sizes=SIZES, device: torch.device | None = None) -> dict[int, float]:
    """Rate per message size; the same on every rank (the slowest rank's time)."""
    return {n: all_to_all_rate(group, n, max(3, min(20, (64 << 20) // max(n, 1))), device) for n in sizes}


def main() -> None:
    """``torchrun ... -m sluice.ranks.bandwidth``: rank 0 prints the rates (bytes/s) as JSON."""

    g = current_group()
    if g is None:
        raise SystemExit("run under torchrun: torchrun --nproc-per-node N -m sluice.ranks.bandwidth")
    rates = measure(g.group)
    if g.rank == 0:
        print(json.dumps({str(n): r for n, r in rates.items()}))


if __name__ == "__main__":
    main()
