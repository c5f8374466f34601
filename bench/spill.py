"""TPC-H under memory budgets: sluice vs DuckDB, each query in a process confined like a smaller
machine, side by side in one run (issue: larger than memory).

    python bench/spill.py --sf 10 [--queries q01,q18] [--fractions 0.25,0.1] [--overhead-mib 1024]

Per query: an unlimited run of each engine (its time and peak memory), then, for each
fraction f, both engines with a budget of f x sluice's in-memory peak (its resident memory
above an idle process) -- sluice's ``host_memory_limit`` and DuckDB's ``memory_limit`` -- each
in a memory cgroup of that budget plus a fixed overhead (the process itself: torch, pyarrow,
the chunks in flight), so that overrunning the budget gets it killed as on a smaller machine.
Reported: time, peak memory (resident, above the idle process), bytes spilled, the spill codecs chosen,
and throughput relative to the engine's own unlimited run; every sluice result is checked
against DuckDB's. Needs root for cgroups (without, budgets still apply but are not confined).
Nothing here is asserted: it prints tables.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sluice.testing import cgroup  # noqa: E402
from sluice.testing.oracle import compare  # noqa: E402
from sluice.testing.queries import order_by_columns, tpch_queries  # noqa: E402

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
engine, data, sql, settings, out = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
def hwm():
    return [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
info = {}
if engine == "sluice":
    sys.path.insert(0, settings.pop("_root"))
    import sluice
    con = sluice.connect(data, device="cpu", threads=settings.pop("_threads"), **settings)
    con.sql("select 1").to_arrow()
    base = hwm(); t1 = time.perf_counter()
    rel = con.sql(sql); table = rel.to_arrow()
    op, ctx = rel.last_run
    sm = ctx.spill_manager
    info = {"spilled": ctx.spilled_bytes(),
            "stored": sm.bytes_stored if sm else 0, "codecs": sm.codec.summary() if sm else "",
            "pool_peak": ctx.memory.peak}
else:
    import duckdb, pyarrow as pa
    sys.path.insert(0, settings.pop("_root"))
    from sluice.testing.oracle import duckdb_connect
    con = duckdb_connect(data, threads=settings.pop("_threads"))
    if settings.get("memory_limit"):
        con.execute(f"SET memory_limit='{settings['memory_limit']}B'")
        con.execute(f"SET temp_directory='{settings['temp']}'")
    con.sql("select 1").fetchall()
    base = hwm(); t1 = time.perf_counter()
    table = con.sql(sql).to_arrow_table()
    info = {"spilled": 0, "stored": 0, "codecs": ""}
t2 = time.perf_counter()
import pyarrow.parquet as pq
pq.write_table(table, out)
print(json.dumps({"query_s": t2 - t1, "total_s": t2 - t0, "base": base, "peak": hwm(), **info}))
'''


def run(engine: str, data: Path, sql: str, settings: dict, out: Path, limit: int | None, threads: int):
    settings = {**settings, "_root": str(ROOT), "_threads": threads}
    cmd = [sys.executable, "-c", CHILD, engine, str(data), sql, json.dumps(settings), str(out)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if limit is not None and cgroup.available():
        r = cgroup.run_confined(cmd, limit, env=env, timeout=3600)
        rc, stdout, stderr, peak, killed = r.returncode, r.stdout, r.stderr, r.peak_bytes, r.killed
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        rc, stdout, stderr, peak, killed = p.returncode, p.stdout, p.stderr, None, False
    if rc != 0:
        why = "killed (out of memory)" if killed else (stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": why[:120]}
    res = json.loads(stdout.strip().splitlines()[-1])
    res["cgroup_peak"] = peak
    return res


def fmt_mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=10)
    ap.add_argument("--data", default=None)
    ap.add_argument("--queries", default=None, help="comma-separated subset, e.g. q01,q18")
    ap.add_argument("--fractions", default="0.25,0.1")
    ap.add_argument("--overhead-mib", type=int, default=1024,
                    help="cgroup limit = budget + this (the process itself and its chunks in flight)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", default=None, help="also write all measurements here")
    args = ap.parse_args()

    data = Path(args.data or ROOT / f"data/tpch-sf{args.sf:g}")
    if not (data / "lineitem.parquet").exists():
        from sluice.datagen.tpch import generate_tpch
        print(f"generating TPC-H sf={args.sf:g} into {data} ...", file=sys.stderr)
        generate_tpch(args.sf, data)
    queries = tpch_queries()
    if args.queries:
        queries = {k: v for k, v in queries.items() if k in set(args.queries.split(","))}
    fractions = [float(f) for f in args.fractions.split(",")]
    overhead = args.overhead_mib << 20
    confined = cgroup.available()
    print(f"TPC-H sf={args.sf:g}, {args.threads} threads; budgets = fraction x sluice's in-memory peak; "
          f"each run {'in a memory cgroup of budget + ' + str(args.overhead_mib) + ' MiB' if confined else 'UNCONFINED (no cgroup permission)'}")
    rows, results = [], {}
    tmp = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
    for name, sql in queries.items():
        res = {}
        res["duckdb", None] = run("duckdb", data, sql, {}, tmp / f"{name}-duck.parquet", None, args.threads)
        res["sluice", None] = run("sluice", data, sql, {}, tmp / f"{name}-sluice.parquet", None, args.threads)
        free = res["sluice", None]
        need = max(1 << 20, (free.get("peak", 0) - free.get("base", 0))) if "error" not in free else None
        for f in fractions:
            if need is None:
                continue
            budget = max(64 << 20, int(need * f))
            limit = budget + overhead
            res["sluice", f] = run("sluice", data, sql, {"host_memory_limit": budget},
                                   tmp / f"{name}-sluice-{f}.parquet", limit, args.threads)
            spill_dir = tmp / f"duck-{name}-{f}"
            spill_dir.mkdir(exist_ok=True)
            res["duckdb", f] = run("duckdb", data, sql, {"memory_limit": budget, "temp": str(spill_dir)},
                                   tmp / f"{name}-duck-{f}.parquet", limit, args.threads)
            res["budget", f] = budget
        # Every sluice answer against DuckDB's unlimited one.
        import pyarrow.parquet as pq
        check = "ok"
        theirs = tmp / f"{name}-duck.parquet"
        for key, r in res.items():
            if "error" in res["duckdb", None]:
                check = f"no reference: duckdb {res['duckdb', None]['error'][:60]}"
                break
            if key[0] != "sluice" or "error" in r:
                continue
            suffix = "" if key[1] is None else f"-{key[1]}"
            try:
                ours = pq.read_table(tmp / f"{name}-sluice{suffix}.parquet")
                compare(ours, pq.read_table(theirs), order_by_columns(sql, ours.column_names))
            except AssertionError as e:
                check = f"MISMATCH {key[1]}: {str(e)[:80]}"
        results[name] = {f"{k[0]}@{k[1]}": v for k, v in res.items()}
        rows.append((name, res, check))
        line = [name, f"in-memory sluice {free.get('query_s', float('nan')):.2f}s",
                f"duckdb {res['duckdb', None].get('query_s', float('nan')):.2f}s", check]
        print("  ".join(line), file=sys.stderr, flush=True)

    print()
    for f in [None] + fractions:
        title = "unlimited" if f is None else f"budget = {f:g} x in-memory peak"
        print(f"### {title}\n")
        print("| query | budget MiB | sluice s | sluice peak MiB | spilled MiB (stored) | codecs | "
              "sluice vs in-mem | duckdb s | duckdb peak MiB | duckdb vs in-mem | check |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        rel_s, rel_d = [], []
        for name, res, check in rows:
            s, d = res.get(("sluice", f), {}), res.get(("duckdb", f), {})
            s0, d0 = res["sluice", None], res["duckdb", None]
            budget = res.get(("budget", f))

            def cell(r, r0, rel):
                if not r:
                    return "-", "-", "-"
                if "error" in r:
                    return r["error"], "-", "-"
                peak = r["peak"] - r["base"]  # resident memory above the idle process
                ratio = r0["query_s"] / r["query_s"] if "query_s" in r0 else float("nan")
                if f is not None and ratio == ratio:
                    rel.append(ratio)
                return f"{r['query_s']:.2f}", fmt_mib(peak), f"{ratio:.0%}" if f is not None else "-"
            st, sp, sr = cell(s, s0, rel_s)
            dt, dp, dr = cell(d, d0, rel_d)
            spilled = f"{fmt_mib(s.get('spilled'))} ({fmt_mib(s.get('stored'))})" if s and "error" not in s else "-"
            print(f"| {name} | {fmt_mib(budget) if budget else '-'} | {st} | {sp} | {spilled} | "
                  f"{s.get('codecs', '') or '-'} | {sr} | {dt} | {dp} | {dr} | {check} |")
        if rel_s:
            gs = math.exp(sum(math.log(x) for x in rel_s) / len(rel_s))
            gd = math.exp(sum(math.log(x) for x in rel_d) / len(rel_d)) if rel_d else float("nan")
            print(f"\ngeomean throughput relative to in-memory: sluice {gs:.0%}, duckdb {gd:.0%} "
                  f"({len(rel_s)} of {len(rows)} sluice runs completed)\n")
        else:
            print()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
