"""Scan pipeline benchmark: blocking vs overlapped sluice vs DuckDB, side by side in one run.

    python bench/scan.py --sf 1 10 [--device cpu|cuda] [--runs 3] [--png out.png]

For a full lineitem scan and TPC-H Q1, Q6, Q12, Q14 on the same files: best-of-runs time of
``pipeline=blocking``, ``pipeline=overlapped`` (default) and DuckDB (same thread count), the
ratios, the achieved fraction of T_min (needs ``sluice calibrate``; run first if missing) and the
stage that bounds the overlapped run. Every sluice result is checked against DuckDB.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.analyze import plot_timeline, stage_summary, t_min  # noqa: E402
from sluice.adapt.calibration import calibrate, load_calibration  # noqa: E402
from sluice.datagen.tpch import generate_tpch  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402
from sluice.testing.queries import order_by_columns, tpch_queries  # noqa: E402
from timing import best_of  # noqa: E402

FULL_SCAN = ("select count(*), sum(l_orderkey), sum(l_partkey), sum(l_suppkey), sum(l_linenumber), "
             "sum(l_quantity), sum(l_extendedprice), sum(l_discount), sum(l_tax), max(l_returnflag), "
             "max(l_linestatus), max(l_shipdate), max(l_commitdate), max(l_receiptdate), max(l_shipinstruct), "
             "max(l_shipmode), sum(length(l_comment)) from lineitem")


def drop_cache(data: Path) -> None:
    """Evict the data files from the page cache (clean pages; no root needed)."""
    for f in data.rglob("*.parquet"):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def best(fn, runs, cold_dir=None):
    return best_of(fn, runs, (lambda: drop_cache(cold_dir)) if cold_dir is not None else None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, nargs="+", default=[1.0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--png", default=None, help="timeline of the overlapped Q1 at the largest SF")
    ap.add_argument("--cold", action="store_true",
                    help="evict the files from the page cache before every timed run (storage-bound case)")
    args = ap.parse_args()
    queries = {"scan": FULL_SCAN, **{k: v for k, v in tpch_queries().items() if k in ("q01", "q06", "q12", "q14")}}
    for sf in args.sf:
        data = Path(f"data/tpch-sf{sf:g}")
        if not (data / "lineitem.parquet").exists():
            print(f"generating TPC-H sf={sf:g} ...", file=sys.stderr)
            generate_tpch(sf, data)
        if load_calibration(data) is None:
            print("calibrating storage bandwidth ...", file=sys.stderr)
            calibrate(data)
        cal = load_calibration(data)
        duck = duckdb_connect(data, threads=args.threads)
        over = sluice.connect(data, device=args.device, threads=args.threads)
        block = sluice.connect(data, device=args.device, threads=args.threads, pipeline="blocking")
        cold = data if args.cold else None
        print(f"\nTPC-H sf={sf:g} device={over.device} threads={args.threads} best of {args.runs} "
              f"({'cold: page cache dropped before each run' if args.cold else 'page-cached'}); "
              f"storage read: {cal['read_cold_bps'] / 2**30:.2f} GiB/s cold, "
              f"{cal['read_cached_bps'] / 2**30:.2f} GiB/s page-cached")
        print(f"{'query':<6}{'blocking':>10}{'overlap':>10}{'duckdb':>9}{'blk/ovl':>9}{'ovl/duck':>9}"
              f"{'T_min':>9}{'%T_min':>8}  bound by   check")
        for name, sql in queries.items():
            theirs_t, theirs = best(lambda: duck.sql(sql).to_arrow_table(), args.runs, cold)
            tb, rb = best(lambda: block.sql(sql).to_arrow(), args.runs, cold)
            rel = over.sql(sql)
            to, ro = best(lambda: rel.to_arrow(), args.runs, cold)
            op, ctx = rel.last_run
            summ = stage_summary(op, ctx)
            tm = t_min(summ, data, str(over.device)) or {}
            tmin = tm.get("cold" if args.cold else "cached", (float("nan"), 0))[0]
            try:
                compare(ro, theirs, order_by_columns(sql, theirs.column_names))
                compare(rb, theirs, order_by_columns(sql, theirs.column_names))
                check = "ok"
            except AssertionError as e:
                check = "MISMATCH " + str(e).splitlines()[0][:50]
            print(f"{name:<6}{tb:>10.3f}{to:>10.3f}{theirs_t:>9.3f}{tb / to:>9.2f}{to / theirs_t:>9.2f}"
                  f"{tmin:>9.3f}{(tmin / to * 100) if to else 0:>7.1f}%  {summ['bound']:<10} {check}", flush=True)
            if args.png and name == "q01" and sf == max(args.sf):
                plot_timeline(op, ctx, args.png, title=f"TPC-H Q1 sf={sf:g} overlapped on {over.device}")
        print(f"T_min = compressed bytes read / {'cold' if args.cold else 'page-cached'} storage bandwidth "
              "from `sluice calibrate`; bound by = stage with the highest utilisation in the overlapped run")


if __name__ == "__main__":
    main()
