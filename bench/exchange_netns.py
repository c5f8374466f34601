"""Overlap against a network slower than compute (root, Linux): two ranks in two network
namespaces joined by a veth pair whose rate ``tc`` limits, started by two ``torchrun``
launchers (static rendezvous over the veth, gloo bound to it), run a partitioned join with
each exchange variant and receive side (``exchange_receive``: pipelined -- the consumer probes
each round as it lands -- or materialized); each wall time is set beside the compute-bound time (the same join on
an unlimited veth), the network-bound time (the bytes each rank sends over the rate) and
their max (perfect overlap) and sum (none).

    sudo python bench/exchange_netns.py --data data/tpch-sf1 [--rates 200mbit,400mbit,1gbit] [--runs 3]
        [--query join|q03|q03l|q10] [--variants deferred] [--receive pipelined,materialized]

This machine has two cores: one per rank, so compute cannot scale here, but whether the
network stays busy while compute runs can be measured. Nothing here asserts times.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

JOIN = ("select count(*) c, sum(l_extendedprice) s from lineitem join orders on l_orderkey = o_orderkey "
        "where o_orderdate >= date '1992-01-01'")
#: q03 and q10 of TPC-H, as run with broadcast_bytes=0: every join partitioned, the probe side's
#: exchange feeding a join that streams into a partial aggregate.
QUERIES = {
    "join": JOIN,
    "q03": ("select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority "
            "from customer, orders, lineitem where c_mktsegment = 'BUILDING' and c_custkey = o_custkey "
            "and l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15' "
            "group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate limit 10"),
    # q03 without customer's filter: lineitem's rows cross the link into a join that streams into
    # an aggregate of 1 M+ groups (a consumer as costly as the transfer)
    "q03l": ("select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority "
             "from orders, lineitem where l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' "
             "group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate limit 10"),
    "q10": ("select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name "
            "from customer, orders, lineitem, nation where c_custkey = o_custkey and l_orderkey = o_orderkey "
            "and o_orderdate >= date '1993-10-01' and o_orderdate < date '1994-01-01' and l_returnflag = 'R' "
            "and c_nationkey = n_nationkey group by c_custkey, c_name, c_acctbal, n_name "
            "order by revenue desc limit 20"),
}
NS, DEV, ADDR = ("slr0", "slr1"), ("slv0", "slv1"), ("10.77.0.1", "10.77.0.2")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def setup() -> None:
    teardown()
    for ns in NS:
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", DEV[0], "type", "veth", "peer", "name", DEV[1])
    for ns, dev, addr in zip(NS, DEV, ADDR):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def limit(rate: str | None) -> None:
    for ns, dev in zip(NS, DEV):
        subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], capture_output=True)
        if rate:
            sh("tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "256kb",
               "latency", "100ms")


def teardown() -> None:
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _launch(i: int, port: int, args: list[str]) -> subprocess.Popen:
    cmd = ["ip", "netns", "exec", NS[i], "env", f"GLOO_SOCKET_IFNAME={DEV[i]}", "OMP_NUM_THREADS=1",
           sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
           "--node-rank", str(i), "--master-addr", ADDR[0], "--master-port", str(port), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def raw_rate(port: int) -> float:
    """all_to_all_single over the link, bytes/s one rank sends, at 4 MiB per destination."""
    import json
    procs = [_launch(i, port, ["-m", "sluice.ranks.bandwidth"]) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    return json.loads(next(o for o in outs if o.strip()))[str(4 << 20)]


def run_join(data: str, variant: str, port: int, wire: str = "none", receive: str = "pipelined",
             sql: str = JOIN) -> tuple[float, int]:
    """(wall seconds of the query on rank 0, most bytes one rank sent -- after compression)."""
    procs = [_launch(i, port, ["-m", "sluice", "query", "--data", data, "--device", "cpu", "--set",
                               "broadcast_bytes=0", "--set", f"exchange={variant}", "--set", "dist_timeout_s=60",
                               "--set", f"exchange_compression={wire}", "--set", f"exchange_receive={receive}",
                               "--analyze", sql]) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    out = next(o for o in outs if "total " in o)
    wall = float(re.search(r"^total ([\d.]+) ms", out, re.M).group(1)) / 1000
    sent = 0
    for m in re.finditer(r"^\s+[01]\s+[\d.]+ms\s+[\d,]+\s+[\d.]+ \w+\s+([\d.]+) (\w+)", out, re.M):
        sent = max(sent, int(float(m.group(1)) * UNITS[m.group(2)]))
    return wall, sent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--rates", default="200mbit,400mbit,1gbit")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", default="blocking,chunked,deferred")
    ap.add_argument("--compression", default="none",
                    help="exchange_compression values to run each variant with, e.g. none,auto,lz4")
    ap.add_argument("--receive", default="pipelined,materialized",
                    help="exchange_receive values to run each variant with")
    ap.add_argument("--query", default="join", choices=sorted(QUERIES))
    args = ap.parse_args()
    sql = QUERIES[args.query]
    if os.geteuid() != 0:
        sys.exit("needs root (ip netns, tc)")
    data = str(Path(args.data).resolve())
    setup()
    port = 29700
    try:
        def best(variant, wire="none", receive="pipelined"):
            nonlocal port
            results = []
            for _ in range(args.runs):
                port += 1
                results.append(run_join(data, variant, port, wire, receive, sql))
            return min(results)
        limit(None)
        receives = args.receive.split(",")
        compute = {(v, r): best(v, "none", r)[0] for v in args.variants.split(",") for r in receives}
        t_c = min(compute.values())
        print(f"{sql}\nunlimited veth (compute-bound): " + ", ".join(f"{v}/{r} {t:.2f}s"
                                                                     for (v, r), t in compute.items()))
        print("T_net: the bytes the busiest rank sent (compressed where it was) over the raw "
              "all_to_all_single rate on the same link")
        print(f"{'rate':>8} {'raw a2a':>11} {'variant':<9} {'receive':<12} {'wire':<5} {'wall s':>7} {'T_net s':>8} {'T_comp s':>9} {'max':>6} "
              f"{'sum':>6} {'wall/max':>9} {'vs first':>9} {'exch. rate/raw':>15}")
        for rate in args.rates.split(","):
            limit(rate)
            port += 1
            bps = raw_rate(port)
            base = None
            for variant, wire, receive in itertools.product(args.variants.split(","), args.compression.split(","),
                                                            receives):
                wall, sent = best(variant, wire, receive)
                t_n = sent / bps
                base = base or wall
                print(f"{rate:>8} {bps / 2**20:>7.1f}MiB/s {variant:<9} {receive:<12} {wire:<5} {wall:>7.2f} {t_n:>8.2f} {t_c:>9.2f} "
                      f"{max(t_n, t_c):>6.2f} {t_n + t_c:>6.2f} {wall / max(t_n, t_c):>9.2f} {base / wall:>9.2f} "
                      f"{sent / wall / bps:>15.2f}", flush=True)
    finally:
        teardown()


if __name__ == "__main__":
    main()
