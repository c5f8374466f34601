"""Issue 47: the queries over SF 10 l_comment that held most memory, run as a user on a smaller
machine meets them -- in a memory cgroup of ``--cgroup-gib`` with ``host_memory_limit`` of
``--budget-gib`` -- and timed against DuckDB in one process.

    python bench/distinct_memory.py --data DIR [--cgroup-gib 3] [--budget-gib 2] [--runs 3]
        [--queries distinct,minmax] [--no-confined] [--no-timing] [--set key=value]

Confined (needs root and cgroups): each query in a fresh process in its own cgroup; printed are
its peak resident set (VmHWM), the cgroup's peak charge (page cache included), whether it was
killed, and -- sampled every 20 ms, at the moment the anonymous resident set peaked -- where the
memory was: the host pool's reservations, pyarrow's allocator, and the rest (torch's tensors,
glibc's heap and its retention). Timing: sluice (the same budget) and DuckDB side by side in one
process, the same files and threads, median of ``--runs`` after a warm-up; the ratio is what
counts on a shared machine. Every answer is checked against DuckDB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERIES = {
    "distinct": "select count(distinct l_comment) as d from lineitem",
    "minmax": "select l_returnflag, l_linestatus, min(l_comment) as lo, max(l_comment) as hi from lineitem "
              "group by 1, 2 order by 1, 2",
}


def _child(data: str, sql: str, settings: dict) -> None:
    """Run ``sql`` once in this process, sampling memory; print one line of json."""
    import pyarrow as pa

    import sluice
    from sluice.io import memory

    pools: list = []
    init = memory.MemoryPool.__init__

    def tracked(self, *a, **k):
        init(self, *a, **k)
        if self.kind == "host":
            pools.append(self)
    memory.MemoryPool.__init__ = tracked
    con = sluice.connect(data, device="cpu", **settings)
    con.sql("select count(*) from nation").to_arrow()
    at_peak = {"anon": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            anon = memory.anonymous_resident_bytes()
            if anon > at_peak["anon"]:
                at_peak.update(anon=anon, pool=sum(p.used for p in pools), arrow=pa.total_allocated_bytes())
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    rel = con.sql(sql)
    rows = [list(r.values()) for r in rel.to_arrow().to_pylist()]
    secs = time.perf_counter() - t0
    done.set()
    t.join()
    with open("/proc/self/status") as f:
        hwm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))
    _, ctx = rel.last_run
    print(json.dumps({"rows": rows, "secs": secs, "hwm": hwm, "spilled": ctx.spilled_bytes(), **at_peak},
                     default=str))


def confined(args, name: str, sql: str, settings: dict, duck) -> None:
    from sluice.testing import cgroup

    if not cgroup.available():
        print(f"{name}: no memory cgroups here (needs root)")
        return
    cmd = [sys.executable, __file__, "--child", args.data, sql, json.dumps(settings)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = cgroup.run_confined(cmd, int(args.cgroup_gib * (1 << 30)), env=env, timeout=1800)
    if r.killed or r.returncode != 0:
        print(f"{name}: {'KILLED' if r.killed else f'exit {r.returncode}'} "
              f"(cgroup peak {r.peak_bytes / 1e9:.2f} GB) {r.stderr.strip().splitlines()[-1:] if r.stderr else ''}")
        return
    out = json.loads(r.stdout.strip().splitlines()[-1])
    want = [list(x) for x in duck.sql(sql).fetchall()]
    check = "ok" if out["rows"] == want else f"MISMATCH {out['rows']} != {want}"
    g = 1 << 30
    rest = out["anon"] - out.get("arrow", 0)  # (the pool counts much of what pyarrow holds)
    print(f"{name}: {check}; {out['secs']:.1f} s; peak RSS {out['hwm'] / 1e9:.2f} GB, cgroup peak "
          f"{r.peak_bytes / 1e9:.2f} GB; at the anonymous peak {out['anon'] / g:.2f} GiB: pool "
          f"{out.get('pool', 0) / g:.2f}, pyarrow {out.get('arrow', 0) / g:.2f}, outside pyarrow {rest / g:.2f} GiB; "
          f"spilled {out['spilled'] / g:.2f} GiB", flush=True)


def timed(args, name: str, sql: str, con, duck) -> None:
    from timing import answer_check, median_of

    check = answer_check(sql, con, duck)
    ts, td = [], []
    for _ in range(args.runs):  # alternating, so that both meet the same load on a shared machine
        ts.append(median_of(lambda: con.sql(sql).to_arrow(), 1))
        td.append(median_of(lambda: duck.sql(sql).to_arrow_table(), 1))
    s, d = sorted(ts)[len(ts) // 2], sorted(td)[len(td) // 2]
    print(f"{name}: {check}; sluice {s:.2f} s, DuckDB {d:.2f} s, ratio {s / d:.2f} "
          f"(sluice {', '.join(f'{t:.2f}' for t in ts)}; DuckDB {', '.join(f'{t:.2f}' for t in td)})", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--cgroup-gib", type=float, default=3)
    ap.add_argument("--budget-gib", type=float, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--no-confined", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    from sluice.testing.oracle import duckdb_connect

    settings = {"threads": args.threads, "host_memory_limit": int(args.budget_gib * (1 << 30)),
                **dict(s.split("=", 1) for s in args.set)}
    duck = duckdb_connect(args.data, threads=args.threads)
    names = args.queries.split(",")
    print(f"{args.data}: {settings}, cgroup {args.cgroup_gib} GiB, threads {args.threads}")
    if not args.no_confined:
        for name in names:
            confined(args, name, QUERIES[name], settings, duck)
    if not args.no_timing:
        import sluice
        con = sluice.connect(args.data, device="cpu", **settings)
        for name in names:
            timed(args, name, QUERIES[name], con, duck)


if __name__ == "__main__":
    main()
