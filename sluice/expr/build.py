"""Expressions as the plan builds them: each function's definition checks its argument types,
may insert casts and gives the result type (:mod:`sluice.expr.functions`), and a function
of constants is evaluated at once (:mod:`sluice.expr.evaluate`), so the plan holds the
constant. The node types and the helpers that need no function are :mod:`sluice.expr.nodes`,
re-exported here so that translation and rules import one module.
"""

from __future__ import annotations

from sluice.expr.evaluate import evaluate_constant
from sluice.expr.functions import lookup
from sluice.expr.functions.cast import coerce  # noqa: F401 - a constructor too
from sluice.expr.nodes import *  # noqa: F401,F403 - the node types beside their constructors
from sluice.expr.nodes import Expr, Func, Lit


def _fold(e: Func) -> Expr:
    """Evaluate a function of constants now, so the plan holds the constant."""
    if all(isinstance(a, Lit) for a in e.args) and e.op not in ("random",):
        return evaluate_constant(e)
    return e


def fold_constants(e: Expr) -> Expr:
    """``e`` with every function of constants evaluated (bottom up); a function that raises on
    its constants stays as it is, to raise only if a row ever needs it."""
    if not isinstance(e, Func):
        return e
    out = Func(e.op, tuple(fold_constants(a) for a in e.args), e.type, e.params)
    try:
        return _fold(out)
    except Exception:  # noqa: BLE001 -- e.g. a division by zero no row may reach
        return out


def make_arith(op: str, a: Expr, b: Expr) -> Expr:
    return make_func(op, [a, b])


def make_compare(op: str, a: Expr, b: Expr) -> Expr:
    return make_func(op, [a, b])


def make_bool(op: str, args: list[Expr]) -> Expr:
    if len(args) == 1:
        lookup(op).bind(list(args), ())  # checks the operand's type
        return args[0]
    return make_func(op, args)


def make_not(a: Expr) -> Expr:
    return make_func("not", [a])


def make_func(op: str, args: list[Expr], params: tuple = ()) -> Expr:
    """The function ``op`` of ``args``: its definition (:mod:`sluice.expr.functions`) checks the
    types, may insert implicit casts and gives the result type; constants are folded."""
    args, t = lookup(op).bind(list(args), params)
    return _fold(Func(op, tuple(args), t, params))
