"""Top-k (ORDER BY ... LIMIT k) with and without ``topk_filters``, beside DuckDB, in one run:
median of 3 each, 2 threads, the same Parquet files.

    python bench/topk.py --data /tmp/tpch10      # TPC-H tables (sluice datagen tpch --sf 10)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

import sluice  # noqa: E402
from sluice.testing.queries import limit_parts  # noqa: E402
from timing import median_of  # noqa: E402

QUERIES = [
    "select l_orderkey, l_extendedprice from lineitem order by l_extendedprice desc limit 5",
    "select l_orderkey, l_shipdate from lineitem order by l_orderkey desc limit 10",
    "select o_orderkey, o_totalprice from orders where o_orderstatus = 'F' order by o_totalprice limit 3",
]



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    duck = duckdb.connect()
    duck.execute(f"set threads={args.threads}")
    for t in ("lineitem", "orders"):
        duck.execute(f"create view {t} as select * from '{args.data}/{t}.parquet'")
    off = sluice.connect(args.data, device="cpu", threads=args.threads, topk_filters=False)
    on = sluice.connect(args.data, device="cpu", threads=args.threads)
    print(f"{'query':72} {'off s':>7} {'on s':>7} {'duckdb s':>8} {'on/duck':>7}")
    for q in QUERIES:
        ours, theirs = on.sql(q).to_arrow(), duck.sql(q).fetchall()
        keys = limit_parts(q, ours.column_names)[1]  # ties past the k-th row may pick other rows
        rows = [list(x.values()) for x in ours.to_pylist()]
        assert [[r[c] for c in keys] for r in rows] == [[r[c] for c in keys] for r in theirs], q
        t_off = median_of(lambda: off.sql(q).to_arrow(), 3)
        t_on = median_of(lambda: on.sql(q).to_arrow(), 3)
        t_duck = median_of(lambda: duck.sql(q).fetchall(), 3)
        print(f"{q[:72]:72} {t_off:7.3f} {t_on:7.3f} {t_duck:8.3f} {t_on / t_duck:7.2f}")


if __name__ == "__main__":
    main()
