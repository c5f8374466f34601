"""Aggregate functions: one registration each (:func:`aggregate_function`), so that the name an
:class:`~sluice.plan.logical.AggCall` carries finds, in one place, the accumulator that computes
it and what the planner needs to know of it -- not a chain of name tests in each layer.

A registration gives:

- ``state``: functions of one state over one argument share one accumulator (SUM and AVG keep
  one sum and count; COUNT(x) and COUNT(*) one count; the four variances one set of moments);
- ``accumulator``: the state's :class:`~sluice.exec.aggregates.Accumulator` for its
  state-column prefix and argument type (MIN and MAX choose by the type);
- ``result``: the function's result from the state (AVG divides the sum's state by its count;
  the variances differ in divisor and root);
- ``numeric``: the binder takes numbers (and booleans) only;
- ``counts``: a count, so 0 over no rows where every other aggregate is NULL;
- ``rolls_up``: the aggregate that combines this one's results over finer groups into coarser
  ones (COUNT's are summed), None where results do not combine (the grouping-sets rewrite then
  aggregates the input once per set).

The binder (``sql/aggregation.py``) checks arguments (with ``numeric``); the result's type is the
plan's (``plan/aggregate_types.py``: ``AggCall.type`` reads it, and a name registered here needs a rule there);
holistic aggregates (MEDIAN, QUANTILE_*, STRING_AGG, LIST, ...) are rewritten there into window
functions (``exec/window_functions.py``) and never reach an accumulator; DISTINCT is the
operator's (``exec/hash_aggregate.py`` deduplicates an argument before any accumulator sees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sluice.chunk import Column
from sluice.errors import InternalError
from sluice.exec.aggregates import (Accumulator, CountAcc, HyperLogLogAcc, MinMaxAcc, MomentsAcc, NestedPickAcc,
                                    ProductAcc, SkewnessAcc, StringMinMaxAcc, SumAcc)
from sluice.exec.bit_aggregates import BitStringAcc, BitwiseAcc
from sluice.exec.decimal_average import decimal_average
from sluice.plan.aggregate_types import RESULT_TYPES
from sluice.types import LType, is_bit


@dataclass(frozen=True)
class AggregateFunction:
    """One aggregate function's registration (see the module docstring)."""

    state: str
    accumulator: Callable[[str, LType | None], Accumulator]
    result: Callable[[Accumulator, dict[str, Column], LType], Column]
    counts: bool = False
    rolls_up: str | None = None
    numeric: bool = False


#: Every aggregate function by name: its one registration.
AGGREGATE_FUNCTIONS: dict[str, AggregateFunction] = {}


def _finalize(acc: Accumulator, state: dict[str, Column], out_type: LType) -> Column:
    return acc.finalize(state, out_type)


def aggregate_function(name: str, state: str | None = None, result=_finalize, counts: bool = False,
                       rolls_up: str | None = None, numeric: bool = False):
    """Register the decorated accumulator factory ``(prefix, arg_type) -> Accumulator`` for
    ``name``, in ``state`` (default: its own name); see the module docstring for the rest."""
    if name not in RESULT_TYPES:  # the plan types the call before any accumulator runs
        raise InternalError(f"aggregate function {name} has no result type in plan/aggregate_types.py")

    def register(make: Callable[[str, LType | None], Accumulator]):
        AGGREGATE_FUNCTIONS[name] = AggregateFunction(state or name, make, result, counts, rolls_up, numeric)
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
    return registered(func).accumulator(prefix, arg_type)


def result(func: str, acc: Accumulator, state: dict[str, Column], out_type: LType) -> Column:
    """``func``'s result per group from its accumulator's merged ``state``."""
    return registered(func).result(acc, state, out_type)


@aggregate_function("count", counts=True, rolls_up="sum")
@aggregate_function("count_star", state="count", counts=True, rolls_up="sum")
def _count(prefix, arg_type):
    return CountAcc(prefix, arg_type)


@aggregate_function("decimal_average", state="sum", result=decimal_average)  # (a DECIMAL: the binder)
@aggregate_function("sum", rolls_up="sum", numeric=True)
@aggregate_function("avg", state="sum", numeric=True,
                    result=lambda acc, state, t: acc.finalize(state, t, average=True))
def _sum(prefix, arg_type):
    return SumAcc(prefix, arg_type)


@aggregate_function("product", numeric=True)
def _product(prefix, arg_type):
    return ProductAcc(prefix, arg_type)


def _extreme(largest: bool):
    def make(prefix, arg_type):
        if arg_type.is_nested:
            return NestedPickAcc(prefix, arg_type)
        if arg_type.kind == "string":
            return StringMinMaxAcc(prefix, arg_type, largest)
        return MinMaxAcc(prefix, arg_type, largest)
    return make


aggregate_function("min", rolls_up="min")(_extreme(largest=False))
aggregate_function("max", rolls_up="max")(_extreme(largest=True))


def _moments(sample: bool, root: bool):
    return lambda acc, state, t: acc.finalize(state, t, sample=sample, root=root)


@aggregate_function("var_samp", state="moments", numeric=True, result=_moments(sample=True, root=False))
@aggregate_function("var_pop", state="moments", numeric=True, result=_moments(sample=False, root=False))
@aggregate_function("stddev_samp", state="moments", numeric=True, result=_moments(sample=True, root=True))
@aggregate_function("stddev_pop", state="moments", numeric=True, result=_moments(sample=False, root=True))
def _moments_acc(prefix, arg_type):
    return MomentsAcc(prefix, arg_type)


@aggregate_function("skewness", numeric=True)
def _skewness(prefix, arg_type):
    return SkewnessAcc(prefix, arg_type)


@aggregate_function("approx_count_distinct", counts=True)
def _approx_count_distinct(prefix, arg_type):
    return HyperLogLogAcc(prefix, arg_type)


def _bitwise(op: str):
    return lambda prefix, arg_type: (BitStringAcc if is_bit(arg_type) else BitwiseAcc)(prefix, arg_type, op)


# (the binder takes integers and BIT values only: sql/aggregation.py)
for _op in ("and", "or", "xor"):
    aggregate_function(f"bit_{_op}", rolls_up=f"bit_{_op}")(_bitwise(_op))
