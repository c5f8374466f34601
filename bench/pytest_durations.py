"""A pytest plugin that appends every test's phase durations to a file as each report arrives,
so a long or interrupted run (``-n auto`` on 2 cores, 25 minutes) still says where its time went --
pytest's own ``--durations`` prints only at the end. Use:

    PYTHONPATH=bench SLUICE_DURATIONS=/tmp/dur.tsv python -m pytest -q -n auto -p pytest_durations

then ``sort -rn /tmp/dur.tsv | head``. Lines: seconds, phase, outcome, test id (written by the
controller and by each worker: each test appears twice under xdist)."""

from __future__ import annotations

import os


def pytest_runtest_logreport(report) -> None:
    path = os.environ.get("SLUICE_DURATIONS", "durations.tsv")
    with open(path, "a") as f:
        f.write(f"{report.duration:.2f}\t{report.when}\t{report.outcome}\t{report.nodeid}\n")
