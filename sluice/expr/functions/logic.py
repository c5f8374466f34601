"""AND, OR, NOT in SQL's three-valued logic (FALSE AND NULL is FALSE, TRUE OR NULL is TRUE),
and how much of a table their combination keeps (independent conjuncts multiply)."""

from __future__ import annotations

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.registry import register
from sluice.types import BOOL
from sluice.expr.nodes import Func, Lit


def as_boolean(x):
    """An operand of AND / OR / NOT as a boolean: an integer or decimal is ``x <> 0``, as DuckDB
    casts it (``u.a AND b``, ``NOT 3``); anything else must be a boolean already."""
    if x.type.is_integer or x.type.kind == "decimal":
        return Func("<>", (x, Lit(0, x.type)), BOOL)
    return x


def _bind_connective(op: str):
    def bind(args, params):
        args = [as_boolean(x) for x in args]
        for x in args:
            if x.type.kind != "bool":
                raise PlanError(f"{op.upper()} needs boolean operands, got {x.type} in {x}")
        return list(args), BOOL
    return bind


def _and_selectivity(e, est) -> float:
    s = 1.0
    for a in e.args:
        s *= est.of(a)
    return s


@register("and", bind=_bind_connective("and"), selectivity=_and_selectivity)
def and_(e, cols, chunk) -> Column:
    data = cols[0].data
    for c in cols[1:]:
        data = data & c.data
    if all(c.valid is None for c in cols):
        return Column(data, BOOL)
    # FALSE if any operand is a valid FALSE; else NULL if any operand is NULL; else TRUE.
    any_false = None
    all_valid = None
    for c in cols:
        f = ~c.data if c.valid is None else (c.valid & ~c.data)
        any_false = f if any_false is None else (any_false | f)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    valid = any_false | all_valid
    return Column(data & ~any_false if data.dim() else data, BOOL, valid)


@register("or", bind=_bind_connective("or"),
          selectivity=lambda e, est: min(1.0, sum(est.of(a) for a in e.args)))
def or_(e, cols, chunk) -> Column:
    if all(c.valid is None for c in cols):
        data = cols[0].data
        for c in cols[1:]:
            data = data | c.data
        return Column(data, BOOL)
    any_true = None
    all_valid = None
    for c in cols:
        t = c.data if c.valid is None else (c.valid & c.data)
        any_true = t if any_true is None else (any_true | t)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    return Column(any_true, BOOL, any_true | all_valid)


def _bind_not(args, params):
    args = [as_boolean(args[0])]
    if args[0].type.kind != "bool":
        raise PlanError(f"NOT needs a boolean operand, got {args[0].type}")
    return list(args), BOOL


@register("not", bind=_bind_not, selectivity=lambda e, est: max(0.05, 1.0 - est.of(e.args[0])))
def not_(e, args, chunk) -> Column:
    a, = args
    return Column(~a.data, a.type, a.valid)
