"""Run a command confined to a memory budget, as a user on a smaller machine would meet it.

A memory cgroup (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``) limits everything the
process touches -- heap, arenas, page cache -- and the kernel kills it past the limit, exactly
as on a machine or container with that much memory. Needs permission to create cgroups (root);
:func:`available` says whether it can be used here.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/memory")


@dataclass
class Confined:
    returncode: int
    stdout: str
    stderr: str
    peak_bytes: int | None  # the cgroup's peak charge (includes page cache), when known
    killed: bool            # the kernel's OOM killer ended it


def _root() -> tuple[Path, str] | None:
    if (_V2 / "cgroup.controllers").exists() and "memory" in (_V2 / "cgroup.controllers").read_text():
        return _V2, "v2"
    if (_V1 / "memory.limit_in_bytes").exists():
        return _V1, "v1"
    return None


def available() -> bool:
    """Whether this process may create memory cgroups."""
    r = _root()
    if r is None or os.geteuid() != 0:
        return False
    probe = r[0] / f"sluice-probe-{uuid.uuid4().hex[:6]}"
    try:
        probe.mkdir()
        probe.rmdir()
        return True
    except OSError:
        return False


def run_confined(cmd: list[str], limit_bytes: int, env: dict | None = None, timeout: float | None = None,
                 cwd: str | None = None) -> Confined:
    """Run ``cmd`` in a fresh memory cgroup of ``limit_bytes`` (no swap) and remove it after."""
    root, ver = _root()
    group = root / f"sluice-{uuid.uuid4().hex[:10]}"
    group.mkdir()
    try:
        if ver == "v2":
            (group / "memory.max").write_text(str(limit_bytes))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
        else:
            (group / "memory.limit_in_bytes").write_text(str(limit_bytes))
        procs = group / "cgroup.procs"
        wrapper = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *cmd]
        p = subprocess.run(wrapper, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
        peak = None
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            f = group / name
            if f.exists():
                try:
                    peak = int(f.read_text().split()[0])
                except (OSError, ValueError):
                    pass
        killed = p.returncode in (-9, 137)
        if ver == "v2" and (group / "memory.events").exists():
            events = dict(line.split() for line in (group / "memory.events").read_text().splitlines())
            killed = killed or int(events.get("oom_kill", 0)) > 0
        elif (group / "memory.oom_control").exists():
            killed = killed or "oom_kill 1" in (group / "memory.oom_control").read_text()
        return Confined(p.returncode, p.stdout, p.stderr, peak, killed)
    finally:
        try:
            if ver == "v1" and (group / "memory.force_empty").exists():
                (group / "memory.force_empty").write_text("0")
        except OSError:
            pass
        try:
            group.rmdir()
        except OSError:
            pass
