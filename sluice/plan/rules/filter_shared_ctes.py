"""A CTE that every reference filters computes only the rows some reference keeps.

``push_filters`` stops at a shared CTE (computed once, used several times): one reference's
condition must not remove rows another reference sees, so each condition ends directly above
its reference. When *every* reference has one, the CTE itself only needs the rows that pass
at least one of them: their OR goes into the CTE and is pushed down there (the conditions
above the references stay and still select each one's rows). TPC-DS Q39 aggregates a year of
inventory by month and uses the result twice, for April and for May: with ``d_moy = 4 OR
d_moy = 5`` below the aggregation, it reads and groups two months instead of twelve.

>>> # Filter[p](Shared(X)) ... Filter[q](Shared(X))  ->  ... Shared(push(Filter[p OR q](X))) ...
"""

from __future__ import annotations

from sluice.expr.build import make_bool
from sluice.plan.logical import Filter, PlanNode, Shared
from sluice.plan.rules.push_filters import push_filters


def filter_shared_ctes(plan: PlanNode) -> PlanNode:
    conds: dict[int, list] = {}
    _collect(plan, None, conds, set())
    wanted = {k: cs for k, cs in conds.items() if cs and all(c is not None for c in cs)}
    if not wanted:
        return plan
    return _rewrite(plan, wanted, {})


def _collect(plan: PlanNode, above, conds: dict, seen: set) -> None:
    """Record, per shared CTE, the condition directly above each reference (None: none)."""
    if isinstance(plan, Shared):
        conds.setdefault(plan.key, []).append(above)
        if plan.key not in seen:
            seen.add(plan.key)
            _collect(plan.child, None, conds, seen)
        return
    if isinstance(plan, Filter) and isinstance(plan.child, Shared):
        _collect(plan.child, plan.predicate, conds, seen)
        return
    for c in plan.children:
        _collect(c, None, conds, seen)


def _rewrite(plan: PlanNode, wanted: dict, done: dict) -> PlanNode:
    if isinstance(plan, Shared):
        if plan.key not in done:
            child = _rewrite(plan.child, wanted, done)
            cs = wanted.get(plan.key)
            if cs is not None:
                distinct = list({str(c): c for c in cs}.values())
                cond = distinct[0] if len(distinct) == 1 else make_bool("or", distinct)
                child = push_filters(Filter(child, cond))
            done[plan.key] = Shared(child, plan.key)
        return done[plan.key]
    return plan.reconstruct([_rewrite(c, wanted, done) for c in plan.children])
