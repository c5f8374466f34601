"""The exchange against the network it runs on, side by side in one run (PystachIO Fig. 5, 7):

    python bench/exchange.py [--sf 1] [--ranks 2,3,4] [--runs 3]

For each number of local ranks (gloo on loopback):
- raw ``all_to_all_single`` bandwidth (bytes a rank sends to the others per second) at the
  message size the exchange sends (``exchange_batch_bytes`` to each destination) and
  at 16 MiB;
- sluice's exchange throughput: a partitioned join of lineitem and orders (both sides hashed
  on the order key, ``broadcast_bytes=0``), bytes moved between ranks over the time of the
  lineitem exchange stage (scan + partition + serialise + move + receive), slowest rank;
- the join's effective bandwidth: the same bytes over the query's wall time;
for ``exchange=blocking``, ``chunked`` and ``deferred``, with the ratios deferred/raw and
deferred/blocking. Answers are checked against DuckDB. Nothing here asserts absolute times.
``--wires arrow,tensor``: each variant with each ``exchange_wire`` (Arrow IPC host bytes, or
raw tensor bytes for fixed-width columns: NCCL's format on CUDA, gloo's here).
``--strings``: string columns by value against a dictionary shipped beside codes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sluice.datagen.tpch import generate_tpch  # noqa: E402
from sluice.launch import run_job  # noqa: E402
from sluice.metrics import fmt_rate  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402

JOIN = ("select count(*) c, sum(l_extendedprice) s from lineitem join orders on l_orderkey = o_orderkey "
        "where o_orderdate >= date '1992-01-01'")
VARIANTS = ("blocking", "chunked", "deferred")


def strings(data: Path) -> None:
    """Strings on the wire: by value (Arrow offsets + bytes: what sluice sends for a column whose
    dictionary is not small beside the rows) against a dictionary shipped beside int32 codes
    (what it sends for one that is: sluice.arrow.PAGE_DICTIONARY_SHARE), per column: bytes and serialise + parse time for
    one destination's share (half a chunk of 1 M rows, hashed on the order key)."""
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyarrow.compute as pc
    names = ("l_returnflag", "l_shipmode", "l_shipinstruct", "l_comment")
    rows = pq.ParquetFile(data / "lineitem.parquet").read_row_group(0).slice(0, 1 << 20)
    part = pa.table({n: rows.column(n).cast(pa.string()) for n in names}).filter(
        pc.equal(pc.bit_wise_and(rows.column("l_orderkey"), 1), 0))

    def wire(table):
        t0 = time.perf_counter()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        buf = sink.getvalue()
        pa.ipc.open_stream(buf).read_all()
        return buf.size, time.perf_counter() - t0

    print(f"strings on the wire, {part.num_rows:,} rows of lineitem (one destination's half of a 1 M-row chunk):")
    print(f"  {'column':<15} {'distinct':>9} {'by value':>10} {'dict+codes':>11} {'value ms':>9} {'dict ms':>8}")
    for name in names:
        col = part.select([name])
        vb, vt = wire(col)
        enc = pa.table({name: col.column(0).combine_chunks().dictionary_encode()})
        t0 = time.perf_counter()
        enc = pa.table({name: col.column(0).combine_chunks().dictionary_encode()})
        enc_s = time.perf_counter() - t0
        db, dtm = wire(enc)
        print(f"  {name:<15} {len(enc.column(0).chunk(0).dictionary):>9,} {vb / 2**20:>8.2f}MB {db / 2**20:>9.2f}MB "
              f"{vt * 1000:>9.1f} {(dtm + enc_s) * 1000:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--data", default=None)
    ap.add_argument("--ranks", default="2,3,4")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per variant (best of), after one warm-up")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda: a GPU per rank (the tensor wire then rides NCCL)")
    ap.add_argument("--loopback", action="store_true",
                    help="a rank's own rows cross the wire too (exchange_loopback: one rank, one GPU, still moves bytes)")
    ap.add_argument("--wires", default="auto", help="exchange_wire values to compare, e.g. arrow,tensor")
    ap.add_argument("--strings", action="store_true", help="only: strings by value vs dictionary + codes")
    args = ap.parse_args()
    data = Path(args.data or f"data/tpch-sf{args.sf:g}")
    if not (data / "lineitem.parquet").exists():
        print(f"generating tpch sf={args.sf:g} into {data} ...", file=sys.stderr)
        generate_tpch(args.sf, data)
    if args.strings:
        return strings(data)
    expected = duckdb_connect(data).sql(JOIN).to_arrow_table()
    print(f"tpch sf={args.sf:g}: {JOIN}")
    print(f"{'ranks':>5} {'wire':<6} {'variant':<9} {'raw a2a @batch':>15} {'raw a2a @16M':>13} {'exchange':>12} "
          f"{'join eff.':>12} {'wall s':>8} {'exch/raw':>9} {'vs blocking':>12}")
    for n in [int(x) for x in args.ranks.split(",")]:
        st: dict = {}
        batch = 4 << 20  # one batch per destination (exchange_batch_bytes)
        run_job(n, {"kind": "bandwidth", "sizes": [batch, 16 << 20], "device": args.device}, status=st)
        raw_batch, raw_16 = st["bandwidth"][str(batch)], st["bandwidth"][str(16 << 20)]
        for wire, variant in [(w, v) for w in args.wires.split(",") for v in VARIANTS]:
            st = {}
            res = run_job(n, {"kind": "queries", "data": str(data.resolve()), "queries": [JOIN] * (args.runs + 1),
                              "analyze": True, "settings": {"exchange": variant, "broadcast_bytes": 0, "exchange_wire": wire,
                                           "device": args.device, "exchange_loopback": args.loopback}}, status=st)
            for t in res:
                compare(t, expected)
            best = None
            for secs, ranks in list(zip(st["seconds"], st["rank_stats"]))[1:]:
                ex = [r["exchanges"] for r in ranks]
                k = max(range(len(ex[0])), key=lambda i: sum(sum(r[i]["bytes_sent"]) for r in ex))
                moved = max(sum(r[k]["bytes_sent"]) for r in ex)  # the busiest sender
                total = max(sum(sum(e["bytes_sent"]) for e in r) for r in ex)
                stage = max(r[k]["stage_s"] for r in ex)
                row = (secs, moved / stage, total / secs)
                best = row if best is None or row[0] < best[0] else best
            secs, rate, eff = best
            if variant == "blocking":
                blocking = rate
            print(f"{n:>5} {wire:<6} {variant:<9} {fmt_rate(raw_batch):>15} {fmt_rate(raw_16):>13} {fmt_rate(rate):>12} "
                  f"{fmt_rate(eff):>12} {secs:>8.2f} {rate / raw_batch:>9.2f} {rate / blocking:>12.2f}", flush=True)


if __name__ == "__main__":
    main()
