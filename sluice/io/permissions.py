"""The permission bits of files sluice writes: written under a temporary name (``mkstemp``
makes it 0600) and renamed when complete, an output file gets the mode a plain ``open`` would
have given it (0666 less the umask), and a file rewritten in place keeps its own mode."""

from __future__ import annotations

import os
from pathlib import Path


def new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def set_final_mode(tmp: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Give ``tmp`` (about to replace ``dst``) the mode ``dst`` has, or a new file's mode."""
    d = Path(dst)
    mode = d.stat().st_mode & 0o7777 if d.exists() else new_file_mode()
    os.chmod(tmp, mode)
