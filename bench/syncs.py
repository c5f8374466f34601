"""Where the CUDA path still synchronises with the host: run queries under
``torch.cuda.set_sync_debug_mode("warn")`` and count the synchronising calls per sluice source line,
under each decoder; with ``decoder=device`` also the torch decoder's calls per decoded column chunk
(the decode loop's host syncs, issue 29 item 6).

    python bench/syncs.py --sf 1 [--queries scan q01 q06 q12 q14]

Each warning is attributed to the innermost frame inside the ``sluice`` package of the thread
that caused it (``sluice-io`` threads: the scan's read/decode/h2d stage; the main thread: compute).
Needs a CUDA device; elsewhere it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import sluice  # noqa: E402
from sluice.datagen.tpch import generate_tpch  # noqa: E402
from sluice.testing.queries import tpch_queries  # noqa: E402
from scan import FULL_SCAN  # noqa: E402

PACKAGE = str(Path(sluice.__file__).resolve().parent)


def sluice_frame() -> str:
    """``file:line (function)`` of the innermost sluice frame on the current stack."""
    for fr in reversed(traceback.extract_stack()[:-2]):
        if fr.filename.startswith(PACKAGE):
            return f"{Path(fr.filename).relative_to(Path(PACKAGE).parent)}:{fr.lineno} ({fr.name})"
    return "outside sluice"


def count_syncs(run) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def record(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        where = (threading.current_thread().name.split("_")[0], sluice_frame())
        with lock:
            counts[where] += 1

    with warnings.catch_warnings():  # restores the filters and showwarning on exit
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--data", default=None, help="TPC-H folder (default data/tpch-sfN; generated when absent)")
    ap.add_argument("--queries", nargs="+", default=["scan", "q01", "q06", "q12", "q14"])
    ap.add_argument("--decoders", nargs="+", default=["arrow", "device"],
                    help="decoder settings to count under (device: per decoded column too)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench/syncs.py needs a CUDA device", file=sys.stderr)
        raise SystemExit(2)
    data = Path(args.data or f"data/tpch-sf{args.sf:g}")
    if not (data / "lineitem.parquet").exists():
        generate_tpch(args.sf, data)
    for decoder in args.decoders:
        con = sluice.connect(data, device="cuda", decoder=decoder)
        for name in args.queries:
            sql = FULL_SCAN if name == "scan" else tpch_queries()[name]
            con.sql(sql).to_arrow()  # warm-up: allocator pools, metadata cache
            rel = con.sql(sql)
            counts = count_syncs(lambda: rel.to_arrow())
            total = sum(counts.values())
            line = f"\n{name} (decoder={decoder}): {total} synchronising calls"
            decoded = decoded_columns(rel)
            if decoder == "device" and decoded:
                in_decoder = sum(n for (_, where), n in counts.items() if where.startswith(DECODE_PACKAGE))
                line += (f"; in the torch decoder {in_decoder} over {decoded} decoded column chunks "
                         f"= {in_decoder / decoded:.1f} per decoded column")
            print(line)
            for (thread, where), n in counts.most_common():
                print(f"  {n:>6}  {thread:<12} {where}")


#: Where the torch decoder lives (its syncs are counted per decoded column chunk).
DECODE_PACKAGE = "sluice/io/parquet/decode"


def decoded_columns(rel) -> int:
    """Column chunks the run's scans decoded: row groups read x columns, over every scan."""
    _, ctx = rel.last_run
    n = 0
    for r in ctx.readers():
        groups = sum(len(t) for t in r.tasks)
        n += groups * len([c for c in r.columns if c not in r.stats.fallbacks])
    return n


if __name__ == "__main__":
    main()
