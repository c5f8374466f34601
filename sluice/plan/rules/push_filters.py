"""Push filter conjuncts as far down as they can go: through projections (by substitution),
into the sides of joins where that keeps outer-join semantics, below aggregations when they
only test group keys, and finally into scans (where they also prune row groups).

>>> # Filter(Project(Scan)) with a condition on a projected column ends as Scan(filter=...)
"""

from __future__ import annotations

from functools import singledispatch

from sluice.plan import expr as E
from sluice.plan.expr import Expr
from sluice.plan.joins import implied_filters
from sluice.plan.logical import Aggregate, Filter, Join, PlanNode, Project, Repeat, Scan, Shared, Sort, Limit, Union, Window


def push_filters(plan: PlanNode) -> PlanNode:
    return _push(plan, [])


def _wrap(plan: PlanNode, conds: list[Expr]) -> PlanNode:
    c = E.and_all(conds)
    return plan if c is None else Filter(plan, c)


@singledispatch
def _push(plan: PlanNode, conds: list[Expr]) -> PlanNode:
    """Base case: stop here, recurse into children with nothing to push."""
    return _wrap(plan.reconstruct([_push(c, []) for c in plan.children]), conds)


@_push.register
def _(plan: Filter, conds):
    return _push(plan.child, conds + E.conjuncts(plan.predicate))


@_push.register
def _(plan: Scan, conds):
    if not conds:
        return plan
    from dataclasses import replace
    return replace(plan, filter=E.and_all(E.conjuncts(plan.filter) + conds))


@_push.register
def _(plan: Project, conds):
    mapping = {n: e for n, e in plan.exprs}
    below, keep = [], []
    for c in conds:
        # Substitute when every referenced output is a plain expression of the input.
        if c.columns() <= set(mapping):
            below.append(E.substitute(c, mapping))
        else:
            keep.append(c)
    return _wrap(Project(_push(plan.child, below), plan.exprs), keep)


@_push.register
def _(plan: Aggregate, conds):
    keys = {n: e for n, e in plan.keys}
    below, keep = [], []
    for c in conds:
        if c.columns() and c.columns() <= set(keys):
            below.append(E.substitute(c, keys))
        else:
            keep.append(c)
            # An OR of branches that each test a group key implies the OR of those tests, which
            # can go below (TPC-DS Q39b: ``moy = 5 OR (cov > 1.5 AND moy = 4)``); c stays.
            for imp in implied_filters(c, [set(keys), set(plan.schema) - set(keys)]):
                if imp.columns() <= set(keys):
                    below.append(E.substitute(imp, keys))
    return _wrap(Aggregate(_push(plan.child, below), plan.keys, plan.aggs), keep)


@_push.register
def _(plan: Join, conds):
    from dataclasses import replace
    left_names = set(plan.left.schema)
    right_names = set(plan.right.schema)
    to_left, to_right, keep = [], [], []
    for c in conds:
        cols = c.columns()
        if cols and cols <= left_names and plan.kind in ("inner", "left", "semi", "anti", "cross", "mark"):
            to_left.append(c)
        elif cols and cols <= right_names and plan.kind in ("inner", "right", "cross"):
            to_right.append(c)
        else:
            keep.append(c)
    if plan.kind in ("inner", "cross") and keep:
        # Equalities between the sides of a cross join become join keys.
        from sluice.plan.joins import equi_pair
        lk, rk, rest = list(plan.left_keys), list(plan.right_keys), []
        for c in keep:
            pair = equi_pair(c, left_names, right_names) if not plan.single_row else None
            if pair is not None:
                lk.append(pair[0])
                rk.append(pair[1])
            else:
                rest.append(c)
        if len(lk) != len(plan.left_keys):
            plan = replace(plan, kind="inner", left_keys=tuple(lk), right_keys=tuple(rk))
            keep = rest
    # The residual of semi/anti/outer joins stays where it is; its single-side inner-join
    # conjuncts were already placed by the translator.
    return _wrap(replace(plan, left=_push(plan.left, to_left), right=_push(plan.right, to_right)), keep)


@_push.register
def _(plan: Union, conds):
    if not conds:
        return Union(tuple(_push(c, []) for c in plan.inputs))
    return Union(tuple(_push(c, list(conds)) for c in plan.inputs))


@_push.register
def _(plan: Sort, conds):
    from dataclasses import replace
    if plan.limit is not None or plan.offset:
        return _wrap(replace(plan, child=_push(plan.child, [])), conds)
    return replace(plan, child=_push(plan.child, conds))


@_push.register
def _(plan: Limit, conds):
    from dataclasses import replace
    return _wrap(replace(plan, child=_push(plan.child, [])), conds)


@_push.register
def _(plan: Window, conds):
    # A filter changes the partitions a window sees: it stays above.
    from dataclasses import replace
    return _wrap(replace(plan, child=_push(plan.child, [])), conds)


@_push.register
def _(plan: Repeat, conds):
    # A condition on the row holds for all its copies: it may go below.
    from dataclasses import replace
    return replace(plan, child=_push(plan.child, conds))


@_push.register
def _(plan: Shared, conds):
    # Conditions of one reference must not filter the other references' rows.
    return _wrap(Shared(_push(plan.child, []), plan.key), conds)
