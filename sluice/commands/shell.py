"""``sluice shell`` (and ``sluice`` with no arguments): the interactive SQL shell on a data folder."""

from __future__ import annotations

from pathlib import Path

import sluice
from sluice.commands.query import connect_settings
from sluice.errors import DataError
from sluice.shell import run_shell


def run(args, argv: list[str]) -> int:
    """Open the data folder and hand the connection to the shell until it ends."""
    if not Path(args.data).is_dir():
        raise DataError(f"data directory {args.data} does not exist")
    con = sluice.connect(args.data, **connect_settings(args))
    try:
        return run_shell(con)
    finally:
        con.close()
