"""ClickBench's 43 queries, sluice beside DuckDB in one run: 2 threads each, the same Parquet
file, median of 3 after one warm-up, every answer checked (ties at a LIMIT as in
``tests/sql/test_clickbench.py``). A query sluice refuses is listed as refused, with its line.

    python bench/clickbench.py --data /tmp/hits10m            # generates 10 M hits when absent
    python bench/clickbench.py --data DIR --rows 1000000 --queries q00,q08
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from timing import median_of  # noqa: E402
from sluice.datagen.clickbench import generate_clickbench  # noqa: E402
from sluice.errors import UnsupportedError  # noqa: E402
from sluice.testing.oracle import compare, compare_limited, duckdb_connect  # noqa: E402
from sluice.testing.queries import clickbench_queries, limit_parts  # noqa: E402



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--rows", type=int, default=10_000_000, help="hits to generate when the folder has none")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default=None, help="comma-separated subset, e.g. q00,q08")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "hits.parquet").exists():
        t0 = time.perf_counter()
        generate_clickbench(args.rows, data)
        print(f"generated {args.rows:,} hits in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    con = sluice.connect(data, device="cpu", threads=args.threads)
    duck = duckdb_connect(data, threads=args.threads)
    queries = clickbench_queries()
    names = args.queries.split(",") if args.queries else sorted(queries)
    print(f"clickbench {data} threads={args.threads} runs={args.runs} (median)")
    print(f"{'query':6} {'sluice s':>9} {'duckdb s':>9} {'ratio':>7}  check")
    ratios = []
    for name in names:
        sql = queries[name]
        try:
            ours = con.sql(sql).to_arrow()
        except UnsupportedError as e:
            print(f"{name:6} {'refused':>9} {'':>9} {'':>7}  {str(e).splitlines()[0][:90]}")
            continue
        theirs = duck.sql(sql).to_arrow_table()
        lim = limit_parts(sql, ours.column_names)
        try:
            if lim is None:
                compare(ours, theirs)
            else:
                compare_limited(ours, theirs, duck.sql(lim[0]).to_arrow_table(), lim[1])
            check = "ok" if ours.num_rows else "ok (empty)"
        except AssertionError as e:
            check = "DIFF " + str(e).splitlines()[0][:80]
        ts = median_of(lambda: con.sql(sql).to_arrow(), args.runs)
        td = median_of(lambda: duck.sql(sql).fetchall(), args.runs)
        ratios.append(ts / td)
        print(f"{name:6} {ts:9.3f} {td:9.3f} {ts / td:7.2f}  {check}", flush=True)
    if ratios:
        print(f"geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} (sluice time / duckdb time) "
              f"over {len(ratios)} queries")


if __name__ == "__main__":
    main()
