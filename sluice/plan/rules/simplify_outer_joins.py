"""Outer joins that a condition above makes inner: ``a LEFT JOIN b ... WHERE b.x = c.y``
drops every row whose ``b`` side was NULL-extended (the comparison is NULL there), so the join
is an inner join -- as DuckDB and PostgreSQL rewrite it. As an inner join it joins the run of
inner joins around it, and join ordering may then start from the selective side: TPC-DS Q93
joined 2.9 M store_sales rows with store_returns before the one reason its WHERE keeps.

A condition rejects NULLs in a column when it cannot be TRUE with that column NULL: a
comparison, LIKE or IN whose operands are columns, constants and NULL-propagating functions
of them, IS NOT NULL, a conjunction of such, or an OR whose every branch rejects the column.
Runs before ``order_joins``, on the InnerJoins nodes the translator emits."""

from __future__ import annotations

from sluice.expr.build import COMPARE, Col, Expr, Func, Lit, make_compare
from sluice.plan.logical import Filter, InnerJoins, Join, JoinKind, PlanNode, Project

#: Functions whose result is NULL whenever an argument is (so NULL reaches the comparison).
_STRICT = {"+", "-", "*", "/", "%", "neg", "abs", "round", "cast", "upper", "lower", "substring", "trim", "ltrim",
           "rtrim", "length", "extract", "date_trunc", "add_months"}
_PREDICATES = set(COMPARE) | {"like", "not_like", "ilike", "not_ilike", "in"}


def rejects_nulls(e: Expr, columns: set[str]) -> bool:
    """Whether ``e`` cannot be TRUE on a row whose ``columns`` are all NULL (a NULL-extended
    row of an outer join's other side)."""
    if not isinstance(e, Func):
        return False
    if e.op == "and":
        return any(rejects_nulls(a, columns) for a in e.args)
    if e.op == "or":
        return all(rejects_nulls(a, columns) for a in e.args)
    if e.op == "is_not_null" or e.op in _PREDICATES:
        args = e.args[:1] if e.op == "is_not_null" else e.args
        hit = False
        for a in args:
            cols = _strict_columns(a)
            if cols is None:
                if e.op != "is_not_null":
                    continue  # this operand may be non-NULL anyway; another one may still decide
                return False
            hit |= bool(cols & columns)
        return hit
    return False


def _strict_columns(e: Expr) -> set[str] | None:
    """The columns of ``e`` if NULL in any of them makes ``e`` NULL, else None."""
    if isinstance(e, Col):
        return {e.name}
    if isinstance(e, Lit):
        return set()
    if isinstance(e, Func) and e.op in _STRICT:
        out: set[str] = set()
        for a in e.args:
            cols = _strict_columns(a)
            if cols is None:
                return None
            out |= cols
        return out
    return None


def simplify_outer_joins(plan: PlanNode) -> PlanNode:
    return _walk(plan, ())


def _walk(plan: PlanNode, above: tuple[Expr, ...]) -> PlanNode:
    """``above``: conditions applied to this node's rows further up (each row they keep made
    every one of them TRUE)."""
    if isinstance(plan, Filter):
        return Filter(_walk(plan.child, above + (plan.predicate,)), plan.predicate)
    if isinstance(plan, InnerJoins):
        here = above + tuple(plan.conditions)
        inputs, conditions = [], list(plan.conditions)
        for p in plan.inputs:
            p = _walk(p, here)
            if isinstance(p, InnerJoins):  # a left join that became inner: one run of joins
                inputs += p.inputs
                conditions += p.conditions
            else:
                inputs.append(p)
        return InnerJoins(tuple(inputs), tuple(conditions))
    if isinstance(plan, Join) and plan.kind == JoinKind.LEFT and not plan.single_row and not plan.null_aware \
            and any(rejects_nulls(c, set(plan.right.schema)) for c in above):
        conds = [make_compare("=", lk, rk) for lk, rk in zip(plan.left_keys, plan.right_keys)]
        if plan.residual is not None:
            conds.append(plan.residual)
        return _walk(InnerJoins((plan.left, plan.right), tuple(conds)), above)
    if isinstance(plan, Join) and plan.kind in (JoinKind.INNER, JoinKind.LEFT):
        # Rows keep their columns through an inner join, and the left side's through a left
        # join: the conditions above still apply to them there.
        return plan.reconstruct([_walk(plan.left, above), _walk(plan.right, above if plan.kind == JoinKind.INNER else ())])
    if isinstance(plan, Project) and all(isinstance(e, Col) and e.name == n for n, e in plan.exprs):
        return plan.reconstruct([_walk(plan.child, above)])  # the same columns, by the same names
    return plan.reconstruct([_walk(c, ()) for c in plan.children]) if plan.children else plan


def inner_joins_below_left_joins(plan: PlanNode) -> PlanNode:
    """``(A LEFT JOIN R) JOIN X ...`` with no condition on R's columns becomes
    ``(A JOIN X ...) LEFT JOIN R``: each row of A keeps the same matches in R whatever A is
    joined with, so the inner joins may be ordered with A's inputs and shrink A before the
    outer join probes. TPC-DS Q40 and Q80 write the fact table's LEFT JOIN with its returns
    first and the dimensions that filter the facts after it. Conditions that name R's columns
    become a filter above the outer join (any that rejected NULL-extended rows has already made
    it inner)."""
    children = [inner_joins_below_left_joins(c) for c in plan.children]
    if children:
        plan = plan.reconstruct(children)
    if not isinstance(plan, InnerJoins):
        return plan
    for k, p in enumerate(plan.inputs):
        if not (isinstance(p, Join) and p.kind == JoinKind.LEFT and not p.single_row and not p.null_aware):
            continue
        right = set(p.right.schema)
        keep = tuple(c for c in plan.conditions if not (c.columns() & right))
        above = [c for c in plan.conditions if c.columns() & right]
        inner = InnerJoins(plan.inputs[:k] + (p.left,) + plan.inputs[k + 1:], keep)
        out: PlanNode = Join(inner_joins_below_left_joins(inner), p.right, JoinKind.LEFT, p.left_keys, p.right_keys,
                             p.residual)
        for c in above:
            out = Filter(out, c)
        return out
    return plan
