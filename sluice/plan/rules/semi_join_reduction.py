"""Inner joins whose duplicates nobody can see become semi joins.

The subquery of ``x IN (SELECT ...)`` / ``EXISTS`` (the right side of a semi, anti or mark
join) is only ever asked whether a value occurs, never how often. There, a join
``A JOIN B ON ...`` whose columns above come from ``A`` alone gives the same *set* of rows as
``A SEMI JOIN B ON ...``: each row of A once, instead of once per match. The rule walks down
from such positions (through projections, filters, DISTINCT and the inputs of joins, which
all keep set semantics), turns those joins into semi joins -- a filter of both sides above the
join first becomes its residual -- and drops the projected columns nobody needs. A shared CTE
is changed only when every reference to it sits in such a position, for the columns all of
them need.

TPC-DS Q95: ``ws_wh`` pairs web_sales rows of one order shipped from different warehouses
(90 M pairs at SF 10) and is used only in two IN subqueries on the order number; as a semi
join it keeps each qualifying web_sales row once (at most 7 M), and the join of web_returns
with it, inside the second IN, becomes a semi join too.

>>> # Semi(L, Project[a](Filter[p](Join(A, B, a=b))))  ->  Semi(L, Project[a](Semi(A, B, a=b, residual p)))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sluice.expr.nodes import and_all, conjuncts
from sluice.plan.logical import Aggregate, Filter, Join, JoinKind, PlanNode, Project, Shared, Sort


@dataclass
class _Refs:
    insensitive: bool = True
    need: set = field(default_factory=set)


@dataclass
class _Ctx:
    collect: bool                 # first pass: only record how shared CTEs are referenced
    refs: dict = field(default_factory=dict)     # Shared key -> _Refs
    done: dict = field(default_factory=dict)     # Shared key -> rewritten Shared node


def semi_join_reduction(plan: PlanNode) -> PlanNode:
    ctx = _Ctx(collect=True)
    _walk(plan, False, set(plan.schema), ctx)
    if not any(r.insensitive for r in ctx.refs.values()) and not _has_semi(plan):
        return plan
    refs = ctx.refs
    ctx = _Ctx(collect=False, refs=refs)
    return _walk(plan, False, set(plan.schema), ctx)


def _has_semi(plan: PlanNode) -> bool:
    if isinstance(plan, Join) and plan.kind in (JoinKind.SEMI, JoinKind.ANTI, JoinKind.MARK):
        return True
    return any(_has_semi(c) for c in plan.children)


def _cols(*exprs) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        if e is not None:
            out |= e.columns()
    return out


def _walk(plan: PlanNode, ins: bool, need: set[str], ctx: _Ctx) -> PlanNode:
    """``plan`` rewritten; ``ins``: only the set of its rows matters; ``need``: the columns of
    its output that are used above."""
    if isinstance(plan, Shared):
        if ctx.collect:
            r = ctx.refs.setdefault(plan.key, _Refs())
            r.insensitive &= ins
            r.need |= need
            _walk(plan.child, False, set(plan.child.schema), ctx)
            return plan
        if plan.key not in ctx.done:
            r = ctx.refs.get(plan.key)
            if r is not None and r.insensitive:
                ctx.done[plan.key] = Shared(_walk(plan.child, True, set(r.need), ctx), plan.key)
            else:
                ctx.done[plan.key] = Shared(_walk(plan.child, False, set(plan.child.schema), ctx), plan.key)
        return ctx.done[plan.key]
    if isinstance(plan, Project):
        exprs = tuple((n, e) for n, e in plan.exprs if n in need) if ins else plan.exprs
        if not exprs:
            exprs = plan.exprs[:1]
        child = _walk(plan.child, ins, _cols(*(e for _, e in exprs)), ctx)
        return replace(plan, child=child, exprs=exprs)
    if isinstance(plan, Filter):
        if ins and isinstance(plan.child, Join) and plan.child.kind == JoinKind.INNER and not plan.child.single_row \
                and _one_side(plan.child, need) is not None:
            j = plan.child
            lcols, rcols = set(j.left.schema), set(j.right.schema)
            parts = conjuncts(plan.predicate)
            lf = [c for c in parts if c.columns() <= lcols]
            rf = [c for c in parts if c.columns() <= rcols and c not in lf]
            both = [c for c in parts if c not in lf and c not in rf]
            j = replace(j, left=Filter(j.left, and_all(lf)) if lf else j.left,
                        right=Filter(j.right, and_all(rf)) if rf else j.right,
                        residual=and_all(([j.residual] if j.residual is not None else []) + both))
            return _walk(j, ins, need, ctx)
        return replace(plan, child=_walk(plan.child, ins, need | plan.predicate.columns(), ctx))
    if isinstance(plan, Sort) and plan.limit is None:
        return replace(plan, child=_walk(plan.child, ins, need | _cols(*(k.expr for k in plan.keys)), ctx))
    if isinstance(plan, Aggregate):
        keys = _cols(*(e for _, e in plan.keys))
        args = _cols(*(a.arg for _, a in plan.aggs))
        # GROUP BY without aggregates (DISTINCT): its output depends on the set of its input.
        return replace(plan, child=_walk(plan.child, not plan.aggs, keys | args, ctx))
    if isinstance(plan, Join):
        return _join(plan, ins, need, ctx)
    return plan.reconstruct([_walk(c, False, set(c.schema), ctx) for c in plan.children])


def _one_side(j: Join, need: set[str]) -> str | None:
    """The side all of ``need`` comes from, when an equi-join could become a semi join."""
    if not j.left_keys:
        return None
    if need <= set(j.left.schema):
        return "left"
    if need <= set(j.right.schema):
        return "right"
    return None


def _join(j: Join, ins: bool, need: set[str], ctx: _Ctx) -> PlanNode:
    cond = _cols(*j.left_keys, *j.right_keys, j.residual)
    if j.kind in (JoinKind.SEMI, JoinKind.ANTI, JoinKind.MARK) and not j.single_row:
        left = _walk(j.left, ins, (need | cond) & set(j.left.schema), ctx)
        right = _walk(j.right, True, cond & set(j.right.schema), ctx)
        return replace(j, left=left, right=right)
    if ins and j.kind == JoinKind.INNER and not j.single_row:
        side = _one_side(j, need)
        if side is not None:
            keep, other = (j.left, j.right) if side == "left" else (j.right, j.left)
            kk, ok = (j.left_keys, j.right_keys) if side == "left" else (j.right_keys, j.left_keys)
            left = _walk(keep, True, (need | cond) & set(keep.schema), ctx)
            right = _walk(other, True, cond & set(other.schema), ctx)
            outputs = None if j.outputs is None else tuple(c for c in j.outputs if c in left.schema) or None
            return Join(left, right, JoinKind.SEMI, kk, ok, j.residual, outputs=outputs)
    sub = ins and j.kind in (JoinKind.INNER, JoinKind.CROSS) and not j.single_row
    left = _walk(j.left, sub, (need | cond) & set(j.left.schema) if sub else set(j.left.schema), ctx)
    right = _walk(j.right, sub, (need | cond) & set(j.right.schema) if sub else set(j.right.schema), ctx)
    return replace(j, left=left, right=right)
