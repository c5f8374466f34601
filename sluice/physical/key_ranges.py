"""Key ranges an aggregation knows before it runs: its integer-like GROUP BY keys' (min, max)
from the Parquet statistics of the scan column each key is (decided when lowering).

Grouping codes an integer key as its value less the key's minimum, over the key's range; to
know them it read the chunk's min and max back from the device (``kernels/keys.py``: a host
wait per chunk and key on a GPU, issue 50). Where a key is a column of a Parquet scan --
through renaming projections, filters, sorts, limits, shared subplans and either side of a
join, which pass values through unchanged (an outer join adds NULLs, coded apart) -- and every
row group of its table has min / max statistics in SQL order (signed integers, dates, decimals:
:func:`sluice.types.statistics_in_sql_order`), their union bounds every value the key takes.
Grouping checks the bound on the device as it codes (a deferred value check: a file whose
statistics lie is an error, never a wrong group) and reads nothing back for it.
"""

from __future__ import annotations

from sluice.expr.nodes import Col
from sluice.plan.lineage import scan_column
from sluice.plan.logical import Aggregate, Scan
from sluice.types import statistics_in_sql_order

#: Key types whose statistics the catalog keeps as the integers sluice codes them by.
KINDS = frozenset({"int8", "int16", "int32", "int64", "date", "decimal"})


def key_ranges(plan: Aggregate) -> tuple | None:
    """Per key of ``plan``: (lo, hi) from statistics, or None; None when no key has one."""
    out = tuple(_range(plan.child, e.name) if isinstance(e, Col) and e.type.kind in KINDS else None
                for _, e in plan.keys)
    return out if any(r is not None for r in out) else None


def _range(plan, name: str) -> tuple[int, int] | None:
    hit = scan_column(plan, name, subsets=True)
    return None if hit is None else _from_statistics(*hit)


def column_statistics_range(plan, name: str) -> tuple[int, int] | None:
    """(min, max) of output ``name`` of ``plan`` from its Parquet statistics when it is a scan's
    column passed on unchanged over all of the scan's rows (no filter between: BITSTRING_AGG's
    range, which DuckDB takes from the statistics of the rows it aggregates), else None."""
    hit = scan_column(plan, name)
    return None if hit is None else _from_statistics(*hit)


def _from_statistics(scan: Scan, name: str) -> tuple[int, int] | None:
    t = scan.table
    col = scan.columns.get(name)
    if col is None or t.format != "parquet" or col in t.partitions or col not in t.arrow_schema.names:
        return None
    lt = t.types[col]
    if lt.kind not in KINDS or not statistics_in_sql_order(t.arrow_schema.field(col).type, lt):
        return None
    lo = hi = None
    for rg in t.row_groups:
        if not rg.num_rows:
            continue
        b = rg.stats.get(col)
        if b is None or not isinstance(b[0], int) or not isinstance(b[1], int):
            return None
        lo = b[0] if lo is None else min(lo, b[0])
        hi = b[1] if hi is None else max(hi, b[1])
    return None if lo is None else (lo, hi)
