"""``SUM(x + c)`` for a constant ``c`` is ``SUM(x) + c * COUNT(x)`` (and ``SUM(x - c)`` the same
with ``-``): computed once per column instead of once per constant, as DuckDB's sum rewriter
does. ClickBench q29 sums ``ResolutionWidth + 1`` ... ``+ 89``: 90 sums over 10 M rows became
one SUM and one COUNT.

Integers only (column and constant): the two are then exactly equal, NULLs included (every
``x`` NULL gives NULL either way) -- a float's sum would round differently. Where ``x + c`` may
overflow its type (``i16 + 1`` is a SMALLINT, as DuckDB types an integer literal: ClickBench's
``ResolutionWidth + 89``) the original raises for a row past the end, so the rewrite raises too:
it also takes ``max(x)`` (``min(x)`` for a negative offset), and each sum is ``s + c * n`` only
after ``max(x) + c`` is computed in ``x``'s type -- which overflows exactly when some row's
``x + c`` does (NULL exactly when every ``x`` is NULL, and the sum with it). Not for DISTINCT,
and only where a column carries two or more offsets.

>>> # Aggregate[s1 := sum(x + 1), s2 := sum(x + 2)]      (x an INTEGER, x + 1 a BIGINT: no check)
>>> #   -> Project[s1 := s + 1 * n, s2 := s + 2 * n](Aggregate[s := sum(x), n := count(x)])
>>> # (x a SMALLINT: s1 := CASE WHEN (hi + 1) IS NULL THEN NULL ELSE s + 1 * n END, hi := max(x))
"""

from __future__ import annotations

from sluice.expr.build import make_func
from sluice.expr.nodes import Col, Expr, Func, Lit
from sluice.plan.logical import Aggregate, AggCall, PlanNode, Project
from sluice.types import INT64


def sum_offsets(plan: PlanNode) -> PlanNode:
    children = [sum_offsets(c) for c in plan.children]
    if children:
        plan = plan.reconstruct(children)
    if not isinstance(plan, Aggregate):
        return plan
    split = {name: _offset(call) for name, call in plan.aggs}
    by_arg: dict[Expr, list[str]] = {}
    for name, s in split.items():
        if s is not None:
            by_arg.setdefault(s[0], []).append(name)
    # Only where a column carries two or more offsets: one SUM(x + c) alone gains nothing.
    wanted = {x for x, names in by_arg.items() if len(names) > 1}
    if not wanted:
        return plan
    aggs: list[tuple[str, AggCall]] = []
    parts: dict[Expr, dict[str, str]] = {}
    for name, call in plan.aggs:
        s = split[name]
        if s is None or s[0] not in wanted:
            aggs.append((name, call))
            continue
        x, d, checked = s
        if x not in parts:
            parts[x] = {"sum": f"{name} \u2211sum", "count": f"{name} \u2211count"}  # names no SQL text makes
            aggs.append((parts[x]["sum"], AggCall("sum", x)))
            aggs.append((parts[x]["count"], AggCall("count", x)))
        bound = "max" if d > 0 else "min"
        if checked and bound not in parts[x]:
            parts[x][bound] = f"{name} \u2211{bound}"
            aggs.append((parts[x][bound], AggCall(bound, x)))
    out: list[tuple[str, Expr]] = [(n, Col(n, e.type)) for n, e in plan.keys]
    for name, call in plan.aggs:
        s = split[name]
        if s is None or s[0] not in wanted:
            out.append((name, Col(name, call.type)))
            continue
        x, d, checked = s
        scaled = make_func("*", [Lit(d, INT64), Col(parts[x]["count"], INT64)])
        value = make_func("+", [Col(parts[x]["sum"], INT64), scaled])
        if checked:  # x's extreme plus d in x's type: raises where a row's x + d would
            edge = make_func("+", [Col(parts[x]["max" if d > 0 else "min"], x.type), Lit(d, x.type)])
            value = make_func("case", [make_func("is_null", [edge]), Lit(None, INT64), value])
        out.append((name, value))
    return Project(Aggregate(plan.child, plan.keys, tuple(aggs)), tuple(out))


def _offset(call: AggCall) -> tuple[Expr, int, bool] | None:
    """(x, d, checked) of SUM(x + c) / SUM(c + x) (d = c) and SUM(x - c) (d = -c) over
    integers, ``checked`` where ``x + d`` may pass ``x``'s type (None otherwise)."""
    if call.func != "sum" or call.distinct or not isinstance(call.arg, Func):
        return None
    e = call.arg
    if e.op not in ("+", "-") or len(e.args) != 2 or not e.type.is_integer:
        return None
    a, b = e.args
    if e.op == "+" and isinstance(a, Lit):
        a, b = b, a
    if not (isinstance(b, Lit) and b.type.is_integer and b.value is not None) or isinstance(a, Lit):
        return None
    d = b.value if e.op == "+" else -b.value
    if not a.type.is_integer:
        return None
    if _max(a.type) + abs(d) <= _max(e.type):
        return a, d, False
    if e.type != a.type or a.type.kind == "int64" or abs(d) > _max(a.type):
        # (a BIGINT's sum may pass 64 bits, and then it is only output: s + c * n could not be
        # computed; x - c for c the type's least value: -c is no value of it)
        return None
    return a, d, d != 0


def _max(t) -> int:
    return (1 << ({"int8": 8, "int16": 16, "int32": 32, "int64": 64}[t.kind] - 1)) - 1
