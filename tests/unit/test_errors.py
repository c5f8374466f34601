"""Internal errors name the step that failed; deferred value checks raise when read."""

from __future__ import annotations

import pytest
import torch

import sluice
from sluice.errors import ExecutionError, InternalError
from sluice.kernels.checks import DeferredChecks, deferred_checks, fail_if
from sluice.exec.driver import run_to_arrow
from sluice.exec.operators import Operator, OneRowOp


class _Broken(Operator):
    label = "Broken"

    def __init__(self):
        self.children = (OneRowOp(),)

    def execute(self, ctx):
        for _ in self.children[0].stream(ctx):
            raise IndexError("index 7 is out of bounds")
        yield  # pragma: no cover


def test_internal_error_names_the_operator(tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    rel = con.sql("select 1")
    ctx = rel._context()
    with pytest.raises(InternalError) as ei:
        run_to_arrow(_Broken(), ctx, [], [], {})
    assert str(ei.value) == "internal error: in operator Broken: IndexError: index 7 is out of bounds"


def test_internal_error_in_a_rule_names_the_rule(tpch_dir, monkeypatch):
    import sluice.plan.rules as rules

    def exploding(plan):
        raise KeyError("x")
    exploding.__name__ = "push_filters"
    monkeypatch.setattr(rules, "RULES", (exploding,))
    with pytest.raises(InternalError, match="in planning rule push_filters: KeyError"):
        rules.optimize(None)


def test_deferred_checks_raise_when_read():
    checks = DeferredChecks()
    checks.add(torch.tensor(False), "never")
    checks.add(torch.tensor(True), "boom")
    with pytest.raises(ExecutionError, match="boom"):
        checks.raise_pending()
    checks.raise_pending()  # read once: nothing left


def test_fail_if_on_cpu_raises_at_once_and_respects_validity():
    bad = torch.tensor([False, True, False])
    with deferred_checks():
        fail_if(bad, "ignored: the bad row is NULL", valid=torch.tensor([True, False, True]))
        with pytest.raises(ExecutionError, match="out of range"):
            fail_if(bad, "out of range")
