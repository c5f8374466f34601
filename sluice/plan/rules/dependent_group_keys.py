"""A GROUP BY key computed from another key's column alone (``GROUP BY ClientIP, ClientIP - 1``)
does not split any group: it is computed once per group, above the aggregation, instead of
being hashed with every row. ClickBench q35 groups by ``ClientIP`` and three offsets of it.

Only arithmetic that gives one value for one input (``+ - *``, negation, ABS, CAST): an error
such an expression raises on some row it raises on that row's group too.

>>> # Aggregate[keys: x, y := x - 1]  ->  Project[x, y := x - 1](Aggregate[keys: x])
"""

from __future__ import annotations

from sluice.expr.nodes import Col, Expr, Func, Lit, substitute
from sluice.plan.logical import Aggregate, PlanNode, Project

_SAFE = frozenset({"+", "-", "*", "neg", "abs", "cast"})


def dependent_group_keys(plan: PlanNode) -> PlanNode:
    children = [dependent_group_keys(c) for c in plan.children]
    if children:
        plan = plan.reconstruct(children)
    if not isinstance(plan, Aggregate) or len(plan.keys) < 2:
        return plan
    base = {e.name: Col(n, e.type) for n, e in plan.keys if isinstance(e, Col)}
    moved = {n: e for n, e in plan.keys
             if not isinstance(e, Col) and _safe(e) and e.columns() and e.columns() <= set(base)}
    if not moved:
        return plan
    keys = tuple((n, e) for n, e in plan.keys if n not in moved)
    out = [(n, substitute(moved[n], base) if n in moved else Col(n, e.type)) for n, e in plan.keys]
    out += [(n, Col(n, call.type)) for n, call in plan.aggs]
    return Project(Aggregate(plan.child, keys, plan.aggs), tuple(out))


def _safe(e: Expr) -> bool:
    if isinstance(e, (Col, Lit)):
        return True
    return isinstance(e, Func) and e.op in _SAFE and all(_safe(a) for a in e.args)
