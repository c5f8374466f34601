"""Where a column of an operator's output comes from: the one lineage walker over physical plans.

Runtime and top-k filters (``sluice.physical.filter_placement``) drop rows at a scan by a key
that reaches their operator unchanged, so they pass filters, exchanges (noted: the rows go to
other ranks), renaming projections, the probe sides of joins and, where asked, the group keys of
aggregations. A MIN / MAX bound (``sluice.physical.minmax_bounds``) needs the scan's own rows
with nothing computed on them (a row group it skips must hold no computation that could raise),
so it passes only projections that rename every column.
"""

from __future__ import annotations

from sluice.exec.exchange import ExchangeOp
from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.operators import FilterOp, Operator, ProjectOp, ScanOp
from sluice.expr.nodes import Col


def scan_column(op: Operator, name: str, *, subsets: bool = True, aggregates: bool = True,
                deep: list | None = None) -> tuple[ScanOp, str, bool] | None:
    """(scan, file column, whether an exchange lies between) that column ``name`` of ``op``'s
    output is, unchanged; None where it is computed or the walk meets anything else.

    ``subsets`` false: only through projections that rename every column (the scan's rows, as
    read). ``aggregates`` (with ``subsets``): also through group keys -- ``deep`` (a list) then
    gets True appended."""
    crossed = False
    while True:
        if isinstance(op, ScanOp):
            return (op, op.columns[name], crossed) if name in op.columns else None
        if isinstance(op, ProjectOp):
            if not subsets and not all(isinstance(e, Col) for _, e in op.exprs):
                return None
            e = dict(op.exprs).get(name)
            if not isinstance(e, Col):
                return None
            op, name = op.child, e.name
        elif not subsets:
            return None
        elif isinstance(op, FilterOp):
            op = op.child
        elif isinstance(op, ExchangeOp):
            op, crossed = op.child, True
        elif isinstance(op, HashJoinOp) and name in op.probe_schema:
            op = op.probe
        elif isinstance(op, HashAggregateOp) and aggregates:
            # A group key is its rows' value: the rows a filter on it drops form only groups
            # the join would drop (TPC-H Q17: lineitem's rows of 200 parts, not 200 K groups).
            e = dict(op.keys).get(name)
            if not isinstance(e, Col):
                return None
            op, name = op.child, e.name
            if deep is not None:
                deep.append(True)
        else:
            return None
