"""File layout study: one table rewritten into several layouts, then size and query time.

    python bench/layout.py --sf 1 10 [--tables lineitem lineorder] [--layouts ...] [--png roofline.png]

Layouts (seeds 003 and 004): ``default`` (the generator's files), ``duckdb`` (122,880-row groups,
one page per chunk, dictionary + snappy), ``gpu`` / ``cpu`` (`sluice rewrite --for ...`),
``uncompressed`` (plain, no codec), ``lightweight`` (encodings by trial — dictionary / RLE /
delta / byte-stream-split — no codec), ``zstd`` and ``lz4`` (dictionary + codec). Queries: a full
scan, TPC-H Q1 and Q6 on lineitem; SSB Q1.1 and Q3.1 on lineorder (other tables are the
generator's files, linked). Every result is checked against DuckDB on the default files.
The roofline plots operational intensity (decoded bytes produced per byte read from storage)
against achieved throughput (decoded bytes per second), with the storage bandwidth lines from
`sluice calibrate` and the host->device line on CUDA.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sluice  # noqa: E402
from sluice.adapt.calibration import calibrate, load_calibration  # noqa: E402
from sluice.datagen.ssb import generate_ssb  # noqa: E402
from sluice.datagen.tpch import generate_tpch  # noqa: E402
from sluice.layout.rewrite import options_from, rewrite  # noqa: E402
from sluice.testing.oracle import compare, duckdb_connect  # noqa: E402
from sluice.testing.queries import order_by_columns, ssb_queries, tpch_queries  # noqa: E402
from timing import best_of  # noqa: E402

LAYOUTS = {
    "default": None,
    "duckdb": (None, dict(row_group_rows=122_880, pages_per_chunk=1, encoding="dictionary", compression="snappy")),
    "gpu": ("gpu", {}),
    "cpu": ("cpu", {}),
    "uncompressed": (None, dict(encoding="plain", compression="none")),
    "lightweight": (None, dict(encoding="auto", compression="none")),
    "zstd": (None, dict(encoding="dictionary", compression="zstd")),
    "lz4": (None, dict(encoding="dictionary", compression="lz4")),
}
SCAN = {"lineitem": "select count(*), sum(l_quantity), sum(l_extendedprice), max(l_shipdate), "
                    "sum(length(l_comment)), max(l_shipmode) from lineitem",
        "lineorder": "select count(*), sum(lo_revenue), sum(lo_supplycost), max(lo_orderdate), "
                     "max(lo_shipmode) from lineorder"}


def queries_for(table: str) -> dict[str, str]:
    if table == "lineitem":
        t = tpch_queries()
        return {"scan": SCAN[table], "tpch-q1": t["q01"], "tpch-q6": t["q06"]}
    s = ssb_queries()
    return {"scan": SCAN[table], "ssb-q1.1": s["q1.1"], "ssb-q3.1": s["q3.1"]}


def layout_dir(base: Path, table: str, layout: str, src: Path) -> Path:
    if layout == "default":
        return src
    d = base / layout
    target = d / f"{table}.parquet"
    if not target.exists():
        d.mkdir(parents=True, exist_ok=True)
        preset, kw = LAYOUTS[layout]
        t0 = time.perf_counter()
        rewrite(src / f"{table}.parquet", target, options_from(preset, **kw))
        print(f"  rewrote {table} as {layout} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    for f in src.glob("*.parquet"):
        link = d / f.name
        if f.name != f"{table}.parquet" and not link.exists():
            link.symlink_to(f.resolve())
    return d


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, nargs="+", default=[1.0])
    ap.add_argument("--tables", nargs="+", default=["lineitem", "lineorder"])
    ap.add_argument("--layouts", nargs="+", default=list(LAYOUTS))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--png", default="bench/out/roofline.png")
    args = ap.parse_args()
    points = []
    cal = None
    for sf in args.sf:
        for table in args.tables:
            kind = "tpch" if table == "lineitem" else "ssb"
            src = Path(f"data/{kind}-sf{sf:g}")
            if not (src / f"{table}.parquet").exists():
                print(f"generating {kind} sf={sf:g} ...", file=sys.stderr)
                (generate_tpch if kind == "tpch" else generate_ssb)(sf, src)
            if load_calibration(src) is None:
                calibrate(src)
            cal = load_calibration(src)
            duck_default = duckdb_connect(src)
            qs = queries_for(table)
            expected = {n: duck_default.sql(q).to_arrow_table() for n, q in qs.items()}
            print(f"\n{table} sf={sf:g}: size and best-of-{args.runs} time (s); sluice on "
                  f"{sluice.connect(src, device=args.device).device}, DuckDB in brackets")
            print(f"{'layout':<14}{'MiB':>9}{'ratio':>7}" + "".join(f"{n:>20}" for n in qs))
            base = Path(f"data/layout/{kind}-sf{sf:g}")
            default_size = (src / f"{table}.parquet").stat().st_size
            for layout in args.layouts:
                d = layout_dir(base, table, layout, src)
                size = (d / f"{table}.parquet").stat().st_size
                con = sluice.connect(d, device=args.device, threads=os.cpu_count())
                duck = duckdb_connect(d, threads=os.cpu_count())
                cells = []
                for name, q in qs.items():
                    rel = con.sql(q)
                    t, res = best_of(lambda: rel.to_arrow(), args.runs)
                    td, _ = best_of(lambda: duck.sql(q).to_arrow_table(), args.runs)
                    try:
                        compare(res, expected[name], order_by_columns(q, expected[name].column_names))
                        ok = ""
                    except AssertionError:
                        ok = "!"
                    op, ctx = rel.last_run
                    read = sum(r.stats.bytes_read for r in ctx.readers())
                    decoded = sum(r.stats.bytes_decoded for r in ctx.readers())
                    points.append({"sf": sf, "table": table, "layout": layout, "query": name, "time": t,
                                   "read": read, "decoded": decoded})
                    cells.append(f"{t:.3f} [{td:.3f}]{ok}")
                print(f"{layout:<14}{size / 2**20:>9.1f}{default_size / size:>7.2f}" +
                      "".join(f"{c:>20}" for c in cells), flush=True)
    if args.png and points and cal:
        plot_roofline(points, cal, args.png)
        print(f"\nroofline: {args.png}")


def plot_roofline(points: list[dict], cal: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 6))
    layouts = sorted({p["layout"] for p in points})
    markers = dict(zip(sorted({p["query"] for p in points}), "osD^vP*X"))
    cmap = plt.get_cmap("tab10")
    xs = []
    for i, lay in enumerate(layouts):
        for p in points:
            if p["layout"] != lay or not p["read"] or not p["time"]:
                continue
            x = p["decoded"] / p["read"]
            y = p["decoded"] / p["time"] / 2**30
            xs.append(x)
            ax.scatter(x, y, color=cmap(i % 10), marker=markers[p["query"]], s=40)
    for i, lay in enumerate(layouts):
        ax.scatter([], [], color=cmap(i % 10), label=lay)
    for q, m in markers.items():
        ax.scatter([], [], facecolors="none", edgecolors="black", marker=m, label=q)
    lo, hi = (min(xs) / 2, max(xs) * 2) if xs else (0.5, 50)
    for key, style, label in (("read_cold_bps", "--", "storage (cold)"), ("read_cached_bps", ":", "storage (page cache)")):
        bw = cal.get(key)
        if bw:
            ax.plot([lo, hi], [lo * bw / 2**30, hi * bw / 2**30], style, color="black", label=f"{label} {bw / 2**30:.2f} GiB/s")
    if cal.get("h2d_bps"):
        ax.axhline(cal["h2d_bps"] / 2**30, color="tab:green", label="host->device")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (decoded bytes per byte read from storage)")
    ax.set_ylabel("achieved throughput (decoded GiB/s)")
    ax.set_title("storage roofline: layouts x queries")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
