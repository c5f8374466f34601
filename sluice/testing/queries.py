"""The TPC-H (validation parameters) and SSB query texts shipped with sluice."""

from __future__ import annotations

import re
from importlib import resources


def _load(kind: str) -> dict[str, str]:
    out = {}
    for f in sorted(resources.files("sluice.queries").joinpath(kind).iterdir(), key=lambda p: p.name):
        if f.name.endswith(".sql"):
            out[f.name[:-4]] = f.read_text()
    return out


def tpch_queries() -> dict[str, str]:
    return _load("tpch")


def ssb_queries() -> dict[str, str]:
    return _load("ssb")


def order_by_columns(sql: str, table_columns: list[str]) -> list[int]:
    """Positions of output columns named in the query's final ORDER BY (for order checks)."""
    m = re.search(r"order\s+by\s+(.*?)(?:limit\s+\d+)?\s*;?\s*$", sql, re.I | re.S)
    if not m:
        return []
    cols = []
    for part in m.group(1).split(","):
        name = part.strip().split()[0].lower() if part.strip() else ""
        if name in [c.lower() for c in table_columns]:
            cols.append([c.lower() for c in table_columns].index(name))
    return cols
