"""The registry the function families register into (:func:`register`); looked up through
:mod:`sluice.expr.functions`, which loads the families first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: A predicate's selectivity when nothing better is known (the estimator's default guess).
DEFAULT_SEL = 0.3


@dataclass(frozen=True)
class Function:
    """One scalar function of the plan.

    ``bind(args, params) -> (args, type)``: checks argument types (raising PlanError with a
    one-line reason), may rewrite the arguments (implicit casts, NULL literals retyped) and
    gives the result type. ``kernel(e, args, chunk) -> Column``: the function over the
    evaluated argument columns of one chunk. ``selectivity(e, est) -> float``: the fraction of
    rows a predicate keeps, ``est`` giving the scan's statistics and the selectivity of
    sub-predicates (None: the estimator's default guess). ``operands``: its arguments meet at
    one type (arithmetic, comparisons, ``//``), so integer literals among them take the
    others' integer type before ``bind`` sees them (:func:`sluice.expr.nodes.settle_literals`,
    DuckDB's INTEGER_LITERAL; CASE and COALESCE settle them with their common type)."""

    name: str
    bind: Callable[[list, tuple], tuple[list, Any]]
    kernel: Callable
    selectivity: Callable | None = None
    operands: bool = False


_REGISTRY: dict[str, Function] = {}

#: The expression evaluator, ``evaluate(expr, chunk) -> Column``, set by
#: :mod:`sluice.expr.evaluate` when it loads: a kernel that evaluates an expression of its own
#: (a lambda's body, :mod:`.lambdas`) calls it, since no family may import the evaluator, which
#: looks the kernels up here.
evaluator: Callable | None = None


def register(*names: str, bind: Callable | None = None, result: Callable | None = None,
             selectivity: Callable | None = None, operands: bool = False) -> Callable:
    """Decorator for a kernel: registers it under each of ``names``. Give either ``bind``
    (arguments may be rewritten) or ``result(args, params) -> type`` (they are kept);
    ``operands``: the arguments meet at one type (:attr:`Function.operands`)."""
    if (bind is None) == (result is None):
        raise TypeError("register needs exactly one of bind= and result=")
    binder = bind if bind is not None else (lambda args, params: (args, result(args, params)))

    def deco(kernel: Callable) -> Callable:
        for n in names:
            if n in _REGISTRY:
                raise ValueError(f"function {n} registered twice")
            _REGISTRY[n] = Function(n, binder, kernel, selectivity, operands)
        return kernel
    return deco
