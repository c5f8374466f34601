"""Row values in comparisons: ``(a, b) = (c, d)``, ``(a, b) < (c, d)``, ``(a, b) IN ((1, 2),
...)``, as DuckDB compares them -- as STRUCTs, field by field in order, where a NULL field is a
value (equal to NULL, after every other value, as ORDER BY's NULLS LAST) and the result is
never NULL: ``(1, NULL) = (1, NULL)`` is true, ``(1, 2) > (1, NULL)`` false. Written with the
scalar comparisons, so every type they take works here too."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Expr, Lit
from sluice.sql.literals import _coerce_compare
from sluice.types import BOOL


def _unparen(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def is_row(node) -> bool:
    return isinstance(_unparen(node), exp.Tuple)


def _fields(tr, node, ctx) -> list[Expr] | None:
    """The fields of a row value, or None for a NULL (a whole row that is NULL)."""
    node = _unparen(node)
    if isinstance(node, exp.Tuple):
        return [tr.expr(x, ctx) for x in node.expressions]
    if isinstance(node, exp.Null):
        return None
    raise UnsupportedError("a row value (a, b, ...) compared with something other than a row value")


def _same(x: Expr, y: Expr) -> Expr:
    """x IS NOT DISTINCT FROM y."""
    return E.make_func("case", [
        E.make_bool("and", [E.make_func("is_null", [x]), E.make_func("is_null", [y])]), Lit(True, BOOL),
        E.make_bool("or", [E.make_func("is_null", [x]), E.make_func("is_null", [y])]), Lit(False, BOOL),
        E.make_compare("=", x, y)])


def _before(x: Expr, y: Expr) -> Expr:
    """x sorts before y, NULLs last."""
    return E.make_func("case", [E.make_func("is_null", [x]), Lit(False, BOOL),
                                E.make_func("is_null", [y]), Lit(True, BOOL),
                                E.make_compare("<", x, y)])


def _pairs(a: list[Expr], b: list[Expr]) -> list[tuple[Expr, Expr]]:
    if len(a) != len(b):
        raise PlanError(f"row values of {len(a)} and {len(b)} fields cannot be compared")
    return [_coerce_compare(x, y) for x, y in zip(a, b)]


def row_equal(a: list[Expr], b: list[Expr]) -> Expr:
    return E.make_bool("and", [_same(x, y) for x, y in _pairs(a, b)])


def row_less(a: list[Expr], b: list[Expr]) -> Expr:
    """a < b, field by field: the first field that differs decides."""
    pairs = _pairs(a, b)
    terms = []
    for i, (x, y) in enumerate(pairs):
        terms.append(E.make_bool("and", [_same(p, q) for p, q in pairs[:i]] + [_before(x, y)]))
    return E.make_bool("or", terms)


def row_compare(tr, op: str, a_node, b_node, ctx) -> Expr:
    a, b = _fields(tr, a_node, ctx), _fields(tr, b_node, ctx)
    if a is None or b is None:
        return Lit(None, BOOL)
    if op == "=":
        return row_equal(a, b)
    if op == "<>":
        return E.make_not(row_equal(a, b))
    if op in (">", ">="):
        a, b, op = b, a, {">": "<", ">=": "<="}[op]
    less = row_less(a, b)
    return less if op == "<" else E.make_bool("or", [less, row_equal(a, b)])


def row_in(tr, n: exp.In, ctx) -> Expr:
    """(a, b) IN ((1, 2), (3, 4)): one of the rows equal, as DuckDB's STRUCT equality."""
    if n.args.get("query") is not None:
        raise UnsupportedError("a row value (a, b, ...) IN (subquery)")
    a = _fields(tr, n.this, ctx)
    if a is None:
        return Lit(None, BOOL)
    terms = []
    for v in n.expressions:
        b = _fields(tr, v, ctx)
        terms.append(Lit(None, BOOL) if b is None else row_equal(a, b))
    return E.make_bool("or", terms)
