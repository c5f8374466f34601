"""Aggregates answered from the files' statistics: ``SELECT MIN(d), MAX(d), COUNT(*) FROM t``
reads no row (DuckDB does the same; ClickBench's q06 was 24x slower read row by row).

Decided when lowering, only where it is exact: no GROUP BY, every aggregate a MIN or MAX of a
column or COUNT(*), straight over one Parquet scan without a filter (through renaming
projections), every row group with min/max statistics for the column, and the column of a type
whose Parquet statistics order as SQL does -- signed integers, dates and decimals (not strings,
whose statistics may be truncated; not floats, NaN; not unsigned integers, which old writers
ordered as signed). One rank only. ``stats_aggregates=false`` turns it off.
"""

from __future__ import annotations

from sluice.types import statistics_in_sql_order

from sluice.exec.operators import Operator, StatisticsOp
from sluice.expr.nodes import Col, Lit
from sluice.plan.lineage import scan_column
from sluice.plan.logical import Aggregate, Project, Scan


def statistics_aggregate(plan: Aggregate) -> Operator | None:
    """The one-row answer of ``plan`` from row-group statistics, or None where it is not exact."""
    if plan.keys or not plan.aggs:
        return None
    scan = plan.child
    while isinstance(scan, Project):
        scan = scan.child
    if not isinstance(scan, Scan) or scan.filter is not None or scan.table.format != "parquet":
        return None
    groups = [rg for rg in scan.table.row_groups if rg.num_rows]
    if not groups:
        return None
    values = []
    for name, call in plan.aggs:
        if call.func == "count_star":
            values.append((name, Lit(sum(rg.num_rows for rg in groups), call.type)))
            continue
        if call.func not in ("min", "max") or not isinstance(call.arg, Col):
            return None
        hit = scan_column(plan.child, call.arg.name)
        file_col = hit[0].columns.get(hit[1]) if hit is not None else None
        if file_col is None or file_col not in scan.table.arrow_schema.names or not statistics_in_sql_order(scan.table.arrow_schema.field(file_col).type,
                                                           scan.table.types[file_col]):
            return None
        bounds = [rg.stats.get(file_col) for rg in groups]
        if any(b is None or b[0] is None or b[1] is None for b in bounds):
            return None
        v = min(b[0] for b in bounds) if call.func == "min" else max(b[1] for b in bounds)
        values.append((name, Lit(int(v), call.type)))
    return StatisticsOp(scan.table.name, tuple(values))
