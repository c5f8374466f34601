"""Push semi and anti joins (EXISTS / IN and their negations) below inner joins, onto the
input that holds every column they test, so that the filter they are shrinks a join's input
instead of its output. TPC-H Q18: the IN subquery keeps 624 of 15M orders before they meet
60M lineitem rows, instead of after 60M joined rows were produced.

A semi or anti join only removes rows of its left input by that input's own columns, so it
commutes with an inner join on the other input and with a filter (NOT IN's NULL semantics
depend on the subquery's rows alone, which do not change). It pays only where the inner join
does not already shrink that input (estimated): TPC-H Q21's EXISTS stays above the joins with
one nation's suppliers and the 'F' orders, which keep a small share of lineitem.

>>> # Semi(Join(A, B), S) on A.k = S.k  ->  Join(Semi(A, S), B)
"""

from __future__ import annotations

from dataclasses import replace

from sluice.plan.estimate import estimate
from sluice.plan.logical import Filter, Join, JoinKind, PlanNode


def push_semi_joins(plan: PlanNode) -> PlanNode:
    plan = plan.reconstruct([push_semi_joins(c) for c in plan.children])
    if isinstance(plan, Join) and plan.kind in (JoinKind.SEMI, JoinKind.ANTI):
        return _push(plan)
    return plan


def _push(semi: Join) -> PlanNode:
    below = semi.left
    used = set().union(*(k.columns() for k in semi.left_keys))
    if semi.residual is not None:
        used |= semi.residual.columns() - set(semi.right.schema)
    if isinstance(below, Filter):
        return Filter(_push(replace(semi, left=below.child)), below.predicate)
    if isinstance(below, Join) and below.kind in (JoinKind.INNER, JoinKind.CROSS) and not below.single_row:
        for side in ("left", "right"):
            child = getattr(below, side)
            if used <= set(child.schema) and estimate(below)[0] >= estimate(child)[0]:
                return replace(below, **{side: _push(replace(semi, left=child))})
    return semi
