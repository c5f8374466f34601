"""Issue 52: local ranks (``sluice query --ranks N``) confined together with their launcher in one
memory cgroup, as on a small machine or container. Printed: killed or not, the wall time, the
cgroup's peak charge and what it held at that moment (anonymous, page cache, shared, mapped
files), each process's peak resident set (anonymous and file-backed apart) sampled every 50 ms,
and the tail of what the query printed (``--analyze``: each rank's peak reserved memory and what
it spilled). With ``--check``, the written file is compared with its source by DuckDB (outside
the cgroup): the same rows (count and hash sums) in order.

    sudo python bench/ranks_confined.py DATA --mib 1536 [--ranks 2] [--sql "..."] [--check]
        [--out FILE.parquet] [--set key=value ...]

Needs root (memory cgroups, v1 or v2).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

SORT = "select * from lineitem order by l_extendedprice, l_orderkey"
_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/memory")
COLS = ("l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, "
        "l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment")


class Group:
    """A fresh memory cgroup (v2, else v1) of ``limit`` bytes, no swap."""

    def __init__(self, limit: int) -> None:
        self.v2 = (_V2 / "cgroup.controllers").exists() and "memory" in (_V2 / "cgroup.controllers").read_text()
        self.path = (_V2 if self.v2 else _V1) / f"sluice-bench-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()
        self._write("memory.max" if self.v2 else "memory.limit_in_bytes", limit)
        self._write("memory.swap.max" if self.v2 else "memory.memsw.limit_in_bytes", 0 if self.v2 else limit)

    def _write(self, name: str, value: int) -> None:
        try:
            (self.path / name).write_text(str(value))
        except OSError:
            pass

    def pids(self) -> list[str]:
        return (self.path / "cgroup.procs").read_text().split()

    def charge(self) -> tuple[int, dict]:
        """Bytes charged now, and the held kinds in MiB."""
        cur = int((self.path / ("memory.current" if self.v2 else "memory.usage_in_bytes")).read_text())
        st = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
        keys = ({"anon": "anon", "file": "cache", "shmem": "shmem", "file_mapped": "mapped"} if self.v2 else
                {"total_rss": "anon", "total_cache": "cache", "total_shmem": "shmem", "total_mapped_file": "mapped"})
        return cur, {name: int(st.get(k, 0)) >> 20 for k, name in keys.items()}

    def peak_and_killed(self) -> tuple[int, bool]:
        if self.v2:
            events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
            peak = self.path / "memory.peak"
            return (int(peak.read_text()) if peak.exists() else 0), int(events.get("oom_kill", 0)) > 0
        oom = dict(line.split() for line in (self.path / "memory.oom_control").read_text().splitlines())
        return int((self.path / "memory.max_usage_in_bytes").read_text()), int(oom.get("oom_kill", 0)) > 0

    def remove(self) -> None:
        if not self.v2:
            self._write("memory.force_empty", 0)
        for _ in range(20):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.2)


def _status(pid: str) -> dict | None:
    d = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "RssAnon", "RssFile"):
                    d[k] = int(v.split()[0]) >> 10
        with open(f"/proc/{pid}/cmdline") as f:
            d["cmd"] = f.read().replace("\0", " ")
    except OSError:
        return None
    return d


def run(cmd: list[str], limit: int) -> dict:
    g = Group(limit)
    peaks: dict[str, dict] = {}
    at_peak: dict = {}
    done = threading.Event()

    def sample() -> None:
        top = 0
        while not done.is_set():
            try:
                for pid in g.pids():
                    d = _status(pid)
                    if d is not None:
                        p = peaks.setdefault(pid, {"cmd": d.pop("cmd")})
                        for k, v in d.items():
                            if k != "cmd":
                                p[k] = max(p.get(k, 0), v)
                cur, held = g.charge()
                if cur > top:
                    top = cur
                    at_peak.update(held)
            except (OSError, ValueError):
                pass
            done.wait(0.05)

    t0 = time.time()
    procs = g.path / "cgroup.procs"
    p = subprocess.Popen(["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *cmd],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    secs = time.time() - t0
    done.set()
    th.join()
    try:
        peak, killed = g.peak_and_killed()
    finally:
        g.remove()
    return {"rc": p.returncode, "secs": secs, "peak": peak, "killed": killed or p.returncode in (-9, 137),
            "at_peak": at_peak, "procs": peaks, "stdout": out, "stderr": err}


def check(out: str, src: str) -> str:
    """The written rows against the source's: count and hash sums equal, none out of order."""
    import duckdb

    con = duckdb.connect()
    con.sql("set enable_progress_bar=false")
    q = f"select count(*), sum(hash({COLS}) % 1000000007), bit_xor(hash({COLS})) from read_parquet('{{}}')"
    a, b = con.sql(q.format(out)).fetchall(), con.sql(q.format(src)).fetchall()
    bad = con.sql(f"""select count(*) from (select l_extendedprice p, l_orderkey k,
        lag(l_extendedprice) over (order by file_row_number) pp, lag(l_orderkey) over (order by file_row_number) pk
        from read_parquet('{out}', file_row_number=true)) where pp is not null and (p, k) < (pp, pk)""").fetchall()[0][0]
    verdict = "the same rows as DuckDB reads from the source, in order" if a == b and bad == 0 else "MISMATCH"
    return f"{verdict} (rows/hash sums {a[0]}, source {b[0]}; {bad} rows out of order)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--mib", type=int, required=True, help="the cgroup's memory limit")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--sql", default=SORT)
    ap.add_argument("--out", default="/tmp/sluice-ranks-confined.parquet")
    ap.add_argument("--check", action="store_true", help="compare the sorted lineitem written with its source")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "sluice", "query", "--data", args.data, "--ranks", str(args.ranks), "--analyze",
           "-o", args.out, args.sql] + [x for kv in args.set for x in ("--set", kv)]
    r = run(cmd, args.mib << 20)
    print(f"cgroup {args.mib} MiB, {args.ranks} ranks: rc {r['rc']}, killed {r['killed']}, {r['secs']:.0f} s, "
          f"cgroup peak {r['peak'] >> 20} MiB (held at its peak, MiB: {r['at_peak']})")
    for pid, d in r["procs"].items():
        if not d.get("VmHWM"):  # the shell that moved itself into the cgroup, gone at once
            continue
        who = "rank" if "launch_worker" in d["cmd"] else "launcher"
        print(f"  {who} {pid}: peak RSS {d.get('VmHWM', 0)} MiB, anonymous {d.get('RssAnon', 0)}, "
              f"files {d.get('RssFile', 0)}")
    tail = r["stdout"].splitlines()
    keep = [ln for ln in tail if ln.lstrip().startswith(("memory:", "spill:", "total ", "rank", "0 ", "1 ", "2 ", "3 "))]
    print("\n".join(keep[-12:]))
    if r["rc"] != 0:
        print(r["stderr"][-1500:])
    elif args.check:
        print(check(args.out, str(Path(args.data) / "lineitem.parquet")))


if __name__ == "__main__":
    main()
