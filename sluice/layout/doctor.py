"""``sluice doctor DIR``: what makes these Parquet files slow for the chosen device, and the
command that fixes each finding.

It reads only footers and page headers (:func:`sluice.layout.inspect.inspect_file`) and checks,
per table (a file, or a folder of files):

- many small files: each costs a footer read, a task and a short I/O burst;
- row groups sized for the other device: GPUs want about a million rows a group (one group is
  one transfer and one batch of kernels), CPUs want groups near sluice's chunk (2^20 rows) and
  not so small that per-group work dominates;
- too few pages per column chunk for a GPU decoder (each page is one unit of parallel work:
  about 100 a chunk, seed 004 insight 1);
- compression that does not pay: a codec saving under 10 % costs decode time for nothing;
- missing min/max statistics (no row-group pruning, no runtime-filter skipping);
- columns of types sluice cannot query (binary): the other columns of
  the file stay queryable.

The expected gains quote what the layout study (``bench/layout.py``) measured side by side on
this project's machines, only on the kind of device the report is for (:data:`MEASURED`); for
a device it has not run on the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sluice.layout.inspect import inspect_file, parquet_files
from sluice.metrics import fmt_bytes
import pyarrow.parquet as pq
from sluice.io.parquet.metadata import _types

SMALL_FILE = 32 << 20          # bytes: below this a file is "small"
MANY_FILES = 16                 # more small files than this in one table is "many"
GPU_GROUP_ROWS = 1_000_000      # seed 004 insight 2
CPU_GROUP_ROWS = 1 << 20        # sluice's chunk
TINY_GROUP_ROWS = 100_000       # below this per-group work dominates on any device
GPU_PAGES = 100                 # seed 004 insight 1
MIN_CODEC_GAIN = 0.10           # sluice rewrite --min-gain default
MANY_GROUPS = 16                # fewer small row groups than this cost little
BIG_COLUMN = 1 << 20            # bytes: smaller columns are not worth a finding

#: What the layout study measured, quoted, never extrapolated, keyed by the device it was
#: measured on (``cpu`` or ``cuda``): a report for one device quotes only that device's
#: measurement, and says "not measured on this device" where there is none. The figures and the
#: command are in ``bench/results/2026-11-23-layout-2core-cpu.md`` (``python bench/layout.py --sf 1
#: --tables lineitem --layouts default duckdb cpu gpu --runs 2`` on a 2-core CPU VM: sluice's
#: best-of-2 times on the tpchgen-cli files against the rewritten ones). ``--for gpu`` files were
#: measured on that CPU too, which says nothing of a GPU, so a GPU report does not quote them.
MEASURED: dict[str, str] = {
    "cpu": "on TPC-H lineitem SF 1 (bench/layout.py on a 2-core CPU, 2026-11-23) `--for cpu` files were 1.43x "
           "smaller and answered Q6 1.85x, Q1 1.04x and a full scan 1.13x faster than tpchgen-cli's",
}
NOT_MEASURED = "not measured on this device ({device}): the layout study has not run there yet"


@dataclass
class Finding:
    """A problem with one table's files; ``fix`` None means the table's ``sluice rewrite``."""

    table: str
    problem: str
    why: str
    fix: str | None = None


def _tables(root: Path) -> dict[str, list[Path]]:
    """Table name -> files: ``NAME.parquet`` files and ``NAME/`` folders of files, as
    ``--data`` reads them; a single file is its own table."""
    if root.is_file():
        return {root.stem: [root]}
    out: dict[str, list[Path]] = {}
    for f in parquet_files(root):
        rel = f.relative_to(root)
        name = rel.parts[0] if len(rel.parts) > 1 else f.stem
        out.setdefault(name, []).append(f)
    return out


@dataclass
class Report:
    """What ``sluice doctor`` found: per table its size, findings and rewrite command."""

    root: Path
    device: str
    tables: dict[str, dict]

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.tables.values() for f in t["findings"]]


def diagnose(target: str | Path, device: str = "cpu") -> Report:
    """Check the files under ``target`` (a file, or a directory of tables) for ``device``
    (``cpu`` or ``cuda``)."""
    root = Path(target)
    gpu = device.startswith("cuda")
    preset = "gpu" if gpu else "cpu"
    tables = {}
    for table, files in sorted(_tables(root).items()):
        infos = [inspect_file(f, pages=gpu) for f in files]
        src = str(root / table) if root.is_dir() and (root / table).is_dir() else str(files[0])
        findings = _files(table, infos, root)
        findings += _row_groups(table, infos, gpu)
        if gpu:
            findings += _pages(table, infos)
        findings += _columns(table, infos)
        findings += _unqueryable(table, files[0])
        tables[table] = {"files": len(infos), "rows": sum(i["rows"] for i in infos),
                         "bytes": sum(i["bytes"] for i in infos), "findings": findings,
                         "rewrite": f"sluice rewrite {src} {_rewritten_name(src, preset)} --for {preset}"}
    return Report(root, device, tables)


def _unqueryable(table: str, path: Path) -> list[Finding]:
    _, unsupported = _types(pq.read_schema(path))
    if not unsupported:
        return []
    return [Finding(table, f"columns sluice cannot query: {_names([f'{n} ({t})' for n, t in unsupported.items()])}",
                    "sluice reads numbers, decimals, strings, booleans, dates and timestamps; naming one of "
                    "these is refused, the other columns stay queryable",
                    "select the other columns (they cannot be rewritten as scalars by sluice)")]


def _rewritten_name(src: str, preset: str) -> str:
    p = Path(src)
    return str(p.with_name(f"{p.stem}-{preset}{p.suffix}"))


def _files(table: str, infos: list[dict], root: Path) -> list[Finding]:
    small = [i for i in infos if i["bytes"] < SMALL_FILE]
    if len(infos) <= MANY_FILES or len(small) <= MANY_FILES:
        return []
    avg = sum(i["bytes"] for i in infos) / len(infos)
    glob = f"{root / table}/**/*.parquet" if (root / table).is_dir() else f"{root}/*.parquet"
    return [Finding(table, f"{len(infos)} files averaging {fmt_bytes(avg)} ({len(small)} under {fmt_bytes(SMALL_FILE)})",
                    "each file costs a footer read, a scan task and a short I/O burst; few large files keep "
                    "storage busy",
                    f"sluice query \"select * from '{glob}'\" -o {table}.parquet  (one file, streamed)")]


def _row_groups(table: str, infos: list[dict], gpu: bool) -> list[Finding]:
    groups = sum(i["row_groups"] for i in infos)
    rows = sum(i["rows"] for i in infos)
    if not groups or rows < TINY_GROUP_ROWS:
        return []
    avg = rows / groups
    if gpu and avg < GPU_GROUP_ROWS / 2 and rows >= GPU_GROUP_ROWS:
        return [Finding(table, f"row groups of {avg:,.0f} rows on average, sized for CPUs",
                        f"a GPU wants about {GPU_GROUP_ROWS:,} rows a group: each group is one host-to-device "
                        "transfer and one batch of kernels, and small ones leave it waiting on launches")]
    if avg < TINY_GROUP_ROWS and groups >= MANY_GROUPS:
        return [Finding(table, f"{groups} row groups of {avg:,.0f} rows on average",
                        f"below {TINY_GROUP_ROWS:,} rows per-group work (statistics, tasks, chunk assembly) "
                        f"adds up; sluice works in chunks of {CPU_GROUP_ROWS:,} rows")]
    return []


def _pages(table: str, infos: list[dict]) -> list[Finding]:
    few = sorted({c["column"] for i in infos for c in i["columns"]
                  if c["pages_per_chunk"] is not None and c["pages_per_chunk"] < GPU_PAGES / 4
                  and c["uncompressed_bytes"] > (1 << 20) * i["row_groups"]})
    if not few:
        return []
    return [Finding(table, f"few pages per column chunk in {_names(few)}",
                    f"a GPU decodes pages in parallel; about {GPU_PAGES} pages a chunk keep it busy")]


def _columns(table: str, infos: list[dict]) -> list[Finding]:
    out = []
    cols: dict[str, dict] = {}
    for i in infos:
        for c in i["columns"]:
            agg = cols.setdefault(c["column"], {"comp": 0, "unc": 0, "codecs": set(), "enc": set(),
                                                "stats": True, "type": c["physical_type"]})
            agg["comp"] += c["compressed_bytes"]
            agg["unc"] += c["uncompressed_bytes"]
            agg["codecs"].update(c["codec"])
            agg["enc"].update(c["encodings"])
            agg["stats"] &= c["statistics"]
    useless = [n for n, a in cols.items() if a["codecs"] - {"UNCOMPRESSED"} and a["unc"] >= BIG_COLUMN
               and 1 - a["comp"] / a["unc"] < MIN_CODEC_GAIN]
    if useless:
        unc = sum(cols[n]["unc"] for n in useless)
        comp = sum(cols[n]["comp"] for n in useless)
        out.append(Finding(table, f"compression that does not pay on {_names(useless)} "
                                  f"({fmt_bytes(unc)} stored as {fmt_bytes(comp)})",
                           f"a codec saving under {MIN_CODEC_GAIN:.0%} costs decode time on every read "
                           "for almost no storage bandwidth"))
    no_stats = [n for n, a in cols.items() if not a["stats"]]
    if no_stats:
        out.append(Finding(table, f"no min/max statistics for {_names(no_stats)}",
                           "without them WHERE clauses and join runtime filters cannot skip row groups"))
    return out


def _names(cols: list[str], most: int = 4) -> str:
    shown = ", ".join(cols[:most])
    return shown + (f" and {len(cols) - most} more" if len(cols) > most else "")


def _measured(device: str) -> str:
    """The gain the layout study measured on ``device``'s kind, or that it was not measured there."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return MEASURED.get(kind) or NOT_MEASURED.format(device="a GPU" if kind == "cuda" else "a CPU")


def format_report(report: Report) -> str:
    """The findings by table, each table's fix once, and one command for a whole directory."""
    gpu = report.device.startswith("cuda")
    n = len(report.findings)
    out = [f"{report.root}: {len(report.tables)} table(s) checked for {'a GPU' if gpu else 'the CPU'}: "
           + (f"{n} finding(s)" if n else "nothing to fix")]
    needs_rewrite = []
    for name, t in report.tables.items():
        if not t["findings"]:
            continue
        out.append(f"\n{name} ({t['rows']:,} rows, {t['files']} file{'s' if t['files'] != 1 else ''}, "
                   f"{fmt_bytes(t['bytes'])})")
        for f in t["findings"]:
            out.append(f"  - {f.problem}: {f.why}")
        fixes = [f.fix for f in t["findings"] if f.fix]
        for fix in dict.fromkeys(fixes):
            out.append(f"  fix: {fix}")
        if any(f.fix is None for f in t["findings"]):
            needs_rewrite.append(name)
            out.append(f"  fix: {t['rewrite']}")
            out.append(f"       expected: {_measured(report.device)}")
    if len(needs_rewrite) > 1 and report.root.is_dir():
        preset = "gpu" if gpu else "cpu"
        out.append(f"\nor every table at once: sluice rewrite {report.root} "
                   f"{_rewritten_name(str(report.root), preset)} --for {preset}")
    return "\n".join(out)
