"""``sluice datagen``: benchmark data written as Parquet (TPC-H, SSB, TPC-DS, ClickBench-like
hits, or a seeded table of nested columns)."""

from __future__ import annotations

import sys
import time

from sluice.commands.progress import Status
from sluice.datagen.clickbench import generate_clickbench
from sluice.datagen.events import generate_events
from sluice.datagen.folders import prepare_folder
from sluice.datagen.ssb import generate_ssb
from sluice.datagen.tpcds import generate_tpcds
from sluice.datagen.tpch import generate_tpch
from sluice.errors import ConfigError


def run(args, argv: list[str]) -> int:
    """Generate the benchmark's tables into ``--out``."""
    by_rows = args.benchmark in ("clickbench", "events")
    if args.rows is None:
        args.rows = 10_000 if args.benchmark == "events" else 10_000_000
    if by_rows and args.rows < 1:
        raise ConfigError(f"--rows must be at least 1, not {args.rows}")
    prepare_folder(args.benchmark, args.out, args.force)
    t0 = time.perf_counter()
    size = f"rows={args.rows:,}" if by_rows else f"sf={args.sf:g}"
    with Status(f"generating {args.benchmark} {size} into {args.out} ..."):
        if args.benchmark == "events":
            generate_events(args.rows, args.out, args.seed)
        elif args.benchmark == "clickbench":
            generate_clickbench(args.rows, args.out)
        elif args.benchmark == "tpch":
            generate_tpch(args.sf, args.out, parts=args.parts)
        elif args.benchmark == "tpcds":
            generate_tpcds(args.sf, args.out)
        else:
            generate_ssb(args.sf, args.out)
    print(f"wrote {args.benchmark} {size} to {args.out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0

