"""The TPC-H (validation parameters), SSB and ClickBench query texts shipped with sluice."""

from __future__ import annotations

import re
from importlib import resources

import sqlglot
from sqlglot import exp


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


def clickbench_queries() -> dict[str, str]:
    """ClickBench's 43 queries over ``hits`` (q00..q42, the benchmark's numbering from 0)."""
    return _load("clickbench")


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


def limit_parts(sql: str, columns: list[str] | None = None) -> tuple[str, list[int]] | None:
    """For a query whose outermost SELECT has a LIMIT: (the query without LIMIT / OFFSET, the
    output positions its ORDER BY sorts on -- by position, output name or the same expression);
    None without a LIMIT. ``columns``: the result's column names (for ``SELECT *``)."""
    tree = sqlglot.parse_one(sql.strip().rstrip(";"), read="duckdb")
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is None:
        return None
    items = tree.expressions
    names = [it.alias_or_name.lower() for it in items]
    if columns is not None and any(isinstance(it, exp.Star) for it in items):
        names = [c.lower() for c in columns]
    texts = [(it.this if isinstance(it, exp.Alias) else it).sql("duckdb").lower() for it in items]
    cols = []
    order = tree.args.get("order")
    for o in (order.expressions if order else []):
        e = o.this
        if isinstance(e, exp.Literal) and not e.is_string:
            cols.append(int(e.this) - 1)
        elif isinstance(e, exp.Column) and not e.table and e.name.lower() in names:
            cols.append(names.index(e.name.lower()))
        elif e.sql("duckdb").lower() in texts:
            cols.append(texts.index(e.sql("duckdb").lower()))
    full = tree.copy()
    full.set("limit", None)
    full.set("offset", None)
    return full.sql("duckdb"), cols
