"""Lambda functions over lists, as DuckDB spells them: ``list_transform(l, lambda x: ...)``
(``array_transform``, ``list_apply``, ``array_apply``), ``list_filter`` (``array_filter``,
``filter``), ``list_reduce(l, lambda acc, x: ... [, initial])`` (``array_reduce``, ``reduce``),
a second (third for REDUCE) parameter being the 1-based position, and the comprehension
``[f(x) for x[, i] in l if c]`` (a FILTER then a TRANSFORM).

The body is translated in a scope of its own whose only source is the lambda's parameters, over
the enclosing scope (parameters shadow columns; other names resolve outside, as in DuckDB). The
outer columns it reads are then swapped for placeholders and passed as the call's arguments
(:mod:`sluice.expr.functions.lambdas`). The arrow form ``x -> ...``, which DuckDB 2.0 rejects as
deprecated, means the same lambda and is read as one (sqlglot does not tell them apart);
subqueries inside a body are refused as DuckDB refuses them."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.functions.cast import cast_expr
from sluice.expr import build as E
from sluice.expr.nodes import Col, Expr, Func, Lit, substitute
from sluice.sql.coverage import LAMBDA_CALLS
from sluice.sql.scope import Ctx, Scope, Source
from sluice.types import BOOL, FLOAT64, INT64, LType, list_of



def _lambda(node, what: str) -> exp.Lambda:
    if not isinstance(node, exp.Lambda):
        raise PlanError(f"{what} needs a lambda function as its second argument (lambda x: ...)")
    for sub in node.this.find_all(exp.Subquery, exp.Select, exp.Exists):
        raise UnsupportedError("subqueries in lambda expressions")
    return node


def _params(lam: exp.Lambda) -> list[str]:
    return [p.name.lower() for p in lam.expressions]


def bind_body(tr, body: exp.Expression, params: list[tuple[str, object]], ctx: Ctx) -> tuple[Expr, tuple]:
    """``body`` translated over ``params`` ((name, type) pairs) and the enclosing scope: (the
    body, reading each parameter as a placeholder column, and the placeholders' names)."""
    depth = _depth(ctx.scope)
    names = tuple(f"\u03bb{depth}:{p}" for p, _ in params)
    source = Source(_LAMBDA, {p: Col(name, t) for (p, t), name in zip(params, names)})
    scope = Scope(parent=ctx.scope)
    scope.add(source)
    inner = replace(ctx, scope=scope)
    return tr.expr(body, inner), names


#: The alias of a lambda's parameters in its scope.
_LAMBDA = "lambda parameters"


def _depth(scope: Scope | None) -> int:
    """How many lambdas enclose ``scope``: placeholders are named by it and by the parameter,
    so one lambda translated twice (a GROUP BY key and the select list) is one expression."""
    d = 0
    while scope is not None:
        d += any(s.alias == _LAMBDA for s in scope.sources)
        scope = scope.parent
    return d


def captures(tr, body: Expr, own: tuple) -> tuple[Expr, tuple, list[Expr]]:
    """``body`` with every column that is not one of ``own`` (outer columns) replaced by a
    placeholder: (the body, the placeholders' names, the outer columns in that order)."""
    outer = sorted({c for c in body.columns() if c not in own})
    cols = {c.name: c for c in body.walk() if isinstance(c, Col) and c.name in outer}
    prefix = own[0].split(":", 1)[0]
    names = tuple(f"{prefix}:captured {j}" for j in range(len(outer)))
    mapping = {c: Col(name, cols[c].type) for c, name in zip(outer, names)}
    return substitute(body, mapping), names, [cols[c] for c in outer]


#: The calls whose ``params`` start with a lambda's (body, parameter names, capture names).
LAMBDA_OPS = ("list_transform", "list_filter", "list_reduce")


def map_lambda(e: Func, f) -> Func:
    """The lambda call ``e`` with ``f`` applied to its list, its other arguments and its body,
    the body reading its outer expressions themselves (not placeholders) while ``f`` runs and
    its captures taken again after. So a rewrite of the enclosing query's expressions reaches
    inside lambdas: above an aggregation, ``length(kind)`` in a body is the GROUP BY key
    ``length(kind)`` (it was "kind must appear in GROUP BY")."""
    body, names, cap_names = e.params[:3]
    n = len(cap_names)
    whole = f(substitute(body, dict(zip(cap_names, e.args[1:1 + n]))))
    body, cap_names, captured = captures(None, whole, names)
    args = (f(e.args[0]), *captured, *(f(a) for a in e.args[1 + n:]))
    return Func(e.op, args, e.type, (body, names, cap_names, *e.params[3:]))


def _list(tr, node, ctx: Ctx, what: str) -> Expr:
    lst = tr.expr(node, ctx)
    if lst.type.kind == "null":
        raise UnsupportedError(f"{what} of an untyped NULL")
    if lst.type.kind != "list":
        raise PlanError(f"{what} needs a LIST, got {lst.type}")
    return lst


def transform(tr, lst: Expr, lam: exp.Lambda, ctx: Ctx, what: str = "LIST_TRANSFORM") -> Expr:
    params = _params(lam)
    if not 1 <= len(params) <= 2:
        raise PlanError(f"{what}'s lambda takes one or two parameters (the element, its position)")
    body, names = bind_body(tr, lam.this, list(zip(params, (lst.type.element, INT64))), ctx)
    body, cap_names, captured = captures(tr, body, names)
    t = list_of(body.type)
    return Func("list_transform", (lst, *captured), t, (body, names, cap_names, t))


def filter_(tr, lst: Expr, lam: exp.Lambda, ctx: Ctx, what: str = "LIST_FILTER") -> Expr:
    params = _params(lam)
    if not 1 <= len(params) <= 2:
        raise PlanError(f"{what}'s lambda takes one or two parameters (the element, its position)")
    body, names = bind_body(tr, lam.this, list(zip(params, (lst.type.element, INT64))), ctx)
    if body.type.is_numeric:  # DuckDB casts the body to BOOLEAN: a number is TRUE where not 0
        body = E.make_func("<>", [body, Lit(0, body.type) if body.type.is_integer else Lit(0.0, FLOAT64)])
    elif body.type != BOOL:
        body = cast_expr(body, BOOL)
    body, cap_names, captured = captures(tr, body, names)
    return Func("list_filter", (lst, *captured), lst.type, (body, names, cap_names, lst.type))


def _differs(u: LType, t: LType) -> bool:
    """Whether a value of type ``u`` must be cast to ``t`` (a DECIMAL's precision counts here:
    the types' equality leaves it out)."""
    return u != t or (u.kind == "decimal" and u.precision != t.precision)


def _cast_checked(e: Expr, t: LType) -> Expr:
    """CAST(e AS t), a DECIMAL's declared precision checked (DuckDB: "value is out of range")."""
    if t.kind == "decimal" and t.precision:
        return Func("cast", (e,), t, (t, t.precision))
    return cast_expr(e, t)


def reduce_(tr, lst: Expr, lam: exp.Lambda, initial: Expr | None, ctx: Ctx) -> Expr:
    params = _params(lam)
    if not 2 <= len(params) <= 3:
        raise PlanError("LIST_REDUCE's lambda takes two or three parameters (the accumulator, the element, its position)")
    elem = lst.type.element
    acc_t = initial.type if initial is not None else elem
    types = (acc_t, elem, INT64)
    body, names = bind_body(tr, lam.this, list(zip(params, types)), ctx)
    if _differs(body.type, acc_t):  # the accumulator takes the body's type (DuckDB: 1 + 2 + 0.5 is a
        acc_t = body.type            # DECIMAL; DECIMAL(4,1) + DECIMAL(4,1) a DECIMAL(5,1), each step's
        body, names = bind_body(tr, lam.this, list(zip(params, (acc_t, elem, INT64))), ctx)
        if _differs(body.type, acc_t):  # value cast to it: beyond its precision an error, as DuckDB)
            body = _cast_checked(body, acc_t)
    if acc_t.is_nested:
        raise UnsupportedError(f"LIST_REDUCE to a {acc_t} value")
    body, cap_names, captured = captures(tr, body, names)
    first_cast = cast_expr(Col(names[1], elem), acc_t) if _differs(elem, acc_t) else Col(names[1], elem)
    args = (lst, *captured) + ((cast_expr(initial, acc_t) if _differs(initial.type, acc_t) else initial,)
                               if initial is not None else ())
    return Func("list_reduce", args, acc_t, (body, names, cap_names, initial is not None, first_cast, acc_t))


def lambda_call(tr, n: exp.Anonymous, ctx: Ctx) -> Expr:
    """A lambda function called by name (``NAMED_CALLS``)."""
    name = str(n.this).lower()
    args = n.expressions
    what = name.upper()
    kind = LAMBDA_CALLS[name]
    if kind == "reduce":
        if len(args) not in (2, 3):
            raise PlanError(f"{what} takes a list, a lambda and an optional initial value")
        lst = _list(tr, args[0], ctx, what)
        initial = tr.expr(args[2], ctx) if len(args) == 3 else None
        return reduce_(tr, lst, _lambda(args[1], what), initial, ctx)
    if len(args) != 2:
        raise PlanError(f"{what} takes a list and a lambda")
    lst = _list(tr, args[0], ctx, what)
    lam = _lambda(args[1], what)
    return transform(tr, lst, lam, ctx, what) if kind == "transform" else filter_(tr, lst, lam, ctx, what)


def transform_class(tr, n: exp.Transform, ctx: Ctx) -> Expr:
    """``list_transform`` as sqlglot reads it."""
    return transform(tr, _list(tr, n.this, ctx, "LIST_TRANSFORM"), _lambda(n.expression, "LIST_TRANSFORM"), ctx)


def filter_class(tr, n: exp.ArrayFilter, ctx: Ctx) -> Expr:
    """``list_filter`` / ``array_filter`` / ``filter`` as sqlglot reads them."""
    return filter_(tr, _list(tr, n.this, ctx, "LIST_FILTER"), _lambda(n.expression, "LIST_FILTER"), ctx)


def comprehension(tr, n: exp.Comprehension, ctx: Ctx) -> Expr:
    """``[f(x) for x[, i] in l if c]``: the elements passing ``c``, then ``f`` of each (the
    position ``i`` counts in the list before the filter, as DuckDB)."""
    lst = _list(tr, n.args["iterator"], ctx, "a list comprehension")
    params = [n.expression] + ([n.args["position"]] if n.args.get("position") is not None else [])
    if not all(isinstance(p, exp.Identifier) for p in params):
        raise UnsupportedError("a list comprehension over a pattern of names")
    out = lst
    if n.args.get("condition") is not None:
        out = filter_(tr, out, exp.Lambda(this=n.args["condition"], expressions=params), ctx)
    got = transform(tr, out, exp.Lambda(this=n.this, expressions=params), ctx)
    if out is not lst and len(params) == 2 and got.params[1][1] in got.params[0].columns():
        # the value reads positions of the list before the condition dropped elements
        raise UnsupportedError("a list comprehension whose value reads the position, with a condition")
    return got
