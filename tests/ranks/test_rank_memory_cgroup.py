"""The ranks on one machine share its memory cgroup with their launcher: what a rank's host pool
lets it reserve must fit what the cgroup has left -- the other processes' memory (a peer rank
whose untracked memory outgrew its share, the launcher) and the libraries' pages included --
or the rank is killed instead of spilling. Measured before: two SF 1 sort ranks in a 1000 MiB
cgroup each allowed up to 367 MiB of anonymous memory beside a 200 MiB launcher and 130 MiB of
mapped libraries (bench/results/2026-12-08-ranks-memory-cgroup-2core-cpu.md).

Here a second process in the cgroup (a peer's memory) holds most of what is left; the pool must
refuse a reservation the cgroup cannot hold (the rank would have spilled), and what it grants
is then allocated for real without the kernel killing anyone."""

from __future__ import annotations

import json
import os
import sys

import pytest

from sluice.testing import cgroup

PROBE = r"""
import json, subprocess, sys, time
hog = subprocess.Popen([sys.executable, "-c",
    "import sys, time; b = b'x' * (int(sys.argv[1]) << 20); print('ready', flush=True); time.sleep(120)",
    sys.argv[1]], stdout=subprocess.PIPE, text=True)
assert hog.stdout.readline().strip() == "ready"
from sluice.io.memory import MemoryPool
import torch
pool = MemoryPool(4 << 30)
res = pool.reservation("probe")
want = int(sys.argv[2]) << 20
granted = res.try_grow(want)
held = torch.ones(want // 8, dtype=torch.int64) if granted else None  # what a rank does with it
small = res.try_grow(8 << 20)  # the floor: a rank makes progress however full the cgroup
hog.kill()
print(json.dumps({"granted": granted, "small": small, "available": pool.available >> 20}))
"""


@pytest.mark.skipif(not cgroup.available(), reason="needs permission to create memory cgroups")
def test_a_pool_leaves_room_for_the_other_processes_of_its_cgroup():
    # The probe (torch, pyarrow: about 200 MiB anonymous, 130 MiB of libraries) and a peer
    # holding 300 MiB in a 700 MiB cgroup: 200 MiB more would take it past the limit.
    r = cgroup.run_confined([sys.executable, "-c", PROBE, "300", "200"], 700 << 20,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=120)
    assert not r.killed, f"killed: the pool granted what the cgroup could not hold ({r.stderr[-300:]})"
    assert r.returncode == 0, r.stderr[-500:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"granted": False, "small": True, "available": out["available"]}
    assert out["available"] < 200
