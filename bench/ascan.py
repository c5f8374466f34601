"""Adaptive scan (A-Scan) sweep: the three static data-movement modes and ``auto``, side by
side in one run, over predicate selectivity x projected columns on lineitem (TPC-H) or lineorder
(SSB), plus a scan whose selectivity changes along the file; and runtime filters on vs off for
SSB / TPC-H joins.

    python bench/ascan.py --sf 10 --data /work/data/sf10 [--device cpu|cuda] [--threads N]
        [--selectivities 0.0001,0.01,0.1,1,10,100] [--columns 2,4,8,16] [--runs 1] [--decoder arrow]
    python bench/ascan.py --sf 10 --data /work/data/ssb-sf10 --table lineorder ...
    python bench/ascan.py --joins /work/data/ssb-sf10 --joins-only [--runs 2]
    python bench/ascan.py --workload /work/data/sf10 [--runs 2]   # every query, each mode

``--workload`` runs every TPC-H (or SSB) query with each static mode and auto side by side
(runtime filters on), per query and as a geomean relative to ``direct``: what the default
``scan_mode`` should be.

Each cell is the best of ``--runs`` wall times; the table gives every mode's time relative to
the best static mode at that point (1.00 = the best), and auto's. Answers are checked equal
across modes. Ratios only: absolute times depend on the machine.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402

MODES = ("direct", "pushdown", "staging", "auto")
COLUMNS = ["l_extendedprice", "l_quantity", "l_discount", "l_tax", "l_shipdate", "l_suppkey", "l_orderkey",
           "l_linenumber", "l_commitdate", "l_receiptdate", "l_returnflag", "l_linestatus", "l_shipinstruct",
           "l_shipmode", "l_comment"]


LO_COLUMNS = ["lo_extendedprice", "lo_quantity", "lo_discount", "lo_revenue", "lo_orderdate", "lo_suppkey",
              "lo_orderkey", "lo_linenumber", "lo_commitdate", "lo_custkey", "lo_orderpriority", "lo_shippriority",
              "lo_ordtotalprice", "lo_supplycost", "lo_tax", "lo_shipmode"]
COUNTED = ("l_return", "l_linestatus", "l_ship", "l_comm", "l_receipt", "lo_orderpriority", "lo_shipmode",
           "lo_commitdate", "lo_orderdate")


def query(sel_pct: float, ncols: int, table: str = "lineitem") -> str:
    """The part key is uniform and unsorted: ``l_partkey % 1000000 < k`` keeps about k/10^6 of
    lineitem's rows (``lo_partkey % 100000``: of lineorder's), and no row group can be pruned.
    ``ncols`` columns are projected in all, the part key included."""
    key, mod, cols = ("l_partkey", 1_000_000, COLUMNS) if table == "lineitem" else ("lo_partkey", 100_000, LO_COLUMNS)
    k = max(1, round(sel_pct / 100 * mod))
    aggs = ", ".join(f"count({c})" if c.startswith(COUNTED) else f"sum({c})" for c in cols[: ncols - 1])
    return f"select count(*), {aggs} from {table} where {key} % {mod} < {k}"


def phase_query(sf: float, table: str = "lineitem") -> str:
    """Selective over the first half of the file (sorted by the order key), then everything:
    the best mode changes half-way."""
    half = int(3_000_000 * sf)
    if table == "lineorder":
        return ("select count(*), sum(lo_extendedprice), count(lo_orderpriority), count(lo_shipmode) from lineorder "
                f"where (lo_orderkey < {half} and lo_partkey % 1000 = 0) or lo_orderkey >= {half}")
    return ("select count(*), sum(l_extendedprice), count(l_comment), count(l_shipinstruct) from lineitem "
            f"where (l_orderkey < {half} and l_partkey % 1000 = 0) or l_orderkey >= {half}")


def timed(con, sql, runs):
    best, out = math.inf, None
    for _ in range(runs):
        t = time.perf_counter()
        out = con.sql(sql).to_arrow()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--data", default=None, help="TPC-H (lineitem) or SSB (lineorder) data directory")
    ap.add_argument("--table", default="lineitem", choices=["lineitem", "lineorder"])
    ap.add_argument("--decoder", default="auto", choices=["auto", "arrow", "device"])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--selectivities", default="0.01,0.1,1,10,100", help="percent of rows kept")
    ap.add_argument("--columns", default="2,4,8,16")
    ap.add_argument("--joins", default=None, help="TPC-H/SSB data directory for the runtime-filter part")
    ap.add_argument("--joins-only", action="store_true", help="only the runtime-filter part")
    ap.add_argument("--workload", default=None, help="TPC-H/SSB data directory: every query in each mode")
    args = ap.parse_args()
    if args.joins_only:
        return joins(args)
    if args.workload:
        return workload(args)
    cons = {m: sluice.connect(args.data, device=args.device, threads=args.threads, scan_mode=m,
                              decoder=args.decoder) for m in MODES}
    print(f"A-Scan sweep: {args.table} SF {args.sf:g}, device={cons['direct'].config.device}, threads={args.threads}, "
          f"decoder={args.decoder}, runs={args.runs} (best of)")
    print(f"{'kept %':>8} {'cols':>4} " + " ".join(f"{m:>9}" for m in MODES) + "   best static  auto/best")
    timed(cons["direct"], query(100, max(int(x) for x in args.columns.split(",")), args.table), 1)  # warm the cache
    worst = 1.0
    for sel in [float(x) for x in args.selectivities.split(",")]:
        for ncols in [int(x) for x in args.columns.split(",")]:
            sql = query(sel, ncols, args.table)
            times, answer = {}, None
            for m in MODES:
                times[m], out = timed(cons[m], sql, args.runs)
                if answer is None:
                    answer = out
                elif out.to_pylist() != answer.to_pylist():
                    raise SystemExit(f"mode {m} gave a different answer for {sql}")
            best = min(("direct", "pushdown", "staging"), key=times.get)
            ratio = times["auto"] / times[best]
            worst = max(worst, ratio)
            print(f"{sel:8g} {ncols:4d} " + " ".join(f"{times[m]:8.2f}s" for m in MODES) +
                  f"   {best:>11}  {ratio:8.2f}", flush=True)
    print(f"worst auto / best static: {worst:.2f}")
    sql = phase_query(args.sf, args.table)
    times = {m: timed(cons[m], sql, args.runs)[0] for m in MODES}
    best = min(("direct", "pushdown", "staging"), key=times.get)
    print("phase change (selective first half, then all rows): " +
          ", ".join(f"{m} {t:.2f}s" for m, t in times.items()) + f"; auto / best static {times['auto'] / times[best]:.2f}")
    if args.joins:
        joins(args)


def joins(args):
    from sluice.testing.queries import ssb_queries, tpch_queries
    qs = ssb_queries() if (Path(args.joins) / "lineorder.parquet").exists() else tpch_queries()
    print(f"runtime filters on vs off ({args.joins}), scan_mode=pushdown")
    on = sluice.connect(args.joins, device=args.device, threads=args.threads, scan_mode="pushdown")
    off = sluice.connect(args.joins, device=args.device, threads=args.threads, scan_mode="pushdown",
                         runtime_filters=False)
    logs = []
    for name in sorted(qs):
        t_off, a = timed(off, qs[name], args.runs)
        t_on, b = timed(on, qs[name], args.runs)
        assert a.num_rows == b.num_rows
        logs.append(math.log(t_on / t_off))
        print(f"  {name:8s} off {t_off:7.2f}s on {t_on:7.2f}s  on/off {t_on / t_off:5.2f}", flush=True)
    print(f"  geomean on/off {math.exp(sum(logs) / len(logs)):.2f}")


def workload(args):
    """Every query of the benchmark in each mode, side by side; times relative to direct."""
    from sluice.testing.queries import ssb_queries, tpch_queries
    qs = ssb_queries() if (Path(args.workload) / "lineorder.parquet").exists() else tpch_queries()
    cons = {m: sluice.connect(args.workload, device=args.device, threads=args.threads, scan_mode=m,
                              decoder=args.decoder) for m in MODES}
    print(f"every query in each scan mode ({args.workload}), device={cons['direct'].config.device}, "
          f"threads={args.threads}, best of {args.runs}; relative to direct")
    print(f"  {'query':8s} " + " ".join(f"{m:>9}" for m in MODES) + "   " +
          " ".join(f"{m + '/d':>11}" for m in MODES[1:]))
    logs = {m: [] for m in MODES[1:]}
    for name in sorted(qs):
        times, answer = {}, None
        for m in MODES:
            times[m], out = timed(cons[m], qs[name], args.runs)
            if answer is None:
                answer = out
            elif out.num_rows != answer.num_rows:
                raise SystemExit(f"mode {m} gave {out.num_rows} rows for {name}, direct {answer.num_rows}")
        for m in logs:
            logs[m].append(math.log(times[m] / times["direct"]))
        print(f"  {name:8s} " + " ".join(f"{times[m]:8.2f}s" for m in MODES) + "   " +
              " ".join(f"{times[m] / times['direct']:11.2f}" for m in MODES[1:]), flush=True)
    print("  geomean vs direct: " + ", ".join(f"{m} {math.exp(sum(v) / len(v)):.2f}" for m, v in logs.items()))


if __name__ == "__main__":
    main()
