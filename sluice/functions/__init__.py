"""Scalar functions, each defined once: its type rule, its kernel and its selectivity.

A function of the plan (``Func(op, args, type, params)``) is looked up here by ``op`` from
three places: the plan's constructors (:func:`sluice.plan.expr.make_func`) call its ``bind``
to check the argument types, insert implicit casts and give the result type; evaluation
(:mod:`sluice.exec.evaluate`) calls its ``kernel`` on the evaluated argument columns; join
ordering (:mod:`sluice.plan.estimate`) calls its ``selectivity`` when it is a predicate.

The functions live in one module per family (arithmetic, comparison, logic, strings,
datetime, conditional, cast, numeric), as cudf-polars keeps one module per expression family. This
module holds only the registry, so importing it costs nothing; the families (which import
torch and pyarrow) load on the first lookup.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any, Callable

from sluice.errors import PlanError

#: The family modules, loaded together on the first lookup.
FAMILIES = ("arithmetic", "numeric", "comparison", "logic", "strings", "datetime", "conditional", "cast")


@dataclass(frozen=True)
class Function:
    """One scalar function of the plan.

    ``bind(args, params) -> (args, type)``: checks argument types (raising PlanError with a
    one-line reason), may rewrite the arguments (implicit casts, NULL literals retyped) and
    gives the result type. ``kernel(e, args, chunk) -> Column``: the function over the
    evaluated argument columns of one chunk. ``selectivity(e, est) -> float``: the fraction of
    rows a predicate keeps, ``est`` giving the scan's statistics and the selectivity of
    sub-predicates (None: the estimator's default guess)."""

    name: str
    bind: Callable[[list, tuple], tuple[list, Any]]
    kernel: Callable
    selectivity: Callable | None = None


_REGISTRY: dict[str, Function] = {}
_loaded = False
_load_lock = threading.Lock()


def register(*names: str, bind: Callable | None = None, result: Callable | None = None,
             selectivity: Callable | None = None) -> Callable:
    """Decorator for a kernel: registers it under each of ``names``. Give either ``bind``
    (arguments may be rewritten) or ``result(args, params) -> type`` (they are kept)."""
    if (bind is None) == (result is None):
        raise TypeError("register needs exactly one of bind= and result=")
    binder = bind if bind is not None else (lambda args, params: (args, result(args, params)))

    def deco(kernel: Callable) -> Callable:
        for n in names:
            if n in _REGISTRY:
                raise ValueError(f"function {n} registered twice")
            _REGISTRY[n] = Function(n, binder, kernel, selectivity)
        return kernel
    return deco


def lookup(name: str) -> Function:
    _load()
    fn = _REGISTRY.get(name)
    if fn is None:
        raise PlanError(f"unknown function {name}")
    return fn


def find(name: str) -> Function | None:
    """The function, or None when ``name`` is not one (the estimator's default applies)."""
    _load()
    return _REGISTRY.get(name)


def names() -> list[str]:
    _load()
    return sorted(_REGISTRY)


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _load_lock:  # scans evaluate predicates on I/O threads: load once, completely
        if not _loaded:
            for fam in FAMILIES:
                importlib.import_module(f"sluice.functions.{fam}")
            _loaded = True
