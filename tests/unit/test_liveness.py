"""The ranks' watchdog (sluice.ranks.liveness) judged on a shared store with a clock of our own:
a rank whose beat stops is lost, a rank busy without progress is hung, a rank that waits for
its peers or its caller is neither, and nothing is judged outside a query."""

from __future__ import annotations

import datetime

import torch.distributed as dist

from sluice.ranks.liveness import Liveness


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _pair(timeout=6.0):
    store = dist.HashStore()
    store.set_timeout(datetime.timedelta(seconds=1))
    clock = Clock()
    cpu = {0: 0.0, 1: 0.0}  # each rank's CPU time: still unless a test moves it
    a = Liveness(store, 0, 2, timeout, print, clock, lambda: cpu[0])
    b = Liveness(store, 1, 2, timeout, print, clock, lambda: cpu[1])
    a.cpu, b.cpu = cpu, cpu
    return a, b, clock


def _rounds(clock, seconds, *ranks):
    """Every rank in ``ranks`` beats once a second for ``seconds``; the first line found."""
    for _ in range(int(seconds)):
        clock.t += 1
        for w in ranks:
            line = w.check()
            if line is not None:
                return line
    return None


def test_a_rank_that_stops_beating_is_lost():
    a, b, clock = _pair()
    with a.armed(), a.waiting():  # rank 0 in a collective
        assert _rounds(clock, 20, a, b) is None  # both beat: nothing, however long
        line = _rounds(clock, 10, a)  # rank 1 stopped (SIGSTOP): its beat stays
        assert line is not None and line.startswith("rank 1 stopped answering for 6 s")


def test_a_rank_that_never_published_is_lost_too():
    a, _b, clock = _pair()
    with a.armed(), a.waiting():
        line = _rounds(clock, 10, a)
    assert line is not None and line.startswith("rank 1 stopped answering")


def test_busy_without_progress_is_a_hang_and_waiting_is_not():
    a, b, clock = _pair()
    with a.armed(), b.armed():
        with a.waiting():  # rank 0 in a collective, rank 1 computing with progress
            for _ in range(20):
                b.tick()
                assert _rounds(clock, 1, a, b) is None
            line = _rounds(clock, 10, a, b)  # rank 1 busy, no progress (a read that never returns)
        assert line is not None and line.startswith("rank 1 made no progress")


def test_computing_without_a_chunk_is_progress():
    """One long operation (a join fanning out) makes no chunk, but its CPU time moves."""
    a, b, clock = _pair()
    with a.armed(), b.armed(), a.waiting():
        for _ in range(30):
            b.cpu[1] += 0.5
            assert _rounds(clock, 1, a, b) is None
        line = _rounds(clock, 10, a, b)  # the CPU time stops too: hung
    assert line is not None and line.startswith("rank 1 made no progress")


def test_a_rank_judges_itself():
    a, b, clock = _pair()
    with a.armed():
        line = _rounds(clock, 10, b, a)
    assert line is not None and line.startswith("rank 0 made no progress")


def test_nothing_is_judged_outside_a_query():
    a, _b, clock = _pair()
    assert _rounds(clock, 30, a) is None  # rank 1 absent, rank 0 idle: no query, no verdict
    with a.armed():  # a query starts: rank 1's silence is timed from now
        assert _rounds(clock, 5, a) is None
        assert _rounds(clock, 5, a) is not None


def test_the_interval_fits_the_timeout():
    a, _b, _ = _pair(timeout=3)
    assert a.interval == 0.5
    assert _pair(timeout=60)[0].interval == 1.0


def test_a_task_of_another_launcher_is_refused_not_run_n_times():
    """Under srun or mpirun without torchrun, each task ran the whole query alone (N answers)."""
    import pytest

    from sluice.errors import ConfigError
    from sluice.ranks.group import check_launcher
    for env in ({"SLURM_NTASKS": "4", "SLURM_PROCID": "1"}, {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"},
                {"PMI_SIZE": "8", "PMI_RANK": "3"}):
        with pytest.raises(ConfigError, match="torchrun"):
            check_launcher(env)
    check_launcher({"SLURM_NTASKS": "1", "SLURM_PROCID": "0"})  # one task: itself
    check_launcher({"SLURM_NTASKS": "4"})  # an salloc shell (no task of its own): --ranks N from there works
    check_launcher({"SLURM_NTASKS": "4", "SLUICE_LAUNCHER": "none"})  # each task alone, on purpose
    check_launcher({"SLURM_NTASKS": "4", "TORCHELASTIC_RUN_ID": "x"})  # srun torchrun ...: the ranks are torchrun's


def test_rank_0_sums_every_ranks_scan_bytes_of_the_same_query():
    """The progress bar's numbers: each rank's bytes read and to read travel with its record;
    rank 0 sums those of the query it runs itself (a peer still on the last query is left out)."""
    a, b, clock = _pair()
    a.begin_scan(50)
    with a.armed(), a.waiting(), b.armed(), b.waiting():
        a.scanned(10)
        _rounds(clock, 1, b, a)
        assert a.job_scan() == (10, 50)  # rank 1 has not begun this query: not counted
        b.begin_scan(100)
        b.scanned(40)
        _rounds(clock, 1, b, a)
        assert a.job_scan() == (50, 150)
        b.scanned(60)
        a.scanned(40)
        _rounds(clock, 1, b, a)
        assert a.job_scan() == (150, 150)
        a.begin_scan(7)  # the next query on rank 0: rank 1's figures are of the last one
        assert a.job_scan() == (0, 7)
