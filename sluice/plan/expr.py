"""Typed scalar expressions of the logical plan.

Built by the SQL translator through the ``make_*`` helpers, which check and infer types and
fold constants; evaluated over chunks by :mod:`sluice.exec.evaluate`. Column references use
the plan's internal (unique) column names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from sluice.types import BOOL, INT32, LType, supertype


class Expr:
    """Base of expression nodes; every node has a ``type``."""

    __slots__ = ()
    type: LType

    def children(self) -> tuple["Expr", ...]:
        return ()

    def walk(self) -> Iterator["Expr"]:
        yield self
        for c in self.children():
            yield from c.walk()

    def columns(self) -> set[str]:
        return {e.name for e in self.walk() if isinstance(e, Col)}


@dataclass(frozen=True, slots=True)
class Col(Expr):
    name: str
    type: LType

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """A constant: None (NULL), bool, int, float, str, or a scaled int for decimals/dates."""

    value: Any
    type: LType

    def __str__(self) -> str:
        if self.value is None:
            return "NULL"
        if self.type.kind == "string":
            return repr(self.value)
        if self.type.kind == "decimal":
            return f"{self.value / 10 ** self.type.scale:.{self.type.scale}f}"
        if self.type.kind == "date":
            from sluice.exec.kernels.dates import days_to_date
            return f"DATE '{days_to_date(self.value)}'"
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Func(Expr):
    """An operator or function. ``params`` holds non-expression arguments (a LIKE pattern,
    an IN list, a target type, an EXTRACT field...)."""

    op: str
    args: tuple[Expr, ...]
    type: LType
    params: tuple = ()

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        a = [str(x) for x in self.args]
        if self.op in BINARY_OPS:
            sep = f" {self.op.upper() if self.op.isalpha() else self.op} "
            return f"({sep.join(a)})"
        extra = ", ".join(repr(p) for p in self.params)
        return f"{self.op}({', '.join(a)}{', ' + extra if extra else ''})"


#: The type of a bare ``NULL``; CASE/COALESCE branches and UNION inputs retype it.
NULL_TYPE = INT32

ARITH = ("+", "-", "*", "/", "%")
COMPARE = ("=", "<>", "<", "<=", ">", ">=")
BINARY_OPS = ARITH + COMPARE + ("and", "or")


def _fold(e: Func) -> Expr:
    """Evaluate a function of constants now, so the plan holds the constant."""
    if all(isinstance(a, Lit) for a in e.args) and e.op not in ("random",):
        from sluice.exec.evaluate import evaluate_constant
        return evaluate_constant(e)
    return e


def fold_constants(e: Expr) -> Expr:
    """``e`` with every function of constants evaluated (bottom up); a function that raises on
    its constants stays as it is, to raise only if a row ever needs it."""
    if not isinstance(e, Func):
        return e
    out = Func(e.op, tuple(fold_constants(a) for a in e.args), e.type, e.params)
    try:
        return _fold(out)
    except Exception:  # noqa: BLE001 -- e.g. a division by zero no row may reach
        return out


def make_arith(op: str, a: Expr, b: Expr) -> Expr:
    return make_func(op, [a, b])


def make_compare(op: str, a: Expr, b: Expr) -> Expr:
    return make_func(op, [a, b])


def make_bool(op: str, args: list[Expr]) -> Expr:
    if len(args) == 1:
        from sluice.functions import lookup
        lookup(op).bind(list(args), ())  # checks the operand's type
        return args[0]
    return make_func(op, args)


def make_not(a: Expr) -> Expr:
    return make_func("not", [a])


def make_func(op: str, args: list[Expr], params: tuple = ()) -> Expr:
    """The function ``op`` of ``args``: its definition (:mod:`sluice.functions`) checks the
    types, may insert implicit casts and gives the result type; constants are folded."""
    from sluice.functions import lookup
    args, t = lookup(op).bind(list(args), params)
    return _fold(Func(op, tuple(args), t, params))


def common_type(exprs: list[Expr], what: str = "branches") -> LType:
    """The type a CASE's branches, COALESCE's arguments or a VALUES column meet at
    (:func:`sluice.types.supertype`); NULLs and string constants take the others' type, as
    DuckDB's untyped literals do (``coalesce(x, '12')`` over an INTEGER x is an INTEGER)."""
    ts = [e.type for e in exprs if not (isinstance(e, Lit) and e.value is None)]
    if not ts:
        return INT32
    typed = [e.type for e in exprs if not (isinstance(e, Lit) and (e.value is None or e.type.kind == "string"))]
    return supertype(typed or ts, what)


def coerce(e: Expr, t: LType) -> Expr:
    """``e`` as a value of type ``t``: a NULL constant retyped, anything else cast."""
    if isinstance(e, Lit) and e.value is None:
        return e if e.type == t else Lit(None, t)
    return e if e.type == t else make_func("cast", [e], (t,))


def conjuncts(e: Expr | None) -> list[Expr]:
    if e is None:
        return []
    if isinstance(e, Func) and e.op == "and":
        out: list[Expr] = []
        for a in e.args:
            out.extend(conjuncts(a))
        return out
    return [e]


def or_branches(e: Expr) -> list[list[Expr]]:
    """The conjuncts of each branch of a (nested) OR: (a AND b) OR c -> [[a, b], [c]]."""
    out: list[list[Expr]] = []

    def flat(x: Expr) -> None:
        if isinstance(x, Func) and x.op == "or":
            for a in x.args:
                flat(a)
        else:
            out.append(conjuncts(x))
    flat(e)
    return out


def and_all(es: list[Expr]) -> Expr | None:
    es = [e for e in es if e is not None]
    if not es:
        return None
    return es[0] if len(es) == 1 else Func("and", tuple(es), BOOL)


def substitute(e: Expr, mapping: dict[str, Expr]) -> Expr:
    """Replace column references by expressions."""
    if isinstance(e, Col):
        return mapping.get(e.name, e)
    if isinstance(e, Func):
        return Func(e.op, tuple(substitute(a, mapping) for a in e.args), e.type, e.params)
    return e
