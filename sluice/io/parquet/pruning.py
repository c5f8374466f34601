"""Row-group pruning: drop row groups whose min/max statistics rule out a pushed predicate.

Only conjuncts of the form ``column op constant`` (and IN lists) are used; anything else
keeps the row group.

Floats: NaN is greater than every number in SQL's order (DuckDB's, PostgreSQL's), but Parquet
writers leave NaN out of min/max. So ``x > c`` and ``x >= c`` cannot be ruled out by a float
column's max (a NaN may hide above it), a NaN constant rules out nothing, and statistics that
hold a NaN are not used.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from sluice.catalog import RowGroup
from sluice.expr import nodes as N
from sluice.expr.nodes import Col, Expr, Func, Lit
from sluice.kernels.values import decimal_to_float

_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}


def _bounds(c: Expr, columns: dict[str, str]):
    """(file column, op, value in the column's representation, the conversion the query applies
    to the column's values -- to its statistics too -- or None) or None."""
    if not isinstance(c, Func) or c.op not in _FLIP:
        return None
    a, b = c.args
    op = c.op
    if isinstance(a, Lit) and isinstance(b, Col):
        a, b, op = b, a, _FLIP[op]
    if not (isinstance(a, Col) and isinstance(b, Lit)) or b.value is None or a.name not in columns:
        return None
    ta, tb = a.type, b.type
    v = b.value
    if ta.kind == "decimal":
        if tb.kind == "decimal":
            if tb.scale > ta.scale:
                return None
            v = v * 10 ** (ta.scale - tb.scale)
        elif tb.is_integer:
            v = v * 10 ** ta.scale
        else:
            return None
    elif ta.kind == "date" and tb.kind != "date":
        return None
    elif ta.kind == "string" and tb.kind != "string":
        return None
    elif ta.is_numeric and not tb.is_numeric:
        return None
    conv = None
    if tb.kind == "decimal" and ta.kind != "decimal":
        # an integer column meets the decimal exactly (a float quotient could round past a
        # statistic); a float column meets it as a float
        v = Fraction(v, 10 ** tb.scale) if ta.is_integer else decimal_to_float(v, tb.scale)
    elif ta.is_integer and tb.is_float:
        # the query compares the column converted to the constant's float type: so do the
        # statistics (2**53 + 1 as a double is 2**53: exact integer bounds would rule it out)
        conv = _to_float32 if tb.kind == "float32" else float
    if isinstance(v, float) and math.isnan(v):
        return None
    if ta.is_float and op in (">", ">="):
        return None
    return columns[a.name], op, v, conv


def _to_float32(x) -> float:
    return float(np.float32(x))


def _may_match(rg: RowGroup, col: str, op: str, v, conv=None) -> bool:
    st = rg.stats.get(col)
    if st is None or st[0] is None or st[1] is None:
        return True
    lo, hi = st
    if conv is not None:  # (rounding is monotonic: converted bounds still bound the converted values)
        try:
            lo, hi = conv(lo), conv(hi)
        except (TypeError, ValueError, OverflowError):
            return True
    if (isinstance(lo, float) and math.isnan(lo)) or (isinstance(hi, float) and math.isnan(hi)):
        return True
    try:
        if op == "=":
            return lo <= v <= hi
        if op == "<":
            return lo < v
        if op == "<=":
            return lo <= v
        if op == ">":
            return hi > v
        if op == ">=":
            return hi >= v
    except TypeError:
        return True
    return True


def prune_row_groups(groups: list[RowGroup], predicate: Expr | None, columns: dict[str, str]) -> list[RowGroup]:
    if predicate is None:
        return groups
    tests = [b for b in (_bounds(c, columns) for c in N.conjuncts(predicate)) if b is not None]
    if not tests:
        return groups
    return [rg for rg in groups if all(_may_match(rg, *t) for t in tests)]
