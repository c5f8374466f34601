"""The queries whose cost grows with the data (issue 28's SF 10 list), in sluice and DuckDB side
by side in one process: median of 3 after a warm-up, the same Parquet files and thread count,
every answer checked.

    python bench/scaling.py --data /tmp/tpch10 [--threads 2] [--runs 3] [--set key=value]

They hold state that grows with the table (15 M groups, 60 M distinct strings, a top-k over 60
M rows, string MAX per group, TPC-H Q18's 15 M-group subquery), so an operator whose cost grows
faster than DuckDB's shows here and not at SF 1. Nothing here asserts times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.testing.oracle import duckdb_connect  # noqa: E402
from sluice.testing.queries import tpch_queries  # noqa: E402
from timing import answer_check, median_of  # noqa: E402

QUERIES = {
    # 15 M groups, folded into one row so that the check does not move 15 M rows
    "groups-15M": "select count(*) as g, sum(s) as s, max(n) as n from "
                  "(select l_orderkey, sum(l_quantity) as s, count(*) as n from lineitem group by l_orderkey) t",
    "top-5": "select l_extendedprice from lineitem order by l_extendedprice desc limit 5",
    "max-string": "select l_returnflag, l_linestatus, max(l_comment) as m from lineitem "
                  "group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus",
    "count-distinct": "select count(distinct l_comment) as d from lineitem",
    "q18": tpch_queries()["q18"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="TPC-H tables (sluice datagen tpch --sf 10 --out DIR)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default=None, help="comma-separated subset of " + ",".join(QUERIES))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    settings = dict(s.split("=", 1) for s in args.set)
    con = sluice.connect(args.data, device="cpu", threads=args.threads, **settings)
    duck = duckdb_connect(args.data, threads=args.threads)
    names = args.queries.split(",") if args.queries else list(QUERIES)
    print(f"{args.data} threads={args.threads} median of {args.runs}")
    print(f"{'query':<16}{'sluice s':>10}{'duckdb s':>10}{'ratio':>8}  check")
    for name in names:
        sql = QUERIES[name]
        check = answer_check(sql, con, duck)
        ts = median_of(lambda: con.sql(sql).to_arrow(), args.runs)
        td = median_of(lambda: duck.sql(sql).to_arrow_table(), args.runs)
        print(f"{name:<16}{ts:>10.3f}{td:>10.3f}{ts / td:>8.2f}  {check}", flush=True)


if __name__ == "__main__":
    main()
