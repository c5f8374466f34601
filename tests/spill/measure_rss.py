"""Run one query in this process and print its peak RSS (json), for the memory tests.

Peak RSS is read from /proc/self/status (VmHWM, this process's own high-water mark):
getrusage's ru_maxrss can carry over the parent's peak across fork and exec."""

import json
import sys

import sluice


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


data, sql, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
con = sluice.connect(data, device="cpu", **settings)
con.sql("select count(*) from nation").to_arrow()
base = peak_rss()
rel = con.sql(sql)
if len(sys.argv) > 4:  # written to a file, as a large result is (rows: how many)
    rows = rel.write(sys.argv[4])
else:
    rows = [list(r.values()) for r in rel.to_arrow().to_pylist()]
peak = peak_rss()
op, ctx = rel.last_run
print(json.dumps({"base": base, "peak": peak, "rows": rows,
                  "spilled": ctx.spilled_bytes()}))
