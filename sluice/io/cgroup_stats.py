"""What the memory cgroup limiting this process allows and holds, read from /proc and /sys
(cgroup v1 and v2): the limit the budgets fit under, and what every process in the cgroup -- the
other ranks on this machine and their launcher too -- holds that the kernel cannot reclaim.
Apart from :mod:`sluice.io.memory` (which decides with them) because these are the kernel's
files and their two formats, nothing of the pools."""

from __future__ import annotations

import os
import re


def cgroup_memory_limit() -> int | None:
    """The memory limit of this process's cgroup (v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``), or None when unlimited or unknown."""
    found = limiting_cgroup()
    return found[0] if found else None


def limiting_cgroup() -> tuple[int, str] | None:
    """(limit, ``memory.stat`` path) of the cgroup whose memory limit applies to this process
    (its own, else the root's), or None when unlimited or unknown."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2
            candidates.append(f"/sys/fs/cgroup{path}/memory.max")
        elif "memory" in controllers.split(","):
            candidates.append(f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
    candidates += ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    for c in candidates:
        try:
            text = open(c).read().strip()
        except OSError:
            continue
        if text == "max":
            continue
        try:
            v = int(text)
        except ValueError:
            continue
        if 0 < v < (1 << 60):
            return v, os.path.join(os.path.dirname(c), "memory.stat")
    return None


#: What a memory cgroup holds that it cannot take back without killing a process: anonymous
#: memory, shared memory (tmpfs, /dev/shm) and file pages mapped into a process (the libraries'
#: code in use): v1 ``memory.stat`` names (``total_``: its descendants included), else v2's.
_CGROUP_HELD = re.compile(rb"^(total_rss|total_shmem|total_mapped_file|anon|shmem|file_mapped) (\d+)$", re.M)


def cgroup_held_bytes(stat_path: str) -> int | None:
    """The bytes a memory cgroup (its ``memory.stat``) holds that it cannot reclaim: every
    process in it -- the other ranks on this machine and their launcher too -- not only this
    one; None where it cannot be read."""
    held = cgroup_held(stat_path)
    return None if held is None else sum(held.values())


def cgroup_held(stat_path: str) -> dict[str, int] | None:
    """What :func:`cgroup_held_bytes` sums, by kind: ``anon``, ``shmem`` and ``mapped``."""
    try:
        with open(stat_path, "rb") as f:
            text = f.read()
    except OSError:
        return None
    found = _CGROUP_HELD.findall(text)
    v1 = any(k.startswith(b"total_") for k, _ in found)
    kinds = {b"total_rss": "anon", b"anon": "anon", b"total_shmem": "shmem", b"shmem": "shmem",
             b"total_mapped_file": "mapped", b"file_mapped": "mapped"}
    return {kinds[k]: int(v) for k, v in found if k.startswith(b"total_") == v1}
