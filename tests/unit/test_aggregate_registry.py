"""Aggregate functions are one registry (exec/aggregate_functions.py), not if-chains in each
layer: every name the binder and the rewrites make has an accumulator, the functions that
share a state share it, and a name with none is an internal error, never a silent answer."""

import re
from pathlib import Path

import pytest

from sluice.errors import InternalError
from sluice.exec.aggregate_functions import AGGREGATE_FUNCTIONS, make_accumulator, registered
from sluice.expr.nodes import Col
from sluice.plan.logical import MOMENTS, AggCall
from sluice.sql.syntax import AGG_FUNCS
from sluice.sql.windows import _PARTITION_AGGREGATES
from sluice.types import INT64, STRING, LType


def test_every_aggregate_the_planner_makes_is_registered():
    root = Path(__file__).resolve().parents[2] / "sluice"
    made = set(re.findall(r'AggCall\("(\w+)"', "".join(p.read_text() for p in root.rglob("*.py"))))
    rolled = {f.rolls_up for f in AGGREGATE_FUNCTIONS.values()} - {None}
    names = made | set(AGG_FUNCS.values()) | _PARTITION_AGGREGATES | rolled | {"count_star"}
    assert made and names <= set(AGGREGATE_FUNCTIONS), names - set(AGGREGATE_FUNCTIONS)
    assert set(AGGREGATE_FUNCTIONS) <= names, set(AGGREGATE_FUNCTIONS) - names  # nothing registered unused


def test_states_shared_where_one_state_serves():
    state = {f: AGGREGATE_FUNCTIONS[f].state for f in AGGREGATE_FUNCTIONS}
    assert state["sum"] == state["avg"] == state["decimal_average"] and state["count"] == state["count_star"]
    assert len({state[f] for f in MOMENTS}) == 1
    shared = {"avg", "decimal_average", "count_star"} | set(sorted(MOMENTS)[1:])
    others = [state[f] for f in state if f not in shared]
    assert len(set(others)) == len(others)  # MIN, MAX, PRODUCT, ...: each its own


def test_counts_are_zero_over_no_rows_and_bigint():
    for f, fn in AGGREGATE_FUNCTIONS.items():
        call = AggCall(f, None if f == "count_star" else Col("x", INT64))
        assert not fn.counts or call.type == INT64, f


def test_min_and_max_choose_their_accumulator_by_type():
    kinds = {t.kind: type(make_accumulator("a0", "max", t)).__name__
             for t in (INT64, STRING, LType("list", args=(INT64,)))}
    assert kinds == {"int64": "MinMaxAcc", "string": "StringMinMaxAcc", "list": "NestedPickAcc"}


def test_an_unregistered_name_is_an_internal_error():
    with pytest.raises(InternalError, match="median"):
        registered("median")


def test_every_registered_aggregate_has_one_result_type_rule_in_the_plan():
    """The plan types an aggregate from plan/aggregate_types.py (it may not import exec/): the
    same names as the accumulators', and a registration without a rule is refused."""
    from sluice.exec.aggregate_functions import aggregate_function
    from sluice.plan.aggregate_types import RESULT_TYPES, result_type

    assert set(RESULT_TYPES) == set(AGGREGATE_FUNCTIONS)
    with pytest.raises(InternalError, match="no result type"):
        aggregate_function("no_such_aggregate")
    with pytest.raises(InternalError, match="no result type"):
        result_type("median", INT64)  # rewritten into a window by the binder: never an AggCall
    assert "no_such_aggregate" not in AGGREGATE_FUNCTIONS
