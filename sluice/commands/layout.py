"""The Parquet layout tools: ``sluice doctor`` (what makes files slow for a device, and the
fix), ``sluice inspect`` (row groups, pages, encodings, codecs) and ``sluice rewrite`` (files
rewritten into a GPU- or CPU-friendly layout). doctor and inspect read only footers and page
headers: they load pyarrow but no torch (tests/test_cli.py checks it)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from sluice.commands.output import write_atomic
from sluice.commands.progress import Progress
from sluice.layout import doctor, inspect
from sluice.layout.rewrite import options_from, rewrite
from sluice.metrics import fmt_bytes


def diagnose(args, argv: list[str]) -> int:
    """``sluice doctor``: the report for the device the files are checked for."""
    target = args.target
    if target == "auto":  # without importing torch: an NVIDIA driver with a GPU
        target = "gpu" if any(Path("/proc/driver/nvidia/gpus").glob("*")) else "cpu"
    device = "cuda" if target == "gpu" else "cpu"
    print(doctor.format_report(doctor.diagnose(args.path, device)))
    return 0


def show_layout(args, argv: list[str]) -> int:
    """``sluice inspect``: each file's layout, as text or JSON."""
    infos = [inspect.inspect_file(f, pages=not args.no_pages) for f in inspect.parquet_files(args.path)]
    print(json.dumps(infos, indent=1) if args.json else "\n\n".join(inspect.format_report(i) for i in infos))
    return 0


def rewrite_files(args, argv: list[str]) -> int:
    """``sluice rewrite``: Parquet rewritten into a GPU- or CPU-friendly layout, with a report per column."""
    opts = options_from(args.preset, row_group_rows=args.row_group_rows, pages_per_chunk=args.pages_per_chunk,
                        encoding=args.encoding, compression=args.compression, min_gain=args.min_gain)
    total = sum(pq.read_metadata(f).num_rows for f in inspect.parquet_files(args.source)) if sys.stderr.isatty() else 0
    bar = Progress(total)
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
        write_atomic(args.report, lambda tmp: Path(tmp).write_text(json.dumps(doc, indent=1)))
    return 0

