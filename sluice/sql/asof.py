"""ASOF JOIN's condition: equalities between the sides, and exactly one inequality (>=, >,
<=, <) whose nearest match each left row takes. DuckDB's rules: no inequality or two of them
is an error; ``USING (k, t)`` is ``k = k AND t >= t`` (the last column the inequality). Any
other conjunct -- IS NOT DISTINCT FROM, <>, a condition on one side -- is refused here rather
than guessed at: DuckDB gives such conditions meanings of its own."""

from __future__ import annotations

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import Expr, Func
from sluice.plan.joins import equi_pair
from sluice.plan.logical import AsofJoin, JoinKind, PlanNode

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: Kinds of value an ASOF inequality orders (strings and booleans are not among them here).
_ORDERED = ("int8", "int16", "int32", "int64", "float32", "float64", "decimal", "date", "timestamp",
            "timestamptz")


def asof_join(left: PlanNode, right: PlanNode, kind: str, conds: list[Expr]) -> AsofJoin:
    """The AsofJoin of ``left`` and ``right`` on the conjuncts ``conds``."""
    left_names, right_names = set(left.schema), set(right.schema)
    lk, rk, ineq = [], [], []
    for c in conds:
        pair = equi_pair(c, left_names, right_names)
        if pair is not None:
            if pair[0].type.kind == "decimal" and pair[0].type != pair[1].type:
                raise UnsupportedError(f"ASOF JOIN equality between {pair[0].type} and {pair[1].type}")
            lk.append(pair[0])
            rk.append(pair[1])
            continue
        side = _inequality(c, left_names, right_names)
        if side is None:
            raise UnsupportedError(f"ASOF JOIN condition {c} (only equalities between the sides and one "
                                   "inequality >=, >, <=, <)")
        ineq.append(side)
    if not ineq:
        raise PlanError("ASOF JOIN needs an inequality (>=, >, <=, <) between the sides")
    if len(ineq) > 1:
        raise PlanError("ASOF JOIN takes one inequality between the sides, not several")
    lo, op, ro = ineq[0]
    # Numbers of different types are ordered in their common type (decimal scales aligned: a
    # value that leaves 64 bits there is an error, never a wrong order), as DuckDB compares them.
    if lo.type.kind not in _ORDERED or ro.type.kind not in _ORDERED or (lo.type != ro.type and not (
            lo.type.is_numeric and ro.type.is_numeric)):
        raise UnsupportedError(f"ASOF JOIN inequality between {lo.type} and {ro.type}")
    return AsofJoin(left, right, JoinKind(kind), tuple(lk), tuple(rk), lo, ro, op)


def _inequality(c: Expr, left: set[str], right: set[str]) -> tuple[Expr, str, Expr] | None:
    """(left expr, op, right expr) where ``c`` compares one side with the other."""
    if not (isinstance(c, Func) and c.op in _FLIP and len(c.args) == 2):
        return None
    a, b = c.args
    ca, cb = a.columns(), b.columns()
    if not ca or not cb:
        return None
    if ca <= left and cb <= right:
        return a, c.op, b
    if ca <= right and cb <= left:
        return b, _FLIP[c.op], a
    return None
