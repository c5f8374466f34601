"""What the environment says about this process's place in a job, read without torch: whether
torchrun (or the local launcher) started it as a rank, and the folder where a rank under
``sluice torchrun`` leaves its one-line error for the launcher. The command line reads both
before anything heavy loads (``sluice --help`` must not load torch)."""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The environment variable naming the folder where ranks leave their one-line errors.
ERRORS_ENV = "SLUICE_RANK_ERRORS"


def in_torchrun(environ=os.environ) -> bool:
    """Whether this process is one rank of a job torchrun (or our launcher) started."""
    return "TORCHELASTIC_RUN_ID" in environ or (
        int(environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in environ and "MASTER_ADDR" in environ)


def report(line: str, code: int) -> bool:
    """On a rank started by ``sluice torchrun`` (:mod:`sluice.torchrun`): leave the rank's one
    line for the launcher (True); elsewhere False (the caller prints it)."""
    folder, rank = os.environ.get(ERRORS_ENV), os.environ.get("RANK")
    if not folder or rank is None or not Path(folder).is_dir():
        return False
    (Path(folder) / f"error-{rank}.json").write_text(json.dumps({"line": line, "code": code}))
    return True
