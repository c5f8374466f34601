"""Issue 29's out-of-memory probe: cap this process's share of the GPU with
``torch.cuda.set_per_process_memory_fraction`` (invisible to ``mem_get_info``) and run the TPC-H
queries with the largest operator states; each must match DuckDB -- spilling device -> pinned host
-> disk or rerunning under a smaller budget -- rather than fail.

    python bench/oom_probe.py --data DIR [--cap-mib 768] [--queries q18,q09,q21,q03]

Prints per query: the check against DuckDB, the peak bytes torch's allocator reserved, and the
memory lines of ``--analyze`` (device budget, spills, reruns). Needs CUDA; elsewhere exits 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import sluice  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402
from sluice.testing.queries import order_by_columns, tpch_queries  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--cap-mib", type=int, default=768)
    ap.add_argument("--queries", default="q18,q09,q21,q03")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 2
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((args.cap_mib << 20) / total, 0)
    con = sluice.connect(args.data, device="cuda")
    duck = duckdb_connect(args.data)
    queries = tpch_queries()
    failed = 0
    print(f"cap {args.cap_mib} MiB of {total >> 20} MiB on {torch.cuda.get_device_name()}")
    for name in args.queries.split(","):
        sql = queries[name]
        torch.cuda.reset_peak_memory_stats()
        try:
            rel = con.sql(sql)
            ours = rel.to_arrow()
            theirs = duck.sql(sql).to_arrow_table()
            compare(ours, theirs, order_by_columns(sql, theirs.column_names))
            check = "ok"
        except Exception as e:  # noqa: BLE001 -- a probe reports and goes on
            check = f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:160]}"
            failed += 1
        peak = torch.cuda.max_memory_reserved() >> 20
        print(f"{name}: {check}; peak reserved {peak} MiB", flush=True)
        if check == "ok":
            lines = [ln for ln in con.sql(sql).analyze().splitlines()
                     if any(w in ln.lower() for w in ("device", "spill", "rerun", "memory"))]
            print("   " + "\n   ".join(lines[:8]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
