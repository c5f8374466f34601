"""A rank's resident cap leaves out what the process that started it holds in the same cgroup
(torchrun's agent, or the --ranks launcher): the ranks' caps and the launcher together stay
within the cgroup's memory."""

import os

from sluice.io import memory


def test_a_ranks_cap_leaves_out_its_launcher(monkeypatch):
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert memory.launcher_resident_bytes() == 0  # not a rank
    alone = memory.resident_cap()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    parent = memory.launcher_resident_bytes()  # pytest's parent shares its cgroup here
    same = open(f"/proc/{os.getppid()}/cgroup").read() == open("/proc/self/cgroup").read()
    assert (parent > 0) == same
    assert memory.resident_cap() == (alone - parent) // 2
