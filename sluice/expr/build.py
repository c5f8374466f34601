"""Expressions as the plan builds them: each function's definition checks its argument types,
may insert casts and gives the result type (:mod:`sluice.expr.functions`), and a function
of constants is evaluated at once (:mod:`sluice.expr.evaluate`), so the plan holds the
constant. The node types and the helpers that need no function are :mod:`sluice.expr.nodes`,
re-exported here so that translation and rules import one module.
"""

from __future__ import annotations

from sluice.errors import ExecutionError, PlanError
from sluice.expr.evaluate import evaluate_constant
from sluice.expr.functions import lookup
from sluice.expr.functions.cast import coerce  # noqa: F401 - a constructor too
from sluice.types import BOOL, DATE, FLOAT64, INT64, STRING, TIMESTAMP, check_state_cast
from sluice.expr.nodes import *  # noqa: F401,F403 - the node types beside their constructors
from sluice.expr.nodes import Expr, Func, Lit, settle_literals


def _fold(e: Func) -> Expr:
    """Evaluate a function of constants now, so the plan holds the constant. One that raises
    (``1 // 0``, ``CAST('abc' AS INTEGER)``) stays as it is, to raise only if a row needs it:
    under a CASE branch, a COALESCE argument or an AND / OR no row reaches, DuckDB answers
    (``CASE WHEN false THEN 1 // 0 ELSE 1 END`` is 1), and evaluation guards those arguments
    (:mod:`sluice.expr.evaluate`). A nested value is no constant of the plan (a Lit holds
    scalars): [1, 2] stays a call."""
    if all(isinstance(a, Lit) for a in e.args) and e.op not in ("random",) \
            and not e.type.is_nested and not any(a.type.is_nested for a in e.args):
        try:
            return evaluate_constant(e)
        except ExecutionError:
            return e
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
    return _move_constant(make_func(op, [a, b]))


_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}


def _move_constant(e: Expr) -> Expr:
    """``x + c1 op c2`` as ``x op c2 - c1`` (and ``c1 + x``, ``x - c1``, ``c1 - x``) over one
    integer type, where ``c2 - c1`` is a value of it -- DuckDB's optimizer moves the constant so
    (MoveConstantsRule), and ``i8 + 1 > 0`` is no overflow there at 127: the same rows, and the
    same (absent) error. Not under a cast (``i8 + 1 > 1000`` compares INTEGERs) nor for BETWEEN
    and IN, which DuckDB leaves alone too."""
    if not (isinstance(e, Func) and e.op in _FLIP and len(e.args) == 2):
        return e
    op, (a, b) = e.op, e.args
    if isinstance(a, Lit):
        a, b, op = b, a, _FLIP[op]
    if not (isinstance(b, Lit) and b.value is not None and b.type.is_integer and isinstance(a, Func)
            and a.op in ("+", "-") and a.type == b.type and len(a.args) == 2):
        return e
    x, c1 = a.args
    if isinstance(x, Lit) == isinstance(c1, Lit) or any(v.type != b.type for v in a.args):
        return e
    if a.op == "+":
        if isinstance(x, Lit):
            x, c1 = c1, x
        if c1.value is None:
            return e
        v = b.value - c1.value
    elif isinstance(c1, Lit):  # x - c1 op c2: x op c2 + c1
        if c1.value is None:
            return e
        v = b.value + c1.value
    else:  # c1 - x op c2: x flip(op) c1 - c2
        x, c1 = c1, x
        if c1.value is None:
            return e
        v, op = c1.value - b.value, _FLIP[op]
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[b.type.kind]
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        return e
    return _move_constant(make_func(op, [x, Lit(v, b.type)]))


def make_bool(op: str, args: list[Expr]) -> Expr:
    if len(args) == 1:
        lookup(op).bind(list(args), ())  # checks the operand's type
        return args[0]
    return make_func(op, args)


def make_not(a: Expr) -> Expr:
    return make_func("not", [a])


def make_func(op: str, args: list[Expr], params: tuple = ()) -> Expr:
    """The function ``op`` of ``args``: its definition (:mod:`sluice.expr.functions`) checks the
    types, may insert implicit casts and gives the result type; constants are folded. Where
    the arguments meet at one type, integer literals among them first take the others' integer
    type when they fit it (``i8 + 1`` is a TINYINT: :func:`sluice.expr.nodes.settle_literals`)."""
    fn = lookup(op)
    if op in ("cast", "try_cast") and args:
        check_state_cast(args[0].type, params[0])
    if fn.operands:
        args = settle_literals(list(args))
    args, t = _bind_untyped_nulls(fn, list(args), params)
    return _fold(Func(op, tuple(args), t, params))


#: Functions whose binding takes a NULL of no type as it is (it takes the other branches' type,
#: is a NULL string, is cast, or is only tested for NULL).
_NULL_AWARE = frozenset(("case", "coalesce", "cast", "try_cast", "cast_null", "concat", "is_null",
                         "is_not_null", "single_row", "list_value", "list_has_any", "list_has_all"))
#: The types a NULL of no type is tried at, after those of the function's other arguments.
_NULL_CANDIDATES = (STRING, BOOL, INT64, FLOAT64, DATE, TIMESTAMP)


def _bind_untyped_nulls(fn, args: list[Expr], params: tuple):
    """``fn.bind`` where arguments of DuckDB's NULL type (a bare ``NULL``, or what only a NULL
    typed) take the type of a parameter that accepts them, as DuckDB's binder lets NULL match
    any parameter: the types of the other arguments first (``NULL = s`` compares strings,
    ``NULL + 1`` adds INTEGERs), then strings (``length(NULL)``), booleans (``NOT NULL``),
    numbers and dates. The result is NULL whatever the type; the type is the result's."""
    nulls = [i for i, a in enumerate(args) if a.type.kind == "null"]
    # the nested functions place a NULL themselves (list_contains(l, NULL): at the element type)
    if not nulls or fn.name in _NULL_AWARE or any(a.type.is_nested for a in args):
        return fn.bind(args, params)
    others = [a.type for a in args if a.type.kind not in ("null",)]
    first = None
    for t in dict.fromkeys(others + list(_NULL_CANDIDATES)):
        typed = [coerce(a, t) if i in nulls else a for i, a in enumerate(args)]
        try:
            return fn.bind(typed, params)
        except PlanError as e:
            first = first or e
    raise first
