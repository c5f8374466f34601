"""A command's result leaving it: a table or rows on stdout, or a file written whole (to a
temporary name in the same folder, renamed only when complete)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from sluice.errors import DataError
from sluice.io.permissions import set_final_mode
from sluice.render import format_rows, format_table


def print_as(table, fmt: str) -> None:
    """Every row on stdout as csv, json lines or a markdown table."""
    text = format_rows(table, fmt)
    if text:
        print(text)


def print_table(table, max_rows: int) -> None:
    """An aligned text table like DuckDB's shell output, fitted to the terminal when stdout is one."""
    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else None
    print(format_table(table, width, max_rows, tail=False, hint="-o FILE saves all"))


def write_atomic(path: str, write) -> None:
    """Write via a temporary file in the same folder, renamed when complete."""
    out = Path(path)
    if str(out.parent) and not out.parent.exists():
        raise DataError(f"output directory {out.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=out.parent or ".")
    os.close(fd)
    try:
        write(tmp)
        set_final_mode(tmp, out)
        os.replace(tmp, out)
    except OSError as e:
        raise DataError(f"cannot write {out}: {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)

