"""Issue 51: every nested construct of ``bench/nested_1m.py`` (and queries whose rows share one
list: an ordered LIST per group, a join handing each row its group's list) at a million events,
each in a fresh process confined by a memory cgroup smaller than the data decoded, with a host
budget below that -- as on a small machine or container. Printed per construct: whether its
answer is DuckDB's (DuckDB runs outside the cgroup), its time, the process's peak resident set
(VmHWM), the cgroup's peak charge (page cache included), what it spilled, or that it was killed
or failed.

    python bench/nested_confined.py DATA_DIR [--cgroup-gib 1] [--budget-mib 512] [--threads 2]
        [--only SUBSTRING] [--set key=value ...]

Needs root (memory cgroups: :mod:`sluice.testing.cgroup`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nested_1m import QUERIES as CONSTRUCTS, _norm  # noqa: E402

SHARED = [
    ("list(x order by), three lists", "select kind, len(list(event_id order by event_id)), "
                                         "list(event_id order by event_id desc)[1], list(event_id order by event_id)[-1] "
                                         "from events group by kind"),
    ("join carries a group's list", "select count(*), max(g.l[1]), min(len(g.l)), min(g.l[-1]) from events e join "
                                    "(select kind, list(event_id order by event_id desc) l from events group by kind) g "
                                    "on e.kind = g.kind where e.event_id % 10000 = 0"),
]


def _whole(v):
    """A float of an integral value as that integer (DuckDB's HUGEINT sums come as decimals)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return tuple(_whole(x) for x in v) if isinstance(v, tuple) else v


def _rows(table) -> str:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return repr(sorted((tuple(_whole(_norm(c[r])) for c in cols) for r in range(table.num_rows)), key=repr))


def _child(data: str, sql: str, settings: dict) -> None:
    """Run ``sql`` once in this process; print one line of json."""
    import sluice

    con = sluice.connect(data, device="cpu", **settings)
    t0 = time.perf_counter()
    rel = con.sql(sql)
    table = rel.to_arrow()
    secs = time.perf_counter() - t0
    with open("/proc/self/status") as f:
        hwm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))
    _, ctx = rel.last_run
    rows = _rows(table)
    print(json.dumps({"rows": rows, "secs": secs, "hwm": hwm, "spilled": ctx.spilled_bytes()}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--cgroup-gib", type=float, default=1)
    ap.add_argument("--budget-mib", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    import duckdb
    import pyarrow.parquet as pq

    from sluice.testing import cgroup

    if not cgroup.available():
        sys.exit("no memory cgroups here (needs root)")
    path = Path(args.data) / "events.parquet"
    decoded = pq.read_table(path).nbytes
    settings = {"threads": args.threads, "host_memory_limit": args.budget_mib << 20,
                **dict(s.split("=", 1) for s in args.set)}
    duck = duckdb.connect()
    duck.execute(f"set threads to {args.threads}")
    duck.execute("set memory_limit = '4GB'")  # (DuckDB copies each row's list: an error, not the OOM killer)
    duck.execute(f"create view events as select * from read_parquet('{path}')")
    print(f"{path}: decoded {decoded / (1 << 30):.2f} GiB; cgroup {args.cgroup_gib} GiB; settings {settings}\n")
    print("| construct | answer | sluice s | peak RSS | cgroup peak | spilled |")
    print("|---|---|---|---|---|---|")
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for name, sql in CONSTRUCTS + SHARED:
        if args.only and args.only not in name:
            continue
        cmd = [sys.executable, __file__, "--child", args.data, sql, json.dumps(settings)]
        r = cgroup.run_confined(cmd, int(args.cgroup_gib * (1 << 30)), env=env, timeout=1800)
        peak = f"{r.peak_bytes / (1 << 20):.0f} MiB" if r.peak_bytes else "?"
        if r.killed or r.returncode != 0:
            why = "KILLED" if r.killed else f"exit {r.returncode}: {(r.stderr.strip().splitlines() or [''])[-1][:160]}"
            print(f"| {name} | {why} | | | {peak} | |", flush=True)
            continue
        out = json.loads(r.stdout.strip().splitlines()[-1])
        want = _rows(duck.sql(sql).to_arrow_table())
        check = "DuckDB's" if out["rows"] == want else "WRONG"
        print(f"| {name} | {check} | {out['secs']:.2f} | {out['hwm'] / (1 << 20):.0f} MiB | {peak} | "
              f"{out['spilled'] / (1 << 20):.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
