"""External sort under a small budget, two source trees side by side (the merge's cost and its
memory): TPC-H SF 1's lineitem sorted twice -- by a string, and by a key its files are nearly
in order of (descending: every run's pages arrive above the others') -- written to Parquet.

    python bench/sort_merge.py --data data/tpch-sf1 --trees /path/to/before /path/to/after [--budget 128MiB]

Each tree runs in its own process (its ``sluice`` first on ``sys.path``), interleaved twice."""

from __future__ import annotations

import argparse
import subprocess
import sys

QUERIES = {
    "by string": "select l_orderkey, l_partkey, l_comment, l_shipdate from lineitem order by l_comment, l_orderkey",
    "by a key in reverse": "select l_orderkey, l_partkey, l_shipdate from lineitem order by l_orderkey desc, l_partkey",
}
ONE = """
import sys, time, tempfile, os
sys.path.insert(0, sys.argv[1])
import sluice
con = sluice.connect(sys.argv[2], device="cpu", host_memory_limit=sys.argv[3])
out = os.path.join(tempfile.mkdtemp(), "sorted.parquet")
t = time.perf_counter(); n = con.sql(sys.argv[4]).write(out); print(f"{time.perf_counter() - t:.2f} {n}")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--trees", nargs="+", required=True)
    ap.add_argument("--budget", default="128MiB")
    args = ap.parse_args()
    for name, sql in QUERIES.items():
        for k in range(2):
            for tree in (args.trees if k == 0 else args.trees[::-1]):
                out = subprocess.run([sys.executable, "-c", ONE, tree, args.data, args.budget, sql],
                                     capture_output=True, text=True, check=True).stdout.split()
                print(f"{name:<22} {tree:<30} {out[0]:>7} s  {out[1]} rows", flush=True)


if __name__ == "__main__":
    main()
