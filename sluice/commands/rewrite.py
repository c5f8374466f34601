"""``sluice rewrite``: Parquet files rewritten into a GPU- or CPU-friendly layout (row groups,
pages per chunk, encodings and codecs by trial), with a report per column."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from sluice.commands.output import write_atomic
from sluice.commands.progress import Progress
from sluice.layout.inspect import parquet_files
from sluice.layout.rewrite import options_from, rewrite
from sluice.metrics import fmt_bytes


def run(args, argv: list[str]) -> int:
    """Rewrite the files and report, per column, the encoding and codec chosen."""
    opts = options_from(args.preset, row_group_rows=args.row_group_rows, pages_per_chunk=args.pages_per_chunk,
                        encoding=args.encoding, compression=args.compression, min_gain=args.min_gain)
    total = sum(pq.read_metadata(f).num_rows for f in parquet_files(args.source)) if sys.stderr.isatty() else 0
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

