"""Where an aggregation's MIN / MAX bound may skip row groups of the scan below it (see
:mod:`sluice.exec.minmax_bounds` for how it runs), decided when lowering.

Only where it is exact: every aggregate a MIN or MAX (not DISTINCT) of a column, every group key
a column, both straight from one Parquet scan (through renaming projections, as the operators
are chained: a filter pushed into the scan is fine), each argument of a type whose statistics
order as SQL does -- strings (byte order), signed integers, dates, decimals of up to 18 digits --
and the aggregation over that scan's own rows (a single or partial phase, not one over an
exchange). ``minmax_bounds=false`` turns it off.
"""

from __future__ import annotations

from sluice.types import statistics_in_sql_order

from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.exec.minmax_bounds import MinMaxBoundSpec
from sluice.expr.nodes import Col
from sluice.physical.lineage import scan_column
from sluice.physical.scan import aim_minmax_bound


def attach_minmax_bound(op: HashAggregateOp) -> None:
    """Give ``op`` and the scan under it a shared bound spec where one is exact."""
    if op.phase == "final" or not op.accs or op.distinct_args:
        return
    scans: list = []  # the scan the columns come from (one chain of renames: one scan)

    def column(name: str) -> str | None:  # the scan's rows as read: through renames only
        hit = scan_column(op.child, name, subsets=False)
        if hit is None:
            return None
        scans.append(hit[0])
        return hit[1]

    keys = []
    for _, e in op.keys:
        col = column(e.name) if isinstance(e, Col) else None
        if col is None:
            return
        keys.append(col)
    aggs = []
    for acc_key in op.accs:
        kind, arg, distinct = acc_key
        if kind not in ("min", "max") or distinct or not isinstance(arg, Col):
            return
        col = column(arg.name)
        if col is None:
            return
        scan = scans[0]
        if scan.table.format != "parquet" or col in scan.table.partitions or \
                col not in scan.table.arrow_schema.names or not statistics_in_sql_order(
                scan.table.arrow_schema.field(col).type, scan.table.types[col], strings=True):
            return
        aggs.append((acc_key, kind, col))
    spec = MinMaxBoundSpec(tuple(keys), tuple(aggs))
    op.minmax_bound = spec
    aim_minmax_bound(scan, spec)
