"""``sluice query`` and ``sluice explain``: a query's text (an argument, -f FILE or stdin) run on
a data folder -- printed as a table or rows, written to Parquet or CSV, explained, analyzed,
drawn as a timeline or traced -- on this process, on N local ranks (``--ranks``) or as one rank
of a torchrun job."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import sluice
from sluice.adapt.calibration import load_calibration
from sluice.analyze import analyze_report, plot_timeline
from sluice.commands.output import print_as, print_table, write_atomic
from sluice.commands.progress import Progress
from sluice.errors import ConfigError, DataError
from sluice.launch import run_cli
from sluice.metrics import merged_trace
from sluice.ranks import liveness
from sluice.setting_values import parse_set_option


def run(args, argv: list[str]) -> int:
    """Run (or explain) the query ``args`` give; ``argv`` is the command line each rank reruns."""
    sql = query_text(args)
    con = sluice.connect(args.data, **connect_settings(args))
    try:
        rel = con.sql(sql)
        if args.cmd == "explain" or getattr(args, "explain", False):
            if con.rank == 0:
                print(rel.explain())
            return 0
        # Bad options are refused here, before any rank starts.
        for path, suffix in ((args.plot, ".png"), (args.trace, ".json")):
            if path and not path.lower().endswith(suffix):
                raise ConfigError(f"{path!r} should end in {suffix}")
        if args.output and getattr(args, "verify", False):
            raise ConfigError("--verify checks a printed result; run it without -o")
        suffix = Path(args.output).suffix.lower() if args.output else ""
        if args.output and suffix not in (".parquet", ".csv"):
            raise ConfigError(f"output must end in .parquet or .csv, not {Path(args.output).name!r}")
        if con.launches_ranks:  # the same command on each of N local ranks; rank 0 prints
            if args.output and not Path(args.output).resolve().parent.exists():
                raise DataError(f"output directory {Path(args.output).parent} does not exist")
            return run_cli(con.config.ranks, argv_for_ranks(argv, sql), con.config.spill_dirs(),
                           con.config.dist_timeout_s)
        rel.measure_reads = bool(args.analyze or args.plot or args.trace)  # every rank's stages
        job = liveness.current() if con.group is not None else None
        if job is not None:  # every rank's scan bytes travel with its watchdog's records
            job.begin_scan(rel.bytes_to_scan())
        if con.rank != 0:  # another rank of a distributed run: its part, nothing printed
            rel.to_arrow(progress=job.scanned if job is not None else None)
            return 0
        t0 = time.perf_counter()
        if args.output:
            written = []
            with Progress(rel.bytes_to_scan(whole_job=job is not None) if sys.stderr.isatty() else 0,
                          storage_bps(con.root), job) as bar:
                # Streamed chunk by chunk into a temporary file, renamed when complete.
                write_atomic(args.output, lambda tmp: written.append(
                    rel.write(tmp, suffix.lstrip("."), progress=bar)))
            elapsed = time.perf_counter() - t0
            print(f"wrote {written[0]} rows to {args.output}", file=sys.stderr)
        else:
            with Progress(rel.bytes_to_scan(whole_job=job is not None) if sys.stderr.isatty() else 0,
                          storage_bps(con.root), job) as bar:
                table = rel.to_arrow(progress=bar)
            elapsed = time.perf_counter() - t0
            if args.verify:  # before anything is printed: a difference leaves no output
                print(rel.verify(table), file=sys.stderr)
            if not args.analyze:
                if args.format == "table":
                    print_table(table, args.max_rows)
                else:
                    print_as(table, args.format)
        op, ctx = rel.last_run
        if args.analyze:
            print(analyze_report(op, ctx, con.root))
        if args.plot:
            write_atomic(args.plot, lambda tmp: plot_timeline(op, ctx, tmp, title=title(sql)))
            print(f"wrote timeline to {args.plot}", file=sys.stderr)
        if args.trace:

            def dump(tmp):  # on several ranks: one process per rank
                with open(tmp, "w") as f:
                    json.dump(merged_trace(ctx.recorder, ctx.rank_stats), f)
            write_atomic(args.trace, dump)
            print(f"wrote trace to {args.trace}", file=sys.stderr)
        if args.timing:
            print(f"time: {elapsed:.3f}s on {con.device}", file=sys.stderr)
    finally:
        con.close()
    return 0


def query_text(args) -> str:
    """The query: the argument, the file -f names, or stdin (-)."""
    if args.file:
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as e:
            raise DataError(f"cannot read {args.file}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise DataError(f"cannot read {args.file}: not UTF-8 text (byte 0x{e.object[e.start]:02x} "
                            f"at offset {e.start})") from None
    if not args.sql:
        raise ConfigError("give the query as an argument or with -f FILE")
    if args.sql == "-":
        text = sys.stdin.read()
        if not text.strip():
            raise ConfigError("no query on stdin")
        return text
    return args.sql


def connect_settings(args) -> dict:
    """The connection's settings from --set, --device and --ranks."""
    settings = dict(parse_set_option(s) for s in args.set)
    if args.device:
        settings["device"] = args.device
    if getattr(args, "ranks", None) is not None:
        settings["ranks"] = args.ranks
    return settings


def title(sql: str) -> str:
    """The query on one line, cut to 90 characters (a plot's title)."""
    one = " ".join(sql.split())
    return one if len(one) <= 90 else one[:87] + "..."


def storage_bps(root) -> float | None:
    """The storage read rate ``sluice calibrate`` measured for ``root`` (page-cached, else cold), if any."""
    cal = load_calibration(root)
    return (cal or {}).get("read_cached_bps") or (cal or {}).get("read_cold_bps")


def argv_for_ranks(argv: list[str], sql: str) -> list[str]:
    """The command line each rank runs: the query text inline (stdin is read once, here)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-f", "--file"):
            skip = True
            continue
        if a.startswith("--file=") or a == "-":
            continue
        out.append(a)
    if not any(a == sql for a in out):
        out.append(sql)
    return out
