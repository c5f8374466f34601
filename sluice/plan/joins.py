"""Greedy join ordering for the inner joins of one FROM clause.

Each relation starts as its own component, with the single-relation conjuncts applied on it.
Repeatedly, the pair of components connected by equi-join conditions whose join is estimated
smallest is joined; conditions spanning more components wait until those are joined. Each
pair is costed once, the larger side first (the cost estimate is not symmetric when both
keys may be unique); which side builds is not decided here but when the plan is lowered
(:mod:`sluice.physical.joins`). Components without connecting conditions are
cross-joined last, smallest first.
"""

from __future__ import annotations

from sluice.expr import build as E
from sluice.plan.estimate import estimate, keyed_join_estimate
from sluice.expr.nodes import Expr, Func
from sluice.plan.logical import Filter, Join, JoinKind, PlanNode


def implied_filters(c: Expr, relations: list[set[str]]) -> list[Expr]:
    """Single-relation filters implied by an OR spanning several relations.

    ``(a1 AND b1) OR (a2 AND b2)`` with a* on relation A implies ``a1 OR a2`` on A, which can
    filter A before the join (TPC-H Q7's nation pairs, Q19's part and lineitem conditions).
    The original condition stays; the implied ones only remove rows it would remove.
    """
    if not (isinstance(c, Func) and c.op == "or"):
        return []
    cols = c.columns()
    if sum(1 for names in relations if cols & names) < 2:
        return []
    branches = E.or_branches(c)
    out = []
    for names in relations:
        if not cols & names:
            continue
        parts = []
        for b in branches:
            mine = [x for x in b if x.columns() and x.columns() <= names]
            if not mine:
                break
            parts.append(E.and_all(mine))
        else:
            out.append(E.make_bool("or", parts))
    return out


def plan_inner_joins(items: list[PlanNode], conjuncts: list[Expr]) -> PlanNode:

    comps: list[tuple[PlanNode, set[str]]] = [(p, set(p.schema)) for p in items]
    pending: list[Expr] = []
    constant: list[Expr] = []
    conjuncts = list(conjuncts)
    for c in list(conjuncts):
        conjuncts += implied_filters(c, [names for _, names in comps])
    for c in conjuncts:
        cols = c.columns()
        if not cols:
            constant.append(c)
            continue
        owners = [i for i, (_, names) in enumerate(comps) if cols & names]
        if len(owners) == 1 and cols <= comps[owners[0]][1]:
            p, names = comps[owners[0]]
            comps[owners[0]] = (Filter(p, c), names)
        else:
            pending.append(c)

    while len(comps) > 1:
        best = None
        for i in range(len(comps)):
            for j in range(len(comps)):
                if i == j:
                    continue
                li, ni = comps[i]
                lj, nj = comps[j]
                keys = [equi_pair(c, ni, nj) for c in pending if c.columns() <= ni | nj]
                keys = [k for k in keys if k is not None]
                if not keys:
                    continue
                lr, lb = estimate(li)
                rr, rb = estimate(lj)
                if rr > lr:  # each pair once: the larger side first
                    continue
                cost = keyed_join_estimate(li, lj, [k[0] for k in keys], [k[1] for k in keys], lr, lb, rr, rb)
                if best is None or cost < best[0]:
                    best = (cost, i, j)
        if best is None:
            # no connecting condition: cross join the two smallest components
            order = sorted(range(len(comps)), key=lambda k: estimate(comps[k][0])[0])
            i, j = order[1], order[0]
            joined_names = comps[i][1] | comps[j][1]
            node: PlanNode = Join(comps[i][0], comps[j][0], JoinKind.CROSS)
        else:
            _, i, j = best
            ni, nj = comps[i][1], comps[j][1]
            joined_names = ni | nj
            lk, rk, used = [], [], []
            for c in pending:
                if c.columns() <= joined_names:
                    pair = equi_pair(c, ni, nj)
                    if pair is not None:
                        lk.append(pair[0])
                        rk.append(pair[1])
                        used.append(c)
            node = Join(comps[i][0], comps[j][0], JoinKind.INNER, tuple(lk), tuple(rk))
            pending = [c for c in pending if c not in used]
        now = [c for c in pending if c.columns() <= joined_names]
        if now:
            node = Filter(node, E.and_all(now))
            pending = [c for c in pending if c not in now]
        comps = [c for k, c in enumerate(comps) if k not in (i, j)] + [(node, joined_names)]
    plan = comps[0][0]
    rest = pending + constant
    if rest:
        plan = Filter(plan, E.and_all(rest))
    return plan


def equi_pair(c: Expr, left: set[str], right: set[str]) -> tuple[Expr, Expr] | None:
    """(left expr, right expr) if ``c`` is an equality between the two sides."""
    if not (isinstance(c, Func) and c.op == "="):
        return None
    a, b = c.args
    ca, cb = a.columns(), b.columns()
    if not ca or not cb:
        return None
    if ca <= left and cb <= right:
        pair = (a, b)
    elif ca <= right and cb <= left:
        pair = (b, a)
    else:
        return None
    ta, tb = pair[0].type, pair[1].type
    if ta.kind == "decimal" or tb.kind == "decimal" or ta.is_float or tb.is_float:
        if ta != tb:
            return None  # keep mixed-scale equalities as residual conditions
    return pair


def extract_common_or(e: Expr) -> Expr:
    """(a AND b) OR (a AND c) -> a AND (b OR c): exposes join keys hidden in ORs (TPC-H Q19)."""
    if not (isinstance(e, Func) and e.op == "or"):
        return e
    branches = E.or_branches(e)
    common = [c for c in branches[0] if all(c in b for b in branches[1:])]
    if not common:
        return e
    rest = []
    for b in branches:
        r = [c for c in b if c not in common]
        if not r:
            return E.and_all(common)  # one branch is implied entirely
        rest.append(E.and_all(r))
    return E.and_all(common + [E.make_bool("or", rest)])
