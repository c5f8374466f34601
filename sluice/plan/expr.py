"""Typed scalar expressions of the logical plan.

Built by the SQL translator through the ``make_*`` helpers, which check and infer types and
fold constants; evaluated over chunks by :mod:`sluice.exec.evaluate`. Column references use
the plan's internal (unique) column names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from sluice.errors import PlanError, UnsupportedError
from sluice.types import BOOL, DATE, FLOAT64, INT32, INT64, STRING, TIMESTAMP, LType, common_numeric, decimal


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


def make_arith(op: str, a: Expr, b: Expr) -> Expr:
    ta, tb = a.type, b.type
    if ta.kind == "timestamp" or tb.kind == "timestamp":
        # timestamp +- microseconds (what INTERVAL arithmetic lowers to)
        if op in ("+", "-") and ta.kind == "timestamp" and tb.is_integer:
            return _fold(Func(op, (a, b), TIMESTAMP))
        if ta.kind in ("timestamp", "date") and tb.kind in ("timestamp", "date") and op == "-":
            raise UnsupportedError("subtracting timestamps (the result is an INTERVAL); use DATE_DIFF")
        raise PlanError(f"cannot apply {op} to {ta} and {tb}")
    if ta.kind == "date" or tb.kind == "date":
        if op in ("+", "-") and ta.kind == "date" and tb.is_integer:
            return _fold(Func(op, (a, b), DATE))
        if op == "+" and tb.kind == "date" and ta.is_integer:
            return _fold(Func(op, (b, a), DATE))
        if op == "-" and ta.kind == "date" and tb.kind == "date":
            return _fold(Func(op, (a, b), INT64))
        raise PlanError(f"cannot apply {op} to {ta} and {tb}")
    if not (ta.is_numeric and tb.is_numeric):
        if ta.kind == "string" and tb.kind == "string" and op == "+":
            raise PlanError("use || to concatenate strings")
        raise PlanError(f"cannot apply {op} to {ta} and {tb}")
    if op == "/":
        return _fold(Func(op, (a, b), FLOAT64))
    if op == "*" and ta.kind == "decimal" and tb.kind == "decimal":
        return _fold(Func(op, (a, b), decimal(ta.scale + tb.scale)))
    if op == "*" and (ta.kind == "decimal") != (tb.kind == "decimal") and not (ta.is_float or tb.is_float):
        return _fold(Func(op, (a, b), decimal(max(ta.scale, tb.scale))))
    t = common_numeric(ta, tb)
    if t.kind in ("int8", "int16", "int32") and op in ("+", "-", "*"):
        t = INT64 if t.kind == "int32" and op == "*" else t
    return _fold(Func(op, (a, b), t))


def make_compare(op: str, a: Expr, b: Expr) -> Expr:
    ka, kb = a.type.kind, b.type.kind
    if ka == "string" or kb == "string":
        if ka != kb:
            raise PlanError(f"cannot compare {a.type} with {b.type}")
    elif ka in ("date", "timestamp") or kb in ("date", "timestamp"):
        if {ka, kb} == {"date", "timestamp"}:  # a date is its midnight
            a, b = (make_func("cast", [a], (TIMESTAMP,)) if ka == "date" else a,
                    make_func("cast", [b], (TIMESTAMP,)) if kb == "date" else b)
        elif ka != kb:
            raise PlanError(f"cannot compare {a.type} with {b.type}")
    elif ka == "bool" and kb == "bool":
        pass
    else:
        common_numeric(a.type, b.type)
    return _fold(Func(op, (a, b), BOOL))


def make_bool(op: str, args: list[Expr]) -> Expr:
    for x in args:
        if x.type.kind != "bool":
            raise PlanError(f"{op.upper()} needs boolean operands, got {x.type} in {x}")
    if len(args) == 1:
        return args[0]
    return _fold(Func(op, tuple(args), BOOL))


def make_not(a: Expr) -> Expr:
    if a.type.kind != "bool":
        raise PlanError(f"NOT needs a boolean operand, got {a.type}")
    return _fold(Func("not", (a,), BOOL))


def make_func(op: str, args: list[Expr], params: tuple = ()) -> Expr:
    """Functions other than arithmetic, comparison and boolean connectives."""
    if op == "concat":  # ||, CONCAT: other types are cast to text, as in DuckDB
        args = [make_func("cast", [a], (STRING,)) if a.type.kind != "string" and not
                (isinstance(a, Lit) and a.value is None) else a for a in args]
    t = _func_type(op, args, params)
    if op in ("case", "coalesce", "concat"):
        # A NULL branch takes the result type (a CASE without ELSE over strings is a string).
        vals = set(range(1, len(args) - 1, 2)) | {len(args) - 1} if op == "case" else set(range(len(args)))
        args = [Lit(None, t) if i in vals and isinstance(a, Lit) and a.value is None else a
                for i, a in enumerate(args)]
    return _fold(Func(op, tuple(args), t, params))


def _func_type(op: str, args: list[Expr], params: tuple) -> LType:
    if op in ("is_null", "is_not_null"):
        return BOOL
    if op in ("like", "not_like", "ilike", "not_ilike"):
        if args[0].type.kind != "string":
            raise PlanError(f"LIKE needs a string, got {args[0].type}")
        return BOOL
    if op == "in":
        return BOOL
    if op == "neg":
        if not args[0].type.is_numeric:
            raise PlanError(f"cannot negate {args[0].type}")
        return args[0].type
    if op == "extract":
        if args[0].type.kind not in ("date", "timestamp"):
            raise PlanError(f"EXTRACT needs a date or timestamp, got {args[0].type}")
        return FLOAT64 if params[0] == "epoch" else INT64
    if op == "substring":
        if args[0].type.kind != "string":
            raise PlanError(f"SUBSTRING needs a string, got {args[0].type}")
        return STRING
    if op in ("upper", "lower", "trim", "ltrim", "rtrim"):
        if args[0].type.kind != "string":
            raise PlanError(f"{op.upper()} needs a string, got {args[0].type}")
        return STRING
    if op == "length":
        return INT64
    if op == "concat":
        return STRING
    if op in ("case", "coalesce"):
        outs = _result_branches(op, args)
        return common_type(outs)
    if op == "cast":
        return params[0]
    if op == "abs":
        return args[0].type
    if op == "round":
        return args[0].type if not args[0].type.is_integer else args[0].type
    if op == "add_months":
        return args[0].type
    if op == "string_fn":
        from sluice.exec.kernels.strings import RESULT
        if args[0].type.kind != "string":
            raise PlanError(f"{params[0].upper()} needs a string, got {args[0].type}")
        return {"bool": BOOL, "int": INT64, "string": STRING}[RESULT[params[0]]]
    if op in ("date_trunc", "date_diff", "strftime"):
        if any(a.type.kind not in ("date", "timestamp") for a in args):
            raise PlanError(f"{op.upper()} needs dates or timestamps, got {', '.join(str(a.type) for a in args)}")
        return {"date_trunc": args[0].type, "date_diff": INT64, "strftime": STRING}[op]
    raise PlanError(f"unknown function {op}")


def _result_branches(op: str, args: list[Expr]) -> list[Expr]:
    if op == "coalesce":
        return args
    # case: cond1, val1, cond2, val2, ..., else
    return [args[i] for i in range(1, len(args) - 1, 2)] + [args[-1]]


def common_type(exprs: list[Expr]) -> LType:
    ts = [e.type for e in exprs if not (isinstance(e, Lit) and e.value is None)]
    if not ts:
        return INT32
    t = ts[0]
    for u in ts[1:]:
        if u == t:
            continue
        if t.kind == u.kind == "string" or t.kind == u.kind == "date":
            continue
        if t.kind in ("string", "date") or u.kind in ("string", "date"):
            raise PlanError(f"branches have incompatible types {t} and {u}")
        t = common_numeric(t, u)
    return t


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
