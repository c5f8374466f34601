"""``sluice demo``: the 22 TPC-H queries answered on SF 1, generating the data when absent."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import sluice
from sluice.commands.output import print_table
from sluice.commands.progress import Status
from sluice.datagen.tpch import generate_tpch
from sluice.errors import ConfigError
from sluice.testing.queries import tpch_queries


def run(args, argv: list[str]) -> int:
    """The main job on its embedded default: TPC-H at SF 1 (generated under data/ when it is
    not there), every query answered, a line per query, then Q1's answer."""
    data = Path(args.data or f"data/tpch-sf{args.sf:g}")
    if not (data / "lineitem.parquet").exists() and not (data / "lineitem").is_dir():
        t0 = time.perf_counter()
        with Status(f"generating TPC-H sf={args.sf:g} into {data} (once) ..."):
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
        print_table(first[1], 40)
    finally:
        con.close()
    return 0
