"""Scalar functions, each defined once: its type rule, its kernel and its selectivity.

A function of the plan (``Func(op, args, type, params)``) is looked up here by ``op`` from
three places: the plan's constructors (:func:`sluice.expr.build.make_func`) call its ``bind``
to check the argument types, insert implicit casts and give the result type; evaluation
(:mod:`sluice.expr.evaluate`) calls its ``kernel`` on the evaluated argument columns; join
ordering (:mod:`sluice.plan.estimate`) calls its ``selectivity`` when it is a predicate.

The functions live in one module per family (arithmetic, comparison, logic, strings,
datetime, conditional, cast, numeric), as cudf-polars keeps one module per expression family. This
package module holds only the lookups (the registry is :mod:`.registry`), so importing it costs nothing; the families (which import
torch and pyarrow) load on the first lookup.
"""

from __future__ import annotations

import importlib
import threading

from sluice.errors import PlanError
from sluice.expr.functions.registry import _REGISTRY, Function, register  # noqa: F401 - the package's interface

#: The family modules, loaded together on the first lookup.
FAMILIES = ("arithmetic", "numeric", "comparison", "logic", "strings", "similarity", "datetime", "conditional", "cast",
            "printf", "bar", "nested", "string_lists", "lambdas", "maps", "string_slices", "byte_sizes",
            "translate", "bits", "float_steps", "time_bucket", "timestamp_average", "list_sets")


_loaded = False
_load_lock = threading.Lock()


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
                importlib.import_module(f"sluice.expr.functions.{fam}")  # deferred: the families import this package (its registry): at its top, a cycle
            _loaded = True
