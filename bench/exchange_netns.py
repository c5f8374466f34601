"""Overlap against a network slower than compute (root, Linux): N ranks (2 or 4) in N network
namespaces, each joined to a bridge by a veth pair whose rate ``tc`` limits at both ends (a
full-duplex link of that rate per rank), started by N ``torchrun`` launchers (static
rendezvous over the bridge, gloo bound to the veth), run a partitioned join with each exchange
variant and receive side (``exchange_receive``: pipelined -- the consumer probes each round as
it lands -- or materialized); each wall time is set beside the compute-bound time (the same
join unthrottled), the network-bound time (the bytes the busiest rank sends over the raw
``all_to_all_single`` rate on the same link) and their max (perfect overlap) and sum (none).
``exch/raw``: the lineitem exchange's rate (the busiest rank's bytes over the exchange's stage
time, slowest rank) over the raw rate.

    sudo python bench/exchange_netns.py --data data/tpch-sf1 [--ranks 2,4] [--rates 50mbit,100mbit,1gbit]
        [--runs 2] [--query join|q03|q03l|q03x|q10] [--variants deferred] [--receive pipelined,materialized]
        [--combos blocking/materialized,deferred/materialized,deferred/pipelined] [--set KEY=VALUE]

On a machine with fewer cores than ranks compute cannot scale, but whether the network stays
busy while compute runs can be measured. Nothing here asserts times.
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
    # q03l with a heavier consumer per byte received: more aggregates over the same columns
    # (a probe and an aggregate costing about what the link does at a few hundred Mbit)
    "q03x": ("select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, "
             "sum(l_extendedprice * (1 - l_discount) * (1 + l_discount)) c, avg(l_extendedprice) a, "
             "stddev_samp(l_extendedprice) sd, min(l_extendedprice) mn, max(l_discount) mx, count(*) n, "
             "o_orderdate, o_shippriority from orders, lineitem where l_orderkey = o_orderkey "
             "and o_orderdate < date '1995-03-15' group by l_orderkey, o_orderdate, o_shippriority "
             "order by revenue desc, o_orderdate limit 10"),
    "q10": ("select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name "
            "from customer, orders, lineitem, nation where c_custkey = o_custkey and l_orderkey = o_orderkey "
            "and o_orderdate >= date '1993-10-01' and o_orderdate < date '1994-01-01' and l_returnflag = 'R' "
            "and c_nationkey = n_nationkey group by c_custkey, c_name, c_acctbal, n_name "
            "order by revenue desc limit 20"),
}
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
BRIDGE_NS, BRIDGE = "slrb", "slbr0"
WORLD = 2  # ranks of the current set-up (setup())
ERR = "/tmp/exchange_netns.err"


def ns(i: int) -> str:
    return f"slr{i}"


def dev(i: int) -> str:
    return f"slv{i}"


def addr(i: int) -> str:
    return f"10.77.0.{i + 1}"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def setup(world: int = 2) -> None:
    """``world`` namespaces, each with a veth to a bridge in its own namespace."""
    global WORLD
    teardown()
    WORLD = world
    sh("ip", "netns", "add", BRIDGE_NS)
    sh("ip", "-n", BRIDGE_NS, "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "-n", BRIDGE_NS, "link", "set", BRIDGE, "up")
    for i in range(world):
        sh("ip", "netns", "add", ns(i))
        sh("ip", "link", "add", dev(i), "type", "veth", "peer", "name", f"slb{i}")
        sh("ip", "link", "set", dev(i), "netns", ns(i))
        sh("ip", "link", "set", f"slb{i}", "netns", BRIDGE_NS)
        sh("ip", "-n", BRIDGE_NS, "link", "set", f"slb{i}", "master", BRIDGE)
        sh("ip", "-n", BRIDGE_NS, "link", "set", f"slb{i}", "up")
        sh("ip", "-n", ns(i), "addr", "add", f"{addr(i)}/24", "dev", dev(i))
        sh("ip", "-n", ns(i), "link", "set", dev(i), "up")
        sh("ip", "-n", ns(i), "link", "set", "lo", "up")


def _ends():
    for i in range(WORLD):
        yield ns(i), dev(i)  # what rank i sends
        yield BRIDGE_NS, f"slb{i}"  # what it receives


def limit(rate: str | None) -> None:
    for n, d in _ends():
        subprocess.run(["tc", "-n", n, "qdisc", "del", "dev", d, "root"], capture_output=True)
        if rate:
            sh("tc", "-n", n, "qdisc", "add", "dev", d, "root", "tbf", "rate", rate, "burst", "256kb",
               "latency", "100ms")


def teardown() -> None:
    for n in [BRIDGE_NS] + [ns(i) for i in range(8)]:
        subprocess.run(["ip", "netns", "del", n], capture_output=True)


def _launch(i: int, port: int, args: list[str]) -> subprocess.Popen:
    cmd = ["ip", "netns", "exec", ns(i), "env", f"GLOO_SOCKET_IFNAME={dev(i)}", "OMP_NUM_THREADS=1",
           sys.executable, "-m", "torch.distributed.run", "--nnodes", str(WORLD), "--nproc-per-node", "1",
           "--node-rank", str(i), "--master-addr", addr(0), "--master-port", str(port), *args]
    with open(f"{ERR}.{i}", "w") as err:  # the last launch's stderr, per rank
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)


def _run(args: list[str], port: int) -> list[str]:
    """Every rank's stdout; a launch that stalls (a torchrun rendezvous lost under load) is
    stopped and started again on the next port."""
    for attempt in range(3):
        procs = [_launch(i, port + 1000 * attempt, args) for i in range(WORLD)]
        try:
            return [p.communicate(timeout=240)[0] for p in procs]
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.wait()
            print(f"(a launch stalled; started again on port {port + 1000 * (attempt + 1)})", file=sys.stderr)
    raise SystemExit("three launches stalled")


def raw_rate(port: int) -> float:
    """all_to_all_single over the link, bytes/s one rank sends, at 4 MiB per destination."""
    import json
    outs = _run(["-m", "sluice.ranks.bandwidth"], port)
    return json.loads(next(o for o in outs if o.strip()))[str(4 << 20)]


def run_join(data: str, variant: str, port: int, wire: str = "none", receive: str = "pipelined",
             sql: str = JOIN, extra: tuple = ()) -> tuple[float, int, float, int]:
    """(wall seconds of the query on rank 0, most bytes one rank sent -- after compression --, the
    largest exchange's bytes per rank over its stage time (slowest rank), its rounds)."""
    for attempt in range(3):  # a run that failed to start (a rendezvous lost under load) runs again
        outs = _run(["-m", "sluice", "query", "--data", data, "--device", "cpu", "--set", "broadcast_bytes=0",
                     "--set", f"exchange={variant}", "--set", "dist_timeout_s=60", "--set",
                     f"exchange_compression={wire}", "--set", f"exchange_receive={receive}",
                     *[a for kv in extra for a in ("--set", kv)], "--analyze", sql], port + 2000 * attempt)
        out = next((o for o in outs if "total " in o), None)
        if out is not None:
            break
        print(f"(a run failed; see {ERR}; again on port {port + 2000 * (attempt + 1)})", file=sys.stderr)
    else:
        raise SystemExit(f"three runs failed: see {ERR}")
    wall = float(re.search(r"^total ([\d.]+) ms", out, re.M).group(1)) / 1000
    sent = 0
    for m in re.finditer(r"^\s+\d+\s+[\d.]+ms\s+[\d,]+\s+[\d.]+ \w+\s+([\d.]+) (\w+)", out, re.M):
        sent = max(sent, int(float(m.group(1)) * UNITS[m.group(2)]))
    rate, rounds, most = 0.0, 0, -1
    for m in re.finditer(r"^  Exchange .*?: [\d,]+ rows, ([\d.]+) (\w+) between ranks in (\d+) rounds; "
                         r"stage ([\d.]+) ms", out, re.M):
        moved = float(m.group(1)) * UNITS[m.group(2)]
        if moved > most:
            most, rounds = moved, int(m.group(3))
            rate = moved / WORLD / (float(m.group(4)) / 1000)
    return wall, sent, rate, rounds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--ranks", default="2", help="rank counts to set up in turn, e.g. 2,4")
    ap.add_argument("--rates", default="200mbit,400mbit,1gbit")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", default="blocking,chunked,deferred")
    ap.add_argument("--compression", default="none",
                    help="exchange_compression values to run each variant with, e.g. none,auto,lz4")
    ap.add_argument("--receive", default="pipelined,materialized",
                    help="exchange_receive values to run each variant with")
    ap.add_argument("--combos", default=None,
                    help="variant/receive pairs instead of every variant with every receive, "
                         "e.g. blocking/materialized,deferred/pipelined")
    ap.add_argument("--query", default="join", choices=sorted(QUERIES))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every run, e.g. exchange_batch_bytes=1048576 (more rounds)")
    args = ap.parse_args()
    sql = QUERIES[args.query]
    if os.geteuid() != 0:
        sys.exit("needs root (ip netns, tc)")
    data = str(Path(args.data).resolve())
    if args.combos:
        combos = [tuple(c.split("/")) for c in args.combos.split(",")]
    else:
        combos = list(itertools.product(args.variants.split(","), args.receive.split(",")))
    port = 29700
    print(sql + "".join(f"\n--set {kv}" for kv in args.set))
    try:
        for world in (int(n) for n in args.ranks.split(",")):
            setup(world)

            def interleaved(cases):
                """Each case run ``--runs`` times, the cases in turn (A B A B; reversed on every
                other pass): a shared machine's load drifts, and drifts alike for each."""
                nonlocal port
                got = {c: [] for c in cases}
                for k in range(args.runs):
                    for c in (cases if k % 2 == 0 else cases[::-1]):
                        port += 1
                        got[c].append(run_join(data, c[0], port, c[1], c[2], sql, tuple(args.set)))
                return got
            limit(None)
            compute = {(v, r): min(w[0] for w in ws)
                       for (v, _, r), ws in interleaved([(v, "none", r) for v, r in combos]).items()}
            t_c = min(compute.values())
            print(f"{world} ranks, unlimited (compute-bound): " + ", ".join(f"{v}/{r} {t:.2f}s"
                                                                           for (v, r), t in compute.items()))
            print("T_net: the bytes the busiest rank sent (compressed where it was) over the raw "
                  "all_to_all_single rate on the same link; T_comp: the best unthrottled wall; bound: the first "
                  "row's wall over max(T_net, T_comp) -- no variant can beat both the link and the compute, "
                  "so 'vs first' cannot pass it (a loose bound: it lets every second of compute overlap the "
                  "link, also the build side's stage and the plan's fixed costs); exch/raw: the largest "
                  "exchange's bytes per rank over its stage time, over the raw rate; walls: every run, in order")
            print(f"{'ranks':>5} {'rate':>8} {'raw a2a':>11} {'variant':<9} {'receive':<12} {'wire':<5} {'wall s':>7} "
                  f"{'T_net s':>8} {'T_comp s':>9} {'max':>6} {'sum':>6} {'wall/max':>9} {'vs first':>9} "
                  f"{'bound':>6} {'rounds':>6} {'exch/raw':>9}  walls")
            for rate in args.rates.split(","):
                limit(rate)
                port += 1
                bps = raw_rate(port)
                cases = [(v, w, r) for (v, r), w in itertools.product(combos, args.compression.split(","))]
                runs = interleaved(cases)
                base = None
                for (variant, wire, receive) in cases:
                    wall, sent, xrate, rounds = min(runs[(variant, wire, receive)])
                    t_n = sent / bps
                    base = base or wall
                    walls = " ".join(f"{r[0]:.2f}" for r in runs[(variant, wire, receive)])
                    print(f"{world:>5} {rate:>8} {bps / 2**20:>7.1f}MiB/s {variant:<9} {receive:<12} {wire:<5} "
                          f"{wall:>7.2f} {t_n:>8.2f} {t_c:>9.2f} {max(t_n, t_c):>6.2f} {t_n + t_c:>6.2f} "
                          f"{wall / max(t_n, t_c):>9.2f} {base / wall:>9.2f} {base / max(t_n, t_c):>6.2f} "
                          f"{rounds:>6} {xrate / bps:>9.2f}  {walls}", flush=True)
    finally:
        teardown()


if __name__ == "__main__":
    main()
