"""ASOF JOIN against DuckDB on generated trades and quotes (DuckDB's own micro benchmark's
shape, benchmark/micro/join/asof_join.benchmark): each trade with the latest quote of its
symbol at or before it. Checks the answer (an aggregate over the matched quotes) and prints
the best of ``--repeat`` runs of each engine, in one process, on the same Parquet files.

    python bench/asof_join.py [--trades 2000000] [--quotes 1000000] [--symbols 1000]
                              [--threads 2] [--repeat 3] [--set key=value ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402

QUERIES = {
    "inner": "select count(*), sum(q.price), max(q.ts) from trades t asof join quotes q "
             "on t.symbol = q.symbol and t.ts >= q.ts",
    "left, string keys": "select count(*), count(q.price), sum(q.price) from trades t asof left join quotes q "
                         "on t.name = q.name and t.ts >= q.ts",
    "no keys": "select count(*), sum(q.price) from trades t asof join quotes q on t.ts < q.ts",
}


def write(root: Path, trades: int, quotes: int, symbols: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    span = 10 ** 12  # microseconds (about 11 days)
    qts = rng.integers(0, span, quotes)
    qsym = rng.integers(0, symbols, quotes)
    names = np.array([f"SYM{i:05d}" for i in range(symbols)], dtype=object)
    pq.write_table(pa.table({"symbol": qsym, "name": names[qsym], "ts": pa.array(qts, pa.timestamp("us")),
                             "price": rng.integers(1, 10 ** 6, quotes)}), root / "quotes.parquet",
                   row_group_size=1 << 20)
    tsym = rng.integers(0, symbols, trades)
    pq.write_table(pa.table({"symbol": tsym, "name": names[tsym],
                             "ts": pa.array(rng.integers(0, span, trades), pa.timestamp("us"))}),
                   root / "trades.parquet", row_group_size=1 << 20)


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trades", type=int, default=2_000_000)
    ap.add_argument("--quotes", type=int, default=1_000_000)
    ap.add_argument("--symbols", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], help="a sluice setting, key=value")
    args = ap.parse_args()
    settings = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        settings[k] = int(v) if v.lstrip("-").isdigit() else v
    with tempfile.TemporaryDirectory(prefix="sluice-asof-") as d:
        root = Path(d)
        write(root, args.trades, args.quotes, args.symbols)
        con = sluice.connect(root, threads=args.threads, **settings)
        duck = duckdb_connect(root, threads=args.threads)
        print(f"{args.trades:,} trades x {args.quotes:,} quotes, {args.symbols} symbols, {args.threads} threads"
              + (f", {settings}" if settings else ""))
        for name, sql in QUERIES.items():
            ts, ours = best(lambda: con.sql(sql).to_arrow(), args.repeat)
            td, theirs = best(lambda: duck.sql(sql).to_arrow_table(), args.repeat)
            compare(ours, theirs)
            print(f"  {name:<18} sluice {ts:7.3f} s   duckdb {td:7.3f} s   ({ts / td:.2f}x)")


if __name__ == "__main__":
    main()
