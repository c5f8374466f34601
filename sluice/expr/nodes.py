"""Typed scalar expressions of the logical plan.

The nodes and the helpers that need no function definition; the constructors that check
types and fold constants are :mod:`sluice.expr.build`; evaluated over chunks by
:mod:`sluice.expr.evaluate`. Column references use
the plan's internal (unique) column names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from sluice.types import BOOL, NULL, LType, supertype
from sluice.kernels.dates import days_to_date


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
    """A constant: None (NULL), bool, int, float, str, or a scaled int for decimals/dates.

    ``integer_literal``: an integer as the SQL text writes it (``1``, ``-128``), DuckDB's
    INTEGER_LITERAL: typed INTEGER (BIGINT past 32 bits) on its own, it takes the integer type
    of the operands it meets where its value fits that type (:func:`settle_literals`). A
    constant computed (``1 + 1``) or cast (``1::INTEGER``) has its type. It takes no part in
    equality: the same value of the same type is the same constant."""

    value: Any
    type: LType
    integer_literal: bool = field(default=False, compare=False, repr=False)

    def __str__(self) -> str:
        if self.value is None:
            return "NULL"
        if self.type.kind == "string":
            return repr(self.value)
        if self.type.kind == "decimal":  # exactly (a float quotient rounds past 2**53)
            v, sc = int(self.value), self.type.scale
            if not sc:
                return str(v)
            whole, frac = divmod(abs(v), 10 ** sc)
            return f"{'-' if v < 0 else ''}{whole}.{frac:0{sc}d}"
        if self.type.kind == "date":
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


#: The type of a bare ``NULL`` (:data:`sluice.types.NULL`): functions, operands, CASE/COALESCE
#: branches and UNION inputs retype it (:func:`sluice.expr.build.make_func`).
NULL_TYPE = NULL

ARITH = ("+", "-", "*", "/", "%")
COMPARE = ("=", "<>", "<", "<=", ">", ">=")
BINARY_OPS = ARITH + COMPARE + ("and", "or")


def settle_literals(exprs: list[Expr]) -> list[Expr]:
    """Operands that meet at one type (arithmetic, comparisons, CASE's values, COALESCE, ...)
    with DuckDB's integer literals settled: an integer as written (``Lit.integer_literal``)
    takes the integer type the other numeric operands meet at where its value fits it, so
    ``i8 + 1`` is a TINYINT (127 + 1 overflows) and ``i16 * 2`` a SMALLINT; one that does not
    fit keeps its INTEGER / BIGINT (``i8 + 1000`` is an INTEGER), and so do literals among
    decimals, floats or no typed operand at all (``1 + 1``). Booleans (a CASE's conditions)
    and non-numbers take no part."""
    loose = [i for i, e in enumerate(exprs) if isinstance(e, Lit) and e.integer_literal and e.value is not None]
    if not loose:
        return exprs
    typed = [e.type for e in exprs if e.type.is_numeric and not (isinstance(e, Lit) and (e.integer_literal or e.value is None))]
    if not typed:
        return exprs
    t = supertype(typed, "operands")
    if not t.is_integer:
        return exprs
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[t.kind]
    out = list(exprs)
    for i in loose:
        if -(1 << (bits - 1)) <= exprs[i].value < (1 << (bits - 1)):
            out[i] = Lit(exprs[i].value, t)
    return out


def common_type(exprs: list[Expr], what: str = "branches") -> LType:
    """The type a CASE's branches, COALESCE's arguments or a VALUES column meet at
    (:func:`sluice.types.supertype`); NULLs and string constants take the others' type, as
    DuckDB's untyped literals do (``coalesce(x, '12')`` over an INTEGER x is an INTEGER), and
    integer literals that fit it too (:func:`settle_literals`: ``coalesce(i8, 1)`` is a TINYINT)."""
    exprs = settle_literals(exprs)
    ts = [e.type for e in exprs if not (isinstance(e, Lit) and e.value is None) and e.type.kind != "null"]
    if not ts:
        return NULL
    typed = [e.type for e in exprs if not (isinstance(e, Lit) and (e.value is None or e.type.kind == "string"))]
    return supertype(typed or ts, what)


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
