"""Start-up time of the command line: how long each kind of ``sluice`` call takes when it does
almost nothing, measured as a user meets it (a fresh process each time), side by side with
``python -c pass`` and DuckDB's ``python -c 'import duckdb'`` as references.

    python bench/startup.py [--runs 5] [--data DIR]

Prints the median and best wall time per command. Not asserted anywhere: a benchmark.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], stdin: str | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data", default=None, help="a folder of tables (default: a one-table temporary one)")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("sluice"))
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            import pyarrow as pa
            import pyarrow.parquet as pq
            pq.write_table(pa.table({"x": list(range(1000))}), Path(tmp) / "t.parquet")
            data = tmp
        cases = {
            "python -c pass": ([py, "-c", "pass"], None),
            "python -c 'import duckdb'": ([py, "-c", "import duckdb"], None),
            "sluice --help": ([exe, "--help"], None),
            "sluice --version": ([exe, "--version"], None),
            f"sluice inspect {Path(data).name}/": ([exe, "inspect", "--no-pages", data], None),
            f"sluice doctor {Path(data).name}/": ([exe, "doctor", data, "--for", "cpu"], None),
            'sluice query "select 1"': ([exe, "query", "--device", "cpu", "select 1"], None),
            "sluice query (a table)": ([exe, "query", "--data", data, "--device", "cpu",
                                        "select count(*) from " + _first_table(data)], None),
            "echo 'select 1;' | sluice shell": ([exe, "shell", "--data", data, "--device", "cpu"], "select 1;\n"),
        }
        print(f"{'command':<36}{'median s':>10}{'best s':>10}   ({args.runs} runs, fresh process each)")
        for name, (cmd, stdin) in cases.items():
            timed(cmd, stdin)  # warm the page cache
            ts = [timed(cmd, stdin) for _ in range(args.runs)]
            print(f"{name:<36}{statistics.median(ts):>10.3f}{min(ts):>10.3f}")


def _first_table(data: str) -> str:
    p = Path(data)
    names = sorted(f.stem for f in p.glob("*.parquet")) or sorted(d.name for d in p.iterdir() if d.is_dir())
    return names[0]


if __name__ == "__main__":
    main()
