"""``sluice torchrun [torchrun options] COMMAND ...``: PyTorch's torchrun -- its own parser,
launcher and rendezvous, called in this process -- running ``sluice COMMAND ...`` on each rank
it starts, with a failure told in one line.

Plain ``torchrun ... -m sluice query ...`` works as well, but when a rank fails torchrun prints
its own report below the rank's line: a traceback of the launcher and a box naming the first
failed process (30-odd lines, on every node). Here each rank hands its one line to this process
instead of printing it (a file per rank in the folder ``SLUICE_RANK_ERRORS`` names, written from
:func:`sluice.cli.main` by :func:`sluice.ranks.job_env.report`), torchrun's report is caught, and
one line is printed: the query's own
error (the same on every rank, or the first rank's), else the rank that died and how. The
folders killed ranks spilled into are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.elastic.rendezvous.api import RendezvousError
from torch.distributed.run import get_args_parser
from torch.distributed.run import run as torchrun

from sluice.config import Config
from sluice.errors import RankFailed
from sluice.io.spill import clean_stale
from sluice.launch import _exit_text, _quiet
from sluice.ranks.job_env import ERRORS_ENV


def main(argv: list[str]) -> int:
    """Run ``argv`` (torchrun's options, then a sluice command) under torchrun; the exit code."""
    parser = get_args_parser()
    parser.prog = "sluice torchrun"
    parser.usage = "sluice torchrun [torchrun options] COMMAND [ARGS ...]   (e.g. ... query --data DIR SQL)"
    args = parser.parse_args(argv)
    if args.module or args.no_python:
        parser.error("give a sluice command (query, explain, ...), not -m or --no-python: the ranks run sluice")
    # torchrun's positional "training script" is the sluice command; each rank runs -m sluice
    args.training_script_args = [args.training_script, *args.training_script_args]
    args.training_script, args.module = "sluice", True
    folder = Path(tempfile.mkdtemp(prefix="sluice-torchrun-"))
    os.environ[ERRORS_ENV] = str(folder)
    _quiet()
    try:
        torchrun(args)
        return 0
    except ChildFailedError as e:
        line, code = _cause(folder, e.failures)
        _clean_spills(args.training_script_args)
        print(line, file=sys.stderr)
        return code
    except RendezvousError as e:  # the node hosting the job's store ended (its rank failed)
        line, code = _cause(folder, {})
        if line is None:
            what = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            line, code = f"rank failed: this node lost the job's rendezvous ({what}); the query stopped here", 1
        _clean_spills(args.training_script_args)
        print(line, file=sys.stderr)
        return code
    except SignalException as e:  # this launcher was interrupted: torchrun stopped the ranks
        _clean_spills(args.training_script_args)
        if e.sigval == signal.SIGINT:
            print("interrupted", file=sys.stderr)
            return 130
        print(f"rank failed: stopped by {signal.Signals(e.sigval).name}; the query stopped on every rank",
              file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cause(folder: Path, failures: dict) -> tuple[str | None, int]:
    """The line to print and the exit code: the query's own error before a rank's lost contact
    (its echoes on other ranks), else the first process to fail and how it ended."""
    said = {}
    for p in folder.glob("error-*.json"):
        said[int(p.stem.split("-")[1])] = json.loads(p.read_text())
    causes = {r: s for r, s in said.items() if not s["line"].startswith(RankFailed.category + ":")}
    if causes:
        lines = {s["line"] for s in causes.values()}
        rank = min(causes)
        line = causes[rank]["line"]
        return (line if len(lines) == 1 else f"{line} (rank {rank})"), causes[rank]["code"]
    if not said and not failures:
        return None, 1
    if not failures:
        rank = min(said)
        return said[rank]["line"], said[rank]["code"]
    first, f = min(failures.items(), key=lambda kv: kv[1].timestamp)
    if first not in said:  # it died without a word (a signal, the OOM killer)
        return f"rank failed: rank {first} {_exit_text(f.exitcode)}; the query stopped on every rank", 1
    rank = min(said)
    return said[rank]["line"], said[rank]["code"]


def _clean_spills(command: list[str]) -> None:
    """Spill folders of ranks that were killed (their process is gone) are removed: in the
    ``spill_dir`` the command sets, else the default."""
    spill_dir = ""
    for flag, value in zip(command, command[1:]):
        if flag == "--set" and value.startswith("spill_dir="):
            spill_dir = value.split("=", 1)[1]
    try:
        clean_stale(Config(spill_dir=spill_dir).spill_dirs())
    except OSError:
        pass
