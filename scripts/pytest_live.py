"""A pytest plugin for device runs: each failure's report is appended to ``$OUT/failures.txt``
the moment it arrives (with pytest-xdist, in the controller only), so a run stopped at the
device call's time limit still brings back every traceback seen so far. ``-p pytest_live``
with ``scripts/`` on ``PYTHONPATH`` (as ``gpu_check.sh`` sets it)."""

from __future__ import annotations

import os
from pathlib import Path


def pytest_runtest_logreport(report):
    if not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker's report reaches the controller too: written once, there
    out = Path(os.environ.get("OUT", "/tmp/out")) / "failures.txt"
    with out.open("a") as f:
        f.write(f"===== {report.nodeid} ({report.when})\n{report.longreprtext[-6000:]}\n")
