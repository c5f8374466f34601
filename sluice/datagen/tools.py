"""Where the generator executables installed with sluice are."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sluice.errors import DataError


def generator(name: str) -> str:
    """The path of a generator executable installed with sluice (on PATH, or next to this
    Python when its environment is not activated)."""
    exe = shutil.which(name)
    if exe is not None:
        return exe
    cand = Path(sys.executable).parent / name
    if cand.exists():
        return str(cand)
    raise DataError(f"{name} is not installed (pip install {name})")
