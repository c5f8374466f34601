"""ASOF JOIN's condition: equalities between the sides (IS NOT DISTINCT FROM too), exactly
one inequality (>=, >, <=, <) whose nearest match each left row takes, and other conditions,
each given DuckDB's meaning (see :func:`asof_join`). DuckDB's rules: no inequality or two of
them is an error; ``USING (k, t)`` is ``k = k AND t >= t`` (the last column the inequality);
RIGHT / FULL take no condition beyond the keys and the inequality."""

from __future__ import annotations

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Expr, Func, Lit, and_all
from sluice.plan.joins import equi_pair
from sluice.plan.logical import AsofJoin, Filter, Join, JoinKind, PlanNode

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: Kinds of value an ASOF inequality orders (strings in byte order, as DuckDB orders them).
_ORDERED = ("int8", "int16", "int32", "int64", "float32", "float64", "decimal", "date", "timestamp",
            "timestamptz", "string")


def asof_join(left: PlanNode, right: PlanNode, kind: str, conds: list[Expr]) -> AsofJoin | Join:
    """The AsofJoin of ``left`` and ``right`` on the conjuncts ``conds``.

    A conjunct on the right side alone filters the right rows before the nearest one is
    chosen; one on the left side alone (or a constant) leaves the left rows failing it without
    a match; one reading both sides makes the nearest right row passing it the match (the
    join's residual) -- DuckDB's meanings, for inner, LEFT, SEMI and ANTI joins (it refuses
    them for RIGHT / FULL, as here)."""
    left_names, right_names = set(left.schema), set(right.schema)
    lk, rk, ineq, lfilter, rfilter, both, mixed = [], [], [], [], [], [], []
    for c in conds:
        pair = equi_pair(c, left_names, right_names)
        if pair is not None:
            if pair[0].type.kind == "decimal" and pair[0].type != pair[1].type:
                raise UnsupportedError(f"ASOF JOIN equality between {pair[0].type} and {pair[1].type}")
            lk.append(pair[0])
            rk.append(pair[1])
            continue
        same = _not_distinct(c, left_names, right_names)
        if same is not None:
            for a, b in same:
                lk.append(a)
                rk.append(b)
            continue
        side = _inequality(c, left_names, right_names)
        if side is not None:
            ineq.append(side)
            both.append(c)
            continue
        cols = c.columns()
        if isinstance(c, Lit) and c.value is True:
            continue
        if cols and cols <= right_names:
            rfilter.append(c)
        elif cols <= left_names:
            lfilter.append(c)
        elif kind in ("semi", "anti"):
            both.append(c)  # whether some right row passes: the nearest is not needed (below)
        elif kind in ("right", "full"):
            raise UnsupportedError(f"ASOF {kind.upper()} JOIN with a condition reading both sides ({c})")
        else:
            mixed.append(c)
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
    if len(both) > len(ineq):
        # ASOF SEMI / ANTI with a condition reading both sides: a left row is kept (dropped) when
        # some right row passes every condition -- nearest or not, one exists where the nearest
        # passing one does: a semi (anti) join with the rest as its residual, as DuckDB answers.
        return Join(left, right, JoinKind(kind), tuple(lk), tuple(rk), and_all(both + lfilter + rfilter))
    if (lfilter or rfilter) and kind in ("right", "full"):
        raise UnsupportedError(f"ASOF {kind.upper()} JOIN with a condition on one side ({(lfilter + rfilter)[0]})")
    if rfilter:
        right = Filter(right, and_all(rfilter))
    return AsofJoin(left, right, JoinKind(kind), tuple(lk), tuple(rk), lo, ro, op, and_all(lfilter), and_all(mixed))


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


def _not_distinct(c: Expr, left: set[str], right: set[str]) -> list[tuple[Expr, Expr]] | None:
    """``a IS NOT DISTINCT FROM b`` between the sides (the CASE the translator makes of it) as
    two equality keys that hold no NULL: ``a IS NULL = b IS NULL`` and ``coalesce(a, z) =
    coalesce(b, z)`` (z any value of the type): NULL then matches NULL, as DuckDB's ASOF does."""
    if not (isinstance(c, Func) and c.op == "case" and len(c.args) == 5):
        return None
    eq = c.args[4]
    if not (isinstance(eq, Func) and eq.op == "=" and isinstance(c.args[1], Lit) and c.args[1].value is True):
        return None
    pair = equi_pair(eq, left, right)
    if pair is None:
        return None
    a, b = pair
    if a.type.kind not in _ZEROS or b.type.kind not in _ZEROS:
        return None
    nulls = (E.make_func("is_null", [a]), E.make_func("is_null", [b]))
    return [nulls, (E.make_func("coalesce", [a, Lit(_ZEROS[a.type.kind], a.type)]),
                    E.make_func("coalesce", [b, Lit(_ZEROS[b.type.kind], b.type)]))]


#: A value of each key type (decimals as scaled integers, dates and timestamps as numbers).
_ZEROS = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "decimal": 0, "date": 0, "timestamp": 0, "string": "",
          "bool": False}
