"""The permission bits of files sluice writes: written under a temporary name (``mkstemp``
makes it 0600) and renamed when complete, an output file gets the mode a plain ``open`` would
have given it (0666 less the umask), and a file rewritten in place keeps its own mode."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from sluice.errors import DataError


def new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def set_final_mode(tmp: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Give ``tmp`` (about to replace ``dst``) the mode ``dst`` has, or a new file's mode."""
    d = Path(dst)
    mode = d.stat().st_mode & 0o7777 if d.exists() else new_file_mode()
    os.chmod(tmp, mode)


@contextlib.contextmanager
def in_place_of(dst: str | os.PathLike, tmp: str | os.PathLike):
    """Write ``tmp`` in the block; when it ends without error ``tmp`` takes ``dst``'s place
    (with :func:`set_final_mode`'s mode). An OS error is one line naming ``dst``, and ``tmp``
    is never left behind (an error, a rename that failed)."""
    try:
        yield tmp
        set_final_mode(tmp, dst)
        os.replace(tmp, dst)
    except OSError as e:
        raise DataError(f"cannot write {dst}: {e.strerror or e}") from None
    finally:
        if Path(tmp).exists():
            Path(tmp).unlink()
