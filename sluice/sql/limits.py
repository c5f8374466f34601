"""LIMIT / OFFSET values as DuckDB reads them: a number, or an expression of constants folded to
one (``2 - 1``, ``2.6::DOUBLE``, ``NULL``: no limit), or a scalar subquery of one constant
(``(SELECT 3)``). DuckDB rounds a DECIMAL half away from zero and a DOUBLE -- and any
subquery's value -- half to even, refuses a negative count after rounding, and caps a
subquery's at 2**62. What needs a table (a subquery over one, ``nextval``, ``random()``) is
refused in one line: the plan's LIMIT is a number of rows fixed before the query runs."""

from __future__ import annotations

import decimal as _dec
import math

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import Lit

#: DuckDB's largest LIMIT / OFFSET from a subquery.
SUBQUERY_MAX = 2 ** 62


def limit_value(tr, node, ctx) -> int | None:
    """The count of a LIMIT or OFFSET clause ``node`` (None: no limit)."""
    if node is None:
        return None
    e = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(e, exp.Literal) and not e.is_string:
        try:
            v = _dec.Decimal(e.this)
        except _dec.InvalidOperation:
            raise PlanError(f"LIMIT/OFFSET {e.this} is not a number") from None
        if "e" in e.this.lower():  # 1e3 is a DOUBLE: rounded half to even
            if not v.is_finite() or abs(v) >= 2 ** 63:
                raise PlanError(f"LIMIT/OFFSET {e.this} is out of range")
            return _count(int(v.to_integral_value(rounding=_dec.ROUND_HALF_EVEN)))
        n = int(v.to_integral_value(rounding=_dec.ROUND_HALF_UP))
        if n >= 2 ** 63:
            raise PlanError(f"LIMIT/OFFSET {e.this} is out of range (beyond BIGINT)")
        return _count(n)
    sub = _constant_subquery(e)
    v = tr.expr(sub if sub is not None else e, ctx)
    if not isinstance(v, Lit):
        raise UnsupportedError("LIMIT/OFFSET must be numeric constants (not an expression that needs a table)")
    if v.value is None:
        return None
    t = v.type
    if t.kind == "bool" or t.is_integer:
        n = int(v.value)
    elif t.kind == "decimal" and sub is None:
        n = int(_dec.Decimal(int(v.value)).scaleb(-t.scale).to_integral_value(rounding=_dec.ROUND_HALF_UP))
    elif t.kind == "decimal" or t.is_float:
        f = int(v.value) / 10 ** t.scale if t.kind == "decimal" else float(v.value)
        if not math.isfinite(f) or abs(f) >= 2 ** 63:
            raise PlanError(f"LIMIT/OFFSET {f} is out of range")
        n = round(f)  # half to even, as DuckDB's cast of a DOUBLE
    else:
        raise UnsupportedError(f"LIMIT/OFFSET of a {t} value")
    if sub is not None and n > SUBQUERY_MAX:
        raise PlanError(f"Max value {n} for LIMIT/OFFSET is {SUBQUERY_MAX}")
    return _count(n)


def _count(n: int) -> int:
    if n < 0:
        raise PlanError("LIMIT/OFFSET cannot be negative")
    return n


def _constant_subquery(e) -> exp.Expression | None:
    """The one expression of ``(SELECT x)`` -- no FROM, WHERE or anything else -- or None."""
    if not isinstance(e, exp.Subquery) or not isinstance(e.this, exp.Select):
        return None
    sel = e.this
    if len(sel.expressions) != 1 or any(sel.args.get(k) for k in sel.args if k != "expressions"):
        return None
    x = sel.expressions[0]
    return x.this if isinstance(x, exp.Alias) else x
