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


def test_what_a_cgroup_holds_is_read_from_v1_and_v2_stats(tmp_path):
    """Anonymous, shared and mapped-file memory of the whole cgroup (v1: its ``total_`` lines,
    descendants included; v2: its own names); page cache that can be reclaimed is left out."""
    v1 = tmp_path / "v1.stat"
    v1.write_text("cache 100\nrss 7\nshmem 9\nmapped_file 11\ntotal_cache 5000\ntotal_rss 300\n"
                  "total_shmem 20\ntotal_mapped_file 40\ntotal_dirty 77\n")
    v2 = tmp_path / "v2.stat"
    v2.write_text("anon 300\nfile 5000\nkernel 8\nshmem 20\nfile_mapped 40\nfile_dirty 77\n")
    for stat in (v1, v2):
        assert memory.cgroup_held(str(stat)) == {"anon": 300, "shmem": 20, "mapped": 40}
        assert memory.cgroup_held_bytes(str(stat)) == 360
    assert memory.cgroup_held_bytes(str(tmp_path / "gone")) is None


def test_local_ranks_budgets_leave_out_the_other_processes(monkeypatch):
    """Each local rank's default budget is the default of what the machine leaves after the
    launcher and the other ranks' images (each as large as this process), shared among them --
    not a plain share of one process's default, which left out two process images."""
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)  # no launcher to leave out here
    assert memory.default_rank_host_limit(1) == memory.default_host_limit()
    mine = memory.anonymous_resident_bytes()
    monkeypatch.setattr(memory, "anonymous_resident_bytes", lambda: mine)  # held still between reads
    m = memory.physical_memory()
    assert memory.default_rank_host_limit(2) == memory.default_host_limit(m - mine) // 2
    assert memory.default_rank_host_limit(2) < memory.default_host_limit() // 2
