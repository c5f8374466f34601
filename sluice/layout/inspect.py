"""``sluice inspect``: what a Parquet file's layout looks like, per file and per column."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.errors import DataError
from sluice.layout.pages import column_chunk_pages
from sluice.metrics import fmt_bytes


def parquet_files(target: str | Path) -> list[Path]:
    p = Path(target)
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.parquet") if f.is_file())
        if files:
            return files
        raise DataError(f"{p} holds no .parquet files")
    raise DataError(f"{p} does not exist")


def _meta(path: Path) -> pq.FileMetaData:
    try:
        return pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{path} is not a readable Parquet file ({str(e).splitlines()[0]})") from None


def inspect_file(path: Path, pages: bool = True) -> dict:
    md = _meta(path)
    rows = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    cols = []
    for j in range(md.num_columns):
        comp = unc = npages = 0
        encodings: set[str] = set()
        codecs: set[str] = set()
        stats = True
        has_index = False
        for i in range(md.num_row_groups):
            cc = md.row_group(i).column(j)
            comp += cc.total_compressed_size
            unc += cc.total_uncompressed_size
            encodings.update(cc.encodings)
            codecs.add(cc.compression)
            stats &= bool(cc.is_stats_set and cc.statistics is not None and cc.statistics.has_min_max)
            has_index |= bool(getattr(cc, "has_offset_index", False))
            if pages:
                npages += sum(1 for p in column_chunk_pages(str(path), cc) if p.type != "DICTIONARY_PAGE")
        cols.append({
            "column": md.schema.column(j).name, "physical_type": md.schema.column(j).physical_type,
            "encodings": sorted(encodings), "codec": sorted(codecs),
            "compressed_bytes": comp, "uncompressed_bytes": unc,
            "pages_per_chunk": (npages / md.num_row_groups) if (pages and md.num_row_groups) else None,
            "statistics": stats, "page_index": has_index,
        })
    return {"file": str(path), "rows": md.num_rows, "row_groups": md.num_row_groups,
            "rows_per_group": {"min": min(rows, default=0), "max": max(rows, default=0),
                               "avg": (sum(rows) / len(rows)) if rows else 0},
            "created_by": md.created_by, "bytes": path.stat().st_size, "columns": cols}


def format_report(info: dict) -> str:
    rg = info["rows_per_group"]
    lines = [f"{info['file']}: {info['rows']:,} rows, {info['row_groups']} row groups "
             f"({rg['min']:,}..{rg['max']:,} rows, avg {rg['avg']:,.0f}), {fmt_bytes(info['bytes'])}, "
             f"written by {info['created_by']}"]
    hdr = ["column", "type", "pages/chunk", "encodings", "codec", "compressed", "uncompressed", "ratio", "stats",
           "page index"]
    rows = []
    for c in info["columns"]:
        ratio = c["uncompressed_bytes"] / c["compressed_bytes"] if c["compressed_bytes"] else 0
        rows.append([c["column"], c["physical_type"],
                     f"{c['pages_per_chunk']:.1f}" if c["pages_per_chunk"] is not None else "-",
                     ",".join(c["encodings"]), ",".join(c["codec"]), fmt_bytes(c["compressed_bytes"]),
                     fmt_bytes(c["uncompressed_bytes"]), f"{ratio:.2f}", "yes" if c["statistics"] else "no",
                     "yes" if c["page_index"] else "no"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(hdr)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(hdr, widths)))
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    return "\n".join(lines)
