"""Aggregate functions: one registration each (:func:`aggregate_function`), so that the name an
:class:`~sluice.plan.logical.AggCall` carries finds, in one place, the accumulator that computes
it and what the planner needs to know of it -- not a chain of name tests in each layer.

A registration gives:

- ``state``: functions of one state over one argument share one accumulator (SUM and AVG keep
  one sum and count; COUNT(x) and COUNT(*) one count; the four variances one set of moments);
- ``accumulator``: the state's :class:`~sluice.exec.aggregates.Accumulator` for a function,
  its state-column prefix and argument type (MIN and MAX choose by the type);
- ``counts``: a count, so 0 over no rows where every other aggregate is NULL;
- ``rolls_up``: the aggregate that combines this one's results over finer groups into coarser
  ones (COUNT's are summed), None where results do not combine (the grouping-sets rewrite then
  aggregates the input once per set).

The binder (``sql/aggregation.py``) checks arguments; ``AggCall.type`` gives the result's type;
holistic aggregates (MEDIAN, QUANTILE_*, STRING_AGG, LIST, ...) are rewritten there into window
functions (``exec/window_functions.py``) and never reach an accumulator; DISTINCT is the
operator's (``exec/hash_aggregate.py`` deduplicates an argument before any accumulator sees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sluice.errors import InternalError
from sluice.exec.aggregates import (Accumulator, CountAcc, HyperLogLogAcc, MinMaxAcc, MomentsAcc, NestedPickAcc,
                                    ProductAcc, StringMinMaxAcc, SumAcc)
from sluice.types import LType


@dataclass(frozen=True)
class AggregateFunction:
    """One aggregate function's registration (see the module docstring)."""

    state: str
    accumulator: Callable[[str, str, LType | None], Accumulator]
    counts: bool = False
    rolls_up: str | None = None


#: Every aggregate function by name: its one registration.
AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = {}


def aggregate_function(*names: str, state: str | None = None, counts: bool = False, rolls_up: str | None = None):
    """Register the decorated accumulator factory ``(prefix, func, arg_type) -> Accumulator``
    for ``names``, which share ``state`` (default: the first name)."""
    def register(make: Callable[[str, str, LType | None], Accumulator]):
        for name in names:
            AGGREGATE_FUNCTIONS[name] = AggregateFunction(state or names[0], make, counts, rolls_up)
        return make
    return register


def registered(func: str) -> AggregateFunction:
    """``func``'s registration; a name with none is the planner's bug, not the user's."""
    fn = AGGREGATE_FUNCTIONS.get(func)
    if fn is None:
        raise InternalError(f"aggregate function {func} has no accumulator")
    return fn


def make_accumulator(prefix: str, func: str, arg_type: LType | None) -> Accumulator:
    """The accumulator of ``func`` over an argument of ``arg_type`` (None: COUNT(*))."""
    return registered(func).accumulator(prefix, func, arg_type)


@aggregate_function("count", "count_star", counts=True, rolls_up="sum")
def _count(prefix, func, arg_type):
    return CountAcc(prefix, arg_type)


@aggregate_function("sum", rolls_up="sum")
@aggregate_function("avg", state="sum")
def _sum(prefix, func, arg_type):
    return SumAcc(prefix, arg_type)


@aggregate_function("product")
def _product(prefix, func, arg_type):
    return ProductAcc(prefix, arg_type)


@aggregate_function("min", rolls_up="min")
@aggregate_function("max", rolls_up="max")
def _extreme(prefix, func, arg_type):
    if arg_type.is_nested:
        return NestedPickAcc(prefix, arg_type)
    if arg_type.kind == "string":
        return StringMinMaxAcc(prefix, arg_type, func)
    return MinMaxAcc(prefix, arg_type, func)


@aggregate_function("var_samp", "var_pop", "stddev_samp", "stddev_pop", state="moments")
def _moments(prefix, func, arg_type):
    return MomentsAcc(prefix, arg_type)


@aggregate_function("approx_count_distinct", counts=True)
def _approx_count_distinct(prefix, func, arg_type):
    return HyperLogLogAcc(prefix, arg_type)
