"""Where a column of a logical plan's output comes from: the one lineage walker over logical plans.

Lowering asks it when a decision rests on a column being a scan's column, unchanged: an
aggregate answered from row-group statistics (``sluice.physical.statistics``) needs the rows of
the whole scan, so it passes renaming projections only; a group key's range from statistics
(``sluice.physical.key_ranges``) holds for any subset of the rows, so it also passes filters,
sorts, limits, shared subplans and either side of a join.
"""

from __future__ import annotations

from sluice.expr.nodes import Col
from sluice.plan.logical import Filter, Join, Limit, PlanNode, Project, Scan, Shared, Sort


def scan_column(plan: PlanNode, name: str, *, subsets: bool = False) -> tuple[Scan, str] | None:
    """(scan, the scan's output column) that output ``name`` of ``plan`` is, unchanged: through
    projections that pass it on by name and, with ``subsets``, through what keeps a subset of
    the rows (or adds NULLs: an outer join's side). None where an expression computes it or
    the walk meets anything else (a mark join's flag, an aggregate, a union)."""
    while True:
        if isinstance(plan, Scan):
            return plan, name
        if isinstance(plan, Project):
            e = dict(plan.exprs).get(name)
            if not isinstance(e, Col):
                return None
            plan, name = plan.child, e.name
        elif subsets and isinstance(plan, (Filter, Sort, Limit, Shared)):
            plan = plan.child
        elif subsets and isinstance(plan, Join):
            if name in plan.left.schema:
                plan = plan.left
            elif name in plan.right.schema:
                plan = plan.right
            else:
                return None
        else:
            return None
