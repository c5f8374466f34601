"""Where one query's time goes: wall time of a warm run, then the same run under cProfile
(top functions by own time and by cumulative time: the main thread's; the I/O threads show
as its waits) and the ``--analyze`` report's end (read/decode/h2d/compute busy, what bound it). For a device call that must bring back a diagnosis, not only a number.

    python bench/profile_query.py --data DIR --device cuda --queries q01,q03 --set decoder=arrow
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.testing.queries import tpch_queries  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--queries", default="q01")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--top", type=int, default=22)
    args = ap.parse_args()
    settings = dict(s.split("=", 1) for s in args.set)
    con = sluice.connect(args.data, device=args.device, **settings)
    queries = tpch_queries()
    for name in args.queries.split(","):
        sql = queries[name]
        con.sql(sql).to_arrow()  # warm-up: metadata, kernels, allocator
        t0 = time.perf_counter()
        con.sql(sql).to_arrow()
        wall = time.perf_counter() - t0
        prof = cProfile.Profile()
        prof.enable()
        con.sql(sql).to_arrow()
        prof.disable()
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out)
        st.sort_stats("tottime").print_stats(args.top)
        st.sort_stats("cumulative").print_stats(args.top)
        text = "\n".join(ln[:170] for ln in out.getvalue().splitlines() if ln.strip())
        report = "\n".join(ln[:200] for ln in con.sql(sql).analyze().splitlines()[-40:])
        print(f"===== {name} device={con.device} {settings}: warm run {wall:.3f} s\n{report}\n{text}", flush=True)


if __name__ == "__main__":
    main()
