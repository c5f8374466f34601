"""Command line: ``sluice demo | query | explain | shell | doctor | inspect | rewrite | calibrate |
datagen | torchrun``: the parser, and the dispatch to the module that runs the command.

Each command's work lives in its own module under :mod:`sluice.commands`, imported only when
that command runs, so ``sluice --help`` (or a mistyped option) loads no torch, numpy or pyarrow,
and doctor and inspect no torch. Every failure ends with one line on stderr and a non-zero exit
status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from sluice import __version__
from sluice.errors import InternalError, SluiceError
from sluice.ranks.job_env import report

EXIT_USER = 1
EXIT_INTERNAL = 2

#: The module and function that run each command: ``function(args, argv) -> exit code``.
COMMANDS: dict[str, tuple[str, str]] = {
    "query": ("sluice.commands.query", "run"),
    "explain": ("sluice.commands.query", "run"),
    "shell": ("sluice.commands.shell", "run"),
    "doctor": ("sluice.commands.doctor", "run"),
    "inspect": ("sluice.commands.inspect", "run"),
    "rewrite": ("sluice.commands.rewrite", "run"),
    "calibrate": ("sluice.commands.calibrate", "run"),
    "demo": ("sluice.commands.demo", "run"),
    "datagen": ("sluice.commands.datagen", "run"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sluice", description="SQL over Parquet on PyTorch (CPU or GPU).")
    p.add_argument("--version", action="version", version=f"sluice {__version__}")
    sub = p.add_subparsers(dest="cmd")

    def add_common(q):
        q.add_argument("sql", nargs="?", help="the query text (or use -f; - reads it from stdin)")
        q.add_argument("-f", "--file", help="read the query from this file")
        q.add_argument("--data", default=".", help="directory of tables: NAME.parquet or NAME/ folders")
        q.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: auto)")
        q.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a setting, e.g. --set chunk_rows=65536 (repeatable)")

    q = sub.add_parser("query", help="run a query and print or save the result")
    add_common(q)
    q.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="run on N local ranks (torch.distributed, gloo on the CPU); under torchrun the job's "
                        "ranks are used")
    q.add_argument("-o", "--output", help="write the result to FILE.parquet or FILE.csv")
    q.add_argument("--explain", action="store_true", help="print the physical plan instead of running")
    q.add_argument("--max-rows", type=int, default=40, help="rows to print as a table (default 40)")
    q.add_argument("--verify", action="store_true",
                   help="also run the query in DuckDB on the same files and check the answers agree "
                        "(needs the sluicedb[verify] extra); a difference is an error naming the first one")
    q.add_argument("--format", choices=("table", "csv", "json", "markdown"), default="table",
                   help="how stdout shows the result: an aligned table (default), or every row as csv, "
                        "json (one object per line) or a markdown table")
    q.add_argument("--timing", action="store_true", help="print the elapsed time on stderr")
    q.add_argument("--analyze", action="store_true",
                   help="run, then print the plan with rows, bytes, time per operator and stage, and T_min")
    q.add_argument("--plot", metavar="FILE.png", help="draw the bandwidth timeline of the run")
    q.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto trace of the run")

    sh = sub.add_parser("shell", help="the interactive SQL shell (also: sluice with no arguments)")
    sh.add_argument("--data", default=".", help="directory of tables: NAME.parquet or NAME/ folders")
    sh.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: auto)")
    sh.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting, e.g. --set chunk_rows=65536 (repeatable)")

    dr = sub.add_parser("doctor", help="what makes these Parquet files slow for a device, and the fix")
    dr.add_argument("path", help="a Parquet file or a directory of tables")
    dr.add_argument("--for", dest="target", choices=["cpu", "gpu", "auto"], default="auto",
                    help="the device to check for (default auto: a GPU when there is one)")

    c = sub.add_parser("calibrate", help="measure storage and host->device bandwidth for T_min")
    c.add_argument("--data", default=".", help="directory whose Parquet files are read")
    c.add_argument("--device", default=None, help="device for the host->device measurement")
    c.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="also measure the all-to-all bandwidth of N local ranks (T_min's network term)")

    e = sub.add_parser("explain", help="print the physical plan of a query")
    add_common(e)

    i = sub.add_parser("inspect", help="show a Parquet file's layout: row groups, pages, encodings, codecs")
    i.add_argument("path", help="a Parquet file or a directory of them")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    i.add_argument("--no-pages", action="store_true", help="skip counting pages (reads only footers)")

    r = sub.add_parser("rewrite", help="rewrite Parquet into a GPU- or CPU-friendly layout")
    r.add_argument("source", help="a Parquet file or a directory of them")
    r.add_argument("target", help="output file, or directory (same relative paths)")
    r.add_argument("--for", dest="preset", choices=["gpu", "cpu"], help="preset: gpu (1M-row groups, 100 "
                   "pages per chunk, encodings/codecs by trial) or cpu (2^20-row groups, light codecs)")
    r.add_argument("--row-group-rows", type=int, default=None)
    r.add_argument("--pages-per-chunk", type=int, default=None)
    r.add_argument("--encoding", default=None,
                   help="auto | keep | plain | dictionary | delta | byte_stream_split (default auto)")
    r.add_argument("--compression", default=None,
                   help="auto | none | snappy | lz4 | zstd[:level] | gzip | brotli (default auto)")
    r.add_argument("--min-gain", type=float, default=None,
                   help="auto compression only where it saves more than this fraction (default 0.10)")
    r.add_argument("--report", metavar="FILE.json", help="also write the per-column choices as JSON")

    sub.add_parser("torchrun", add_help=False,
                   help="run a command on every rank torchrun starts (torchrun's options first), "
                        "a failure in one line: sluice torchrun --nnodes 2 ... query --data DIR SQL")
    m = sub.add_parser("demo", help="answer the 22 TPC-H queries, generating the data (SF 1) when absent")
    m.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    m.add_argument("--data", default=None, help="where the data is or goes (default data/tpch-sfN)")
    m.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: auto)")
    m.add_argument("--queries", default=None, help="comma-separated subset, e.g. q01,q06")

    d = sub.add_parser("datagen", help="generate benchmark data as Parquet")
    d.add_argument("benchmark", choices=["tpch", "ssb", "tpcds", "clickbench", "events"],
                   help="events: a seeded table of nested LIST / STRUCT / MAP columns (docs/nested.md)")
    d.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    d.add_argument("--rows", type=int, default=None,
                   help="clickbench: hits to write (default 10 M); events: events to write (default 10,000)")
    d.add_argument("--seed", type=int, default=0, help="events only: the random seed (default 0)")
    d.add_argument("--out", required=True, help="output directory")
    d.add_argument("--parts", type=int, default=None, help="TPC-H only: files per table (NAME/ folders)")
    d.add_argument("--force", action="store_true", help="replace this benchmark's tables already in --out")
    return p


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "torchrun":  # torchrun's own options follow: its parser reads them
        # c10's own lines (the rendezvous store's "Connection was likely closed" with frames,
        # when a node goes) are not ours to print: the level is read once, when torch loads
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
        from sluice.torchrun import main as torchrun_main  # deferred: torch and its launcher load only for this command
        return torchrun_main(argv[1:])
    args = _parser().parse_args(argv or ["shell"])
    if args.cmd is None:
        _parser().error("give a command, or no arguments for the shell")
    module, function = COMMANDS[args.cmd]
    command = importlib.import_module(module)  # deferred: keeps `sluice --help` free of torch, numpy, pyarrow
    return getattr(command, function)(args, argv)


def _say(line: str, code: int) -> int:
    """The one line of a failed command: on stderr, or, on a rank under ``sluice torchrun``,
    handed to its launcher, which prints the job's cause once."""
    if not report(line, code):
        print(line, file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> None:
    try:
        code = run(argv)
    except SluiceError as e:
        code = _say(str(e), EXIT_INTERNAL if isinstance(e, InternalError) else EXIT_USER)
    except KeyboardInterrupt:
        code = _say("interrupted", 130)
    except BrokenPipeError:
        code = 0
    except Exception as e:  # noqa: BLE001 - a bug: still one line, no traceback
        msg = str(e).splitlines()[0] if str(e) else ""
        code = _say(f"internal error: {type(e).__name__}: {msg}", EXIT_INTERNAL)
    sys.exit(code)


if __name__ == "__main__":
    main()
