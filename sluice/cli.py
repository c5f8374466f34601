"""Command line: ``sluice demo | query | explain | datagen | inspect | rewrite | calibrate``.

Every failure ends with one line on stderr and a non-zero exit status; output files are
written to a temporary name and renamed only when complete.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from sluice.errors import ConfigError, DataError, InternalError, SluiceError
from sluice import __version__
from sluice.setting_values import parse_set_option
import shutil
import dataclasses
import json
from sluice.metrics import fmt_bytes, fmt_rate, merged_trace
import sluice
from sluice.testing.queries import tpch_queries
from sluice.torchrun import main as torchrun_main, report
from sluice.io.permissions import set_final_mode
from sluice.ranks import liveness

EXIT_USER = 1
EXIT_INTERNAL = 2


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


def _query_text(args) -> str:
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


def _print_as(table, fmt: str) -> None:
    """Every row on stdout as csv, json lines or a markdown table."""
    from sluice.render import format_rows  # deferred: keeps `sluice --help` free of numpy, pyarrow
    text = format_rows(table, fmt)
    if text:
        print(text)


def _settings(args) -> dict:
    settings = dict(parse_set_option(s) for s in args.set)
    if args.device:
        settings["device"] = args.device
    if getattr(args, "ranks", None) is not None:
        settings["ranks"] = args.ranks
    return settings


def _print_table(table, max_rows: int) -> None:
    """An aligned text table like DuckDB's shell output, fitted to the terminal when stdout is one."""
    from sluice.render import format_table  # deferred: keeps `sluice --help` free of numpy, pyarrow
    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else None
    print(format_table(table, width, max_rows, tail=False, hint="-o FILE saves all"))


def _title(sql: str) -> str:
    one = " ".join(sql.split())
    return one if len(one) <= 90 else one[:87] + "..."


class _Status:
    """A live status line with elapsed time on stderr when it is a terminal; silent otherwise."""

    def __init__(self, text: str) -> None:
        self._cm = None
        if sys.stderr.isatty():
            from rich.console import Console  # deferred: keeps `sluice --help` free of rich
            self._cm = Console(stderr=True).status(text)

    def __enter__(self):
        if self._cm is not None:
            self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self._cm is not None:
            self._cm.__exit__(*exc)


class _Progress:
    """Bytes scanned of bytes to scan, the rate, the fraction of the storage bound it reaches
    (the rate over the bandwidth ``sluice calibrate`` measured, when it has), the stage that
    bounds the run so far, and the time left from the measured rate -- binary units throughout,
    on stderr when it is a terminal; silent otherwise. Pass it as ``progress=``: the engine calls
    it with each scanned byte count and hands it the run's context (``attach``)."""

    def __init__(self, total: int, storage_bps: float | None = None, job=None) -> None:
        self._p = None
        self._ctx = None
        # In a job of several ranks (``job``: this rank's watchdog) the bar shows every rank's
        # scans: their bytes come with the watchdog's records, summed here twice a second.
        self._job = job
        self._stop = threading.Event()
        if sys.stderr.isatty() and total > 0:
            from rich.console import Console  # deferred: keeps `sluice --help` free of rich
            from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, TimeRemainingColumn  # deferred: keeps `sluice --help` free of rich
            from rich.text import Text  # deferred: keeps `sluice --help` free of rich

            bar = self

            class Rate(ProgressColumn):
                def render(self, task):
                    if not task.speed:
                        return Text("?", style="progress.data.speed")
                    text = fmt_rate(task.speed)
                    if storage_bps:
                        text += f" ({task.speed / storage_bps:.0%} of T_min)"
                    return Text(text, style="progress.data.speed")

            class Bound(ProgressColumn):
                def render(self, task):
                    return Text(f"bound by {bar.bound()}" if bar.bound() else "", style="progress.description")
            self._p = Progress("scanning", BarColumn(), DownloadColumn(binary_units=True), Rate(), Bound(),
                               TimeRemainingColumn(), "left", console=Console(stderr=True), transient=True)
            self._task = self._p.add_task("scan", total=total)

    @property
    def shows_stages(self) -> bool:
        """Whether the display is live (it names the bounding stage: reads are timed apart)."""
        return self._p is not None

    def attach(self, ctx) -> None:
        if self._ctx is not None and self._p is not None:
            self._p.reset(self._task)  # the query runs again (after the GPU ran out of memory)
        self._ctx = ctx

    def bound(self) -> str | None:
        if self._ctx is None:
            return None
        from sluice.analyze import stage_utilisation  # deferred: keeps `sluice --help` free of numpy, pyarrow, torch
        return stage_utilisation(self._ctx)[1]

    def __enter__(self):
        if self._p is not None:
            self._p.__enter__()
            if self._job is not None:
                threading.Thread(target=self._follow_job, name="sluice-progress", daemon=True).start()
        return self

    def __call__(self, nbytes: int) -> None:
        if self._job is not None:
            self._job.scanned(nbytes)
        elif self._p is not None:
            self._p.advance(self._task, nbytes)

    advance = __call__

    def _follow_job(self) -> None:
        while not self._stop.wait(0.5):
            self._p.update(self._task, completed=self._job.job_scan()[0])

    def __exit__(self, *exc):
        self._stop.set()
        if self._p is not None:
            self._p.__exit__(*exc)


def _storage_bps(root) -> float | None:
    from sluice.adapt.calibration import load_calibration  # deferred: keeps `sluice --help` free of torch
    cal = load_calibration(root)
    return (cal or {}).get("read_cached_bps") or (cal or {}).get("read_cold_bps")


def _write_atomic(path: str, write) -> None:
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


def _rewrite(args) -> int:
    import pyarrow.parquet as pq  # deferred: keeps `sluice --help` free of pyarrow
    from sluice.layout.inspect import parquet_files  # deferred: keeps `sluice --help` free of pyarrow
    from sluice.layout.rewrite import options_from, rewrite  # deferred: keeps `sluice --help` free of pyarrow
    opts = options_from(args.preset, row_group_rows=args.row_group_rows, pages_per_chunk=args.pages_per_chunk,
                        encoding=args.encoding, compression=args.compression, min_gain=args.min_gain)
    total = sum(pq.read_metadata(f).num_rows for f in parquet_files(args.source)) if sys.stderr.isatty() else 0
    bar = _Progress(total)
    with bar:
        reports = rewrite(args.source, args.target, opts, progress=bar.advance)
    for rep in reports:
        print(f"{rep.source} -> {rep.target}: {rep.rows:,} rows, {rep.row_groups} row groups, "
              f"{fmt_bytes(rep.bytes_in)} -> {fmt_bytes(rep.bytes_out)} ({rep.bytes_out / max(rep.bytes_in, 1):.2f}x)")
        for c in rep.columns:
            codec = c.codec + (f":{c.level}" if c.level is not None else "")
            print(f"  {c.column:<20} {c.encoding:<24} {codec:<8} ratio {c.ratio:6.2f} "
                  f"(sample {fmt_bytes(c.raw_bytes)} plain -> {fmt_bytes(c.final_bytes)})")
    if args.report:
        doc = [{**{k: v for k, v in dataclasses.asdict(r).items() if k != "columns"},
                "columns": [{**dataclasses.asdict(c), "ratio": c.ratio} for c in r.columns]} for r in reports]
        _write_atomic(args.report, lambda tmp: Path(tmp).write_text(json.dumps(doc, indent=1)))
    return 0


def _demo(args) -> int:
    """The main job on its embedded default: TPC-H at SF 1 (generated under data/ when it is
    not there), every query answered, a line per query, then Q1's answer."""
    from sluice.datagen.tpch import generate_tpch  # deferred: keeps `sluice --help` free of pyarrow
    data = Path(args.data or f"data/tpch-sf{args.sf:g}")
    if not (data / "lineitem.parquet").exists() and not (data / "lineitem").is_dir():
        t0 = time.perf_counter()
        with _Status(f"generating TPC-H sf={args.sf:g} into {data} (once) ..."):
            generate_tpch(args.sf, data)
        print(f"generated TPC-H sf={args.sf:g} in {data} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    queries = tpch_queries()
    if args.queries:
        wanted = [q.strip() for q in args.queries.split(",")]
        unknown = [q for q in wanted if q not in queries]
        if unknown:
            raise ConfigError(f"unknown queries {', '.join(unknown)} (q01 .. q22)")
        queries = {q: queries[q] for q in wanted}
    settings = {"device": args.device} if args.device else {}
    con = sluice.connect(data, **settings)
    first = None
    try:
        print(f"TPC-H sf={args.sf:g} in {data} on {con.device}")
        total = 0.0
        for name, sql in queries.items():
            t0 = time.perf_counter()
            table = con.sql(sql).to_arrow()
            dt = time.perf_counter() - t0
            total += dt
            first = first or (name, table)
            print(f"{name}  {table.num_rows:>6} rows  {dt:7.3f} s", flush=True)
        print(f"all {len(queries)} queries in {total:.2f} s; {first[0]}'s answer:")
        _print_table(first[1], 40)
    finally:
        con.close()
    return 0


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "torchrun":  # torchrun's own options follow: its parser reads them
        return torchrun_main(argv[1:])
    args = _parser().parse_args(argv or ["shell"])
    if args.cmd is None:
        _parser().error("give a command, or no arguments for the shell")
    if args.cmd == "shell":
        from sluice.shell import run_shell  # deferred: keeps `sluice --help` free of numpy, pyarrow
        if not Path(args.data).is_dir():
            raise DataError(f"data directory {args.data} does not exist")
        con = sluice.connect(args.data, **_settings(args))
        try:
            return run_shell(con)
        finally:
            con.close()
    if args.cmd == "doctor":
        from sluice.layout.doctor import diagnose, format_report  # deferred: keeps `sluice --help` free of pyarrow
        target = args.target
        if target == "auto":  # without importing torch: an NVIDIA driver with a GPU
            target = "gpu" if any(Path("/proc/driver/nvidia/gpus").glob("*")) else "cpu"
        device = "cuda" if target == "gpu" else "cpu"
        print(format_report(diagnose(args.path, device)))
        return 0
    if args.cmd == "inspect":
        from sluice.layout.inspect import format_report, inspect_file, parquet_files  # deferred: keeps `sluice --help` free of pyarrow
        infos = [inspect_file(f, pages=not args.no_pages) for f in parquet_files(args.path)]
        print(json.dumps(infos, indent=1) if args.json else "\n\n".join(format_report(i) for i in infos))
        return 0
    if args.cmd == "rewrite":
        return _rewrite(args)
    if args.cmd == "calibrate":
        import torch  # deferred: keeps `sluice --help` free of torch
        from sluice.adapt.calibration import cache_file, calibrate  # deferred: keeps `sluice --help` free of torch
        from sluice.devices import resolve_device  # deferred: keeps `sluice --help` free of torch
        if not Path(args.data).is_dir():
            raise DataError(f"data directory {args.data} does not exist")
        dev = resolve_device(args.device or "auto")
        with _Status(f"reading Parquet files under {args.data} ..."):
            r = calibrate(args.data, dev)
        print(f"storage read, cold:         {fmt_rate(r['read_cold_bps'])} ({r['files']} files, "
              f"{r['bytes'] / 2**20:.0f} MiB)")
        print(f"storage read, page-cached:  {fmt_rate(r['read_cached_bps'])}")
        print(f"host -> device:             {fmt_rate(r['h2d_bps']) if r['h2d_bps'] else 'n/a (' + str(dev) + ')'}")
        if args.ranks is not None:
            if args.ranks < 2:
                raise ConfigError(f"--ranks must be at least 2 to measure an all-to-all, not {args.ranks}")
            from sluice.adapt.calibration import save_all_to_all  # deferred: keeps `sluice --help` free of torch
            from sluice.launch import run_job  # deferred: keeps `sluice --help` free of pyarrow
            status: dict = {}
            with _Status(f"measuring all-to-all between {args.ranks} ranks ..."):
                run_job(args.ranks, {"kind": "bandwidth"}, status=status)
            rates = {int(k): v for k, v in status["bandwidth"].items()}
            save_all_to_all(args.data, args.ranks, rates)
            print(f"all-to-all, {args.ranks} ranks:     " + ", ".join(
                f"{fmt_rate(v)} at {k >> 10} KiB" for k, v in sorted(rates.items())) + " per rank to the others")
        print(f"saved to {cache_file()}")
        del torch
        return 0
    if args.cmd == "demo":
        return _demo(args)
    if args.cmd == "datagen":
        from sluice.datagen.ssb import generate_ssb  # deferred: keeps `sluice --help` free of numpy, pyarrow
        from sluice.datagen.tpcds import generate_tpcds  # deferred: keeps `sluice --help` free of pyarrow
        from sluice.datagen.tpch import generate_tpch  # deferred: keeps `sluice --help` free of pyarrow
        from sluice.datagen.folders import prepare_folder  # deferred: keeps `sluice --help` free of numpy, pyarrow
        by_rows = args.benchmark in ("clickbench", "events")
        if args.rows is None:
            args.rows = 10_000 if args.benchmark == "events" else 10_000_000
        if by_rows and args.rows < 1:
            raise ConfigError(f"--rows must be at least 1, not {args.rows}")
        prepare_folder(args.benchmark, args.out, args.force)
        t0 = time.perf_counter()
        size = f"rows={args.rows:,}" if by_rows else f"sf={args.sf:g}"
        with _Status(f"generating {args.benchmark} {size} into {args.out} ..."):
            if args.benchmark == "events":
                from sluice.datagen.events import generate_events  # deferred: keeps `sluice --help` free of numpy, pyarrow
                generate_events(args.rows, args.out, args.seed)
            elif args.benchmark == "clickbench":
                from sluice.datagen.clickbench import generate_clickbench  # deferred: keeps `sluice --help` free of numpy, pyarrow
                generate_clickbench(args.rows, args.out)
            elif args.benchmark == "tpch":
                generate_tpch(args.sf, args.out, parts=args.parts)
            elif args.benchmark == "tpcds":
                generate_tpcds(args.sf, args.out)
            else:
                generate_ssb(args.sf, args.out)
        print(f"wrote {args.benchmark} {size} to {args.out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        return 0
    sql = _query_text(args)
    con = sluice.connect(args.data, **_settings(args))
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
            from sluice.launch import run_cli  # deferred: keeps `sluice --help` free of pyarrow
            return run_cli(con.config.ranks, _argv_for_ranks(argv, sql), con.config.spill_dirs(),
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
            with _Progress(rel.bytes_to_scan(whole_job=job is not None) if sys.stderr.isatty() else 0,
                           _storage_bps(con.root), job) as bar:
                # Streamed chunk by chunk into a temporary file, renamed when complete.
                _write_atomic(args.output, lambda tmp: written.append(
                    rel.write(tmp, suffix.lstrip("."), progress=bar)))
            elapsed = time.perf_counter() - t0
            print(f"wrote {written[0]} rows to {args.output}", file=sys.stderr)
        else:
            with _Progress(rel.bytes_to_scan(whole_job=job is not None) if sys.stderr.isatty() else 0,
                           _storage_bps(con.root), job) as bar:
                table = rel.to_arrow(progress=bar)
            elapsed = time.perf_counter() - t0
            if args.verify:  # before anything is printed: a difference leaves no output
                print(rel.verify(table), file=sys.stderr)
            if not args.analyze:
                if args.format == "table":
                    _print_table(table, args.max_rows)
                else:
                    _print_as(table, args.format)
        op, ctx = rel.last_run
        if args.analyze:
            from sluice.analyze import analyze_report  # deferred: keeps `sluice --help` free of numpy, pyarrow, torch
            print(analyze_report(op, ctx, con.root))
        if args.plot:
            from sluice.analyze import plot_timeline  # deferred: keeps `sluice --help` free of numpy, pyarrow, torch
            _write_atomic(args.plot, lambda tmp: plot_timeline(op, ctx, tmp, title=_title(sql)))
            print(f"wrote timeline to {args.plot}", file=sys.stderr)
        if args.trace:

            def dump(tmp):  # on several ranks: one process per rank
                with open(tmp, "w") as f:
                    json.dump(merged_trace(ctx.recorder, ctx.rank_stats), f)
            _write_atomic(args.trace, dump)
            print(f"wrote trace to {args.trace}", file=sys.stderr)
        if args.timing:
            print(f"time: {elapsed:.3f}s on {con.device}", file=sys.stderr)
    finally:
        con.close()
    return 0


def _argv_for_ranks(argv: list[str], sql: str) -> list[str]:
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
