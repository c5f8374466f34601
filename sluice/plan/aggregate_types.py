"""Each aggregate function's result type from its argument's type, one rule per name: what
``AggCall.type`` (and a window aggregate's ``WindowCall.type``) reads, instead of a chain of
name tests in the plan's nodes.

It lives in the plan layer because plan nodes type themselves and may not import ``exec/``.
``exec/aggregate_functions.py`` registers each function's accumulator under the same name and
refuses a registration whose name has no rule here; ``tests/unit/test_aggregate_registry.py``
checks that the two name sets are the same.
"""

from __future__ import annotations

from typing import Callable

from sluice.errors import InternalError
from sluice.types import FLOAT64, INT64, LType


def _bigint(arg: LType | None) -> LType:
    return INT64


def _double(arg: LType | None) -> LType:
    return FLOAT64


def _same(arg: LType | None) -> LType:
    assert arg is not None
    return arg


def _sum(arg: LType | None) -> LType:
    """DuckDB's SUM: integers and booleans into BIGINT (overflow raises), REAL and DOUBLE into
    DOUBLE, DECIMAL(p, s) into DECIMAL(38, s) (a precision of its own)."""
    assert arg is not None
    if arg.is_integer or arg.kind == "bool":
        return INT64
    if arg.is_float:
        return FLOAT64
    if arg.kind == "decimal":
        return LType("decimal", arg.scale)
    return arg


#: Every aggregate function's result type from its argument's type (None: COUNT(*)).
RESULT_TYPES: dict[str, Callable[[LType | None], LType]] = {
    "count": _bigint, "count_star": _bigint, "approx_count_distinct": _bigint,
    "sum": _sum, "min": _same, "max": _same,
    "avg": _double, "product": _double,
    "var_samp": _double, "var_pop": _double, "stddev_samp": _double, "stddev_pop": _double, "skewness": _double,
    "bit_and": _same, "bit_or": _same, "bit_xor": _same, "decimal_average": _same,
}


def result_type(func: str, arg: LType | None) -> LType:
    """``func``'s result over an argument of type ``arg``; a name with no rule is the planner's
    bug (the binder only makes registered aggregates), not the user's."""
    rule = RESULT_TYPES.get(func)
    if rule is None:
        raise InternalError(f"aggregate function {func} has no result type")
    return rule(arg)
