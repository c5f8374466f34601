"""Constants and types as SQL writes them: literals (numbers, dates, strings), SQL type names,
LIKE patterns, and the coercions that make a comparison of a column with a constant exact.
"""

from __future__ import annotations

import datetime as dt
import decimal as dec
import re

from sqlglot import exp

from sluice.expr.like_patterns import like_pattern  # noqa: F401 - read by the translator here
from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import NULL_TYPE, Col, Expr, Func, Lit
from sluice.plan.logical import (Filter, Limit, PlanNode, Project, Sort)
from sluice.sql.lambdas import LAMBDA_OPS, map_lambda
from sluice.types import BIT, BOOL, DATE, FLOAT64, INT32, INT64, STRING, LType, decimal, list_of, map_of, struct_of


def _const_str(node, what: str) -> str:
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise UnsupportedError(f"{what} with an argument that is not a string constant")
    return node.this


def _const_int(node, what: str) -> int:
    neg = isinstance(node, exp.Neg)
    inner = node.this if neg else node
    if not (isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit()):
        raise UnsupportedError(f"{what} with an argument that is not an integer constant")
    return -int(inner.this) if neg else int(inner.this)


def _is_untyped_null(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is None and e.type == NULL_TYPE


def _int_lit(e: Expr) -> bool:
    return isinstance(e, Lit) and (e.value is None or e.type.is_integer)


def literal(n: exp.Literal) -> Lit:
    if n.is_string:
        return Lit(n.this, STRING)
    text = n.this
    if any(ch in text for ch in "eE"):
        return Lit(float(text), FLOAT64)
    if "." in text:
        d = dec.Decimal(text)
        # The scale as written, as DuckDB types it: 1.50 is a DECIMAL(3,2) and prints as 1.50.
        scale = max(0, -d.as_tuple().exponent)
        v = int(d.scaleb(scale))
        if not -(2**63) <= v < 2**63 or scale > 18:
            raise UnsupportedError(f"decimal constant {text} (more than 18 digits)")
        whole = len(text.split(".")[0].lstrip("+-")) or 1  # DuckDB counts a leading 0: 0.5 is DECIMAL(2,1)
        return Lit(v, decimal(scale, whole + scale))
    v = int(text)
    if not -(2**63) <= v < 2**63:
        raise UnsupportedError(f"integer constant {text} beyond 64 bits")
    # DuckDB's INTEGER_LITERAL: INTEGER (BIGINT past 32 bits), or the integer type of what it
    # meets where it fits (sluice.expr.nodes.settle_literals)
    return Lit(v, INT32 if -(2**31) <= v < 2**31 else INT64, integer_literal=True)


def type_params(dt_node: exp.DataType) -> list[int]:
    """A type's parameters, which DuckDB takes only as integer constants: ``DECIMAL('hello')``,
    ``DECIMAL(3.2)`` and ``DECIMAL((-17))`` are binder errors there (they met int() here: internal
    errors)."""
    out = []
    for p in dt_node.expressions:
        v = p.this if isinstance(p, exp.DataTypeParam) else p
        if not (isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit()):
            written = ", ".join(q.sql(dialect="duckdb") for q in dt_node.expressions)
            raise PlanError(f"type {dt_node.this.value} does not accept the type parameters ({written})")
        out.append(int(v.this))
    return out


def _check_param_count(dt_node: exp.DataType, params: list[int], most: int) -> None:
    if len(params) > most:
        raise PlanError(f"type {dt_node.this.value} takes " + (f"at most {most} type parameters" if most
                        else "no type parameters") + f", not {len(params)}")


def sql_type(dt_node: exp.DataType) -> LType:
    """The type a CAST names, its parameters checked as DuckDB checks them: only DECIMAL,
    VARCHAR (ignored), FLOAT (its bits choose REAL or DOUBLE) and TIMESTAMP (its digits) take
    any; BIGINT(5) and DOUBLE(5) are errors there."""
    t = dt_node.this
    T = exp.DataType.Type
    if dt_node.args.get("nested") or t in (T.ARRAY, T.LIST, T.STRUCT, T.MAP):
        return _nested_type(dt_node)
    mapping = {T.INT: INT32, T.BIGINT: INT64, T.SMALLINT: LType("int16"), T.TINYINT: LType("int8"),
               T.DOUBLE: FLOAT64, T.FLOAT: LType("float32"), T.BOOLEAN: BOOL, T.DATE: DATE,
               T.VARCHAR: STRING, T.TEXT: STRING, T.CHAR: STRING, T.TIMESTAMP: LType("timestamp"), T.BIT: BIT}
    timestamps = [T.TIMESTAMP]
    for name in ("TIMESTAMPNTZ", "DATETIME"):  # TIMESTAMP (without time zone) as sqlglot spells it
        if hasattr(T, name):
            mapping[getattr(T, name)] = LType("timestamp")
            timestamps.append(getattr(T, name))
    for name in ("TIMESTAMPTZ", "TIMESTAMPLTZ"):  # WITH TIME ZONE: an instant, in UTC
        if hasattr(T, name):
            mapping[getattr(T, name)] = LType("timestamptz")
    if t in (T.INT128, T.UINT128):
        # no exact 128-bit path: its arithmetic would need two-word integers throughout
        raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')} (HUGEINT: sluice's integers are 64-bit; "
                               "CAST to BIGINT, DECIMAL(18, 0) or DOUBLE)")
    if t not in mapping and t != T.DECIMAL:
        raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')}")
    params = type_params(dt_node)
    _check_param_count(dt_node, params, 2 if t == T.DECIMAL else 1 if t in (T.VARCHAR, T.TEXT, T.CHAR, T.FLOAT)
                       or t in timestamps else 0)
    if t == T.FLOAT and params:  # FLOAT(p): p bits of precision, as in PostgreSQL
        if not 1 <= params[0] <= 53:
            raise PlanError(f"FLOAT precision must be between 1 and 53 bits, got {params[0]}")
        return LType("float32") if params[0] <= 24 else FLOAT64
    if t in timestamps and params and not 4 <= params[0] <= 6:
        # (TIMESTAMP(3) is DuckDB's TIMESTAMP_MS: it drops the microseconds)
        raise UnsupportedError(f"type TIMESTAMP({params[0]}) (only microseconds: TIMESTAMP(6))")
    if t in mapping:
        return mapping[t]
    # DECIMAL alone is DECIMAL(18,3) in DuckDB; DECIMAL(p) has scale 0.
    scale = params[1] if len(params) > 1 else (0 if params else 3)
    p = decimal_precision(dt_node)
    if scale > p:
        raise PlanError(f"DECIMAL scale {scale} cannot be greater than its width {p}")
    if scale > 18:
        raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')} (sluice keeps decimals in 64 bits: "
                               "scale at most 18)")
    return decimal(scale, p)


def _nested_type(dt_node: exp.DataType) -> LType:
    """``INT[]`` / ``LIST(INT)``, ``STRUCT(a INT, ...)`` (``ROW(...)``) and ``MAP(K, V)``, at any
    depth; a DECIMAL inside keeps its declared precision on its type."""
    T = exp.DataType.Type
    t, kids = dt_node.this, dt_node.expressions
    if t in (T.ARRAY, T.LIST) and len(kids) == 1 and isinstance(kids[0], exp.DataType):
        return list_of(_inner_type(kids[0]))
    if t == T.MAP and len(kids) == 2 and all(isinstance(k, exp.DataType) for k in kids):
        return map_of(_inner_type(kids[0]), _inner_type(kids[1]))
    if t == T.STRUCT and kids and all(isinstance(k, exp.ColumnDef) and isinstance(k.args.get("kind"), exp.DataType)
                                      for k in kids):
        names = [k.this.name for k in kids]
        if len({n.lower() for n in names}) != len(names):
            raise PlanError(f"type {dt_node.sql(dialect='duckdb')} names a field twice")
        return struct_of((n, _inner_type(k.args["kind"])) for n, k in zip(names, kids))
    raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')}")


def _inner_type(dt_node: exp.DataType) -> LType:
    t = sql_type(dt_node)
    p = decimal_precision(dt_node)
    return decimal(t.scale, p) if p is not None else t


def decimal_precision(dt_node: exp.DataType) -> int | None:
    """The precision of a DECIMAL type (18 when not given, as in DuckDB); None for other types."""
    if dt_node.this != exp.DataType.Type.DECIMAL:
        return None
    params = type_params(dt_node)
    if not params:
        return 18
    p = params[0]
    if not 1 <= p <= 38:
        raise PlanError(f"DECIMAL precision must be between 1 and 38, got {p}")
    return p


def _coerce_compare(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """Implicit casts for comparisons: a string constant compared with a date becomes a date,
    with a number a number, with a boolean a boolean."""
    if a.type.kind == "date" and isinstance(b, Lit) and b.type.kind == "string":
        return a, _date_lit(b.value)
    if b.type.kind == "date" and isinstance(a, Lit) and a.type.kind == "string":
        return _date_lit(a.value), b
    if a.type.is_numeric and isinstance(b, Lit) and b.type.kind == "string" and b.value is not None:
        return a, _number_lit(b.value, a.type)
    if b.type.is_numeric and isinstance(a, Lit) and a.type.kind == "string" and a.value is not None:
        return _number_lit(a.value, b.type), b
    if a.type.kind == "bool" and isinstance(b, Lit) and b.type.kind == "string" and b.value is not None:
        return a, _bool_lit(b.value)
    if b.type.kind == "bool" and isinstance(a, Lit) and a.type.kind == "string" and a.value is not None:
        return _bool_lit(a.value), b
    if isinstance(b, Lit) and b.value is None:
        return a, Lit(None, a.type)
    if isinstance(a, Lit) and a.value is None:
        return Lit(None, b.type), b
    return a, b


#: The strings DuckDB casts to a boolean (case aside; no spaces around them).
_BOOL_TEXT = {"true": True, "t": True, "yes": True, "y": True, "1": True,
              "false": False, "f": False, "no": False, "n": False, "0": False}


def _bool_lit(s: str) -> Lit:
    """A string constant compared with a boolean is read as one (DuckDB casts it: ``true = '1'``)."""
    value = _BOOL_TEXT.get(s.lower())
    if value is None:
        raise PlanError(f"cannot compare a boolean with {s!r}: it is not a boolean")
    return Lit(value, BOOL)


def _number_lit(s: str, other: LType) -> Lit:
    """A string constant compared with a number is read as a number (DuckDB casts it): 'nan',
    'inf', '-Infinity' only against a float (a float there, as DuckDB's cast reads them; they
    met int() here: an internal error), against an integer or decimal an error, as DuckDB's."""
    text = s.strip()
    try:
        d = dec.Decimal(text)
    except dec.InvalidOperation:
        raise PlanError(f"cannot compare a number with {s!r}: it is not a number") from None
    if not d.is_finite():
        if not other.is_float:
            raise PlanError(f"cannot compare {other} with {s!r}: it is not a finite number")
        return Lit(float(text), FLOAT64)
    return literal(exp.Literal.number(text))


def _date_lit(s: str) -> Lit:
    # ISO dates, and one-digit months and days as DuckDB reads them ('1999-2-01').
    m = re.fullmatch(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*", s)
    try:
        d = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else dt.date.fromisoformat(s.strip())
    except ValueError:
        raise PlanError(f"{s!r} is not a date (YYYY-MM-DD)") from None
    return Lit((d - dt.date(1970, 1, 1)).days, DATE)


_NEVER_EQUAL = object()


def _lit_in_repr(v: Lit, t: LType):
    """A literal's value in the representation of a column of type ``t`` (for IN lists), or
    ``_NEVER_EQUAL`` when no value of that type equals it (2.5 for integers, 1.005 for cents)."""
    if v.value is None:
        return None
    x = v.value
    if v.type.kind == "decimal":
        x = dec.Decimal(x).scaleb(-v.type.scale)
    elif isinstance(x, float):
        x = dec.Decimal(x) if x == x and abs(x) != float("inf") else None
    elif isinstance(x, int) and not isinstance(x, bool):
        x = dec.Decimal(x)
    if t.is_float:
        return float(v.value) if v.type.kind != "decimal" else float(x)
    if x is None:
        return _NEVER_EQUAL
    if t.kind == "decimal":
        x = x.scaleb(t.scale)
    elif not t.is_integer:
        return v.value
    if x != x.to_integral_value():
        return _NEVER_EQUAL
    i = int(x)
    bits = {"int8": 8, "int16": 16, "int32": 32}.get(t.kind, 64)
    return i if -(2 ** (bits - 1)) <= i < 2 ** (bits - 1) else _NEVER_EQUAL


def _untyped_null(plan: PlanNode, name: str) -> bool:
    """Whether output ``name`` of ``plan`` is a bare ``NULL`` (which has no type of its own)."""
    while True:
        if isinstance(plan, Project):
            e = dict(plan.exprs).get(name)
            if isinstance(e, Lit):
                return e.value is None and e.type == NULL_TYPE
            if not isinstance(e, Col):
                return False
            name = e.name
            plan = plan.child
        elif isinstance(plan, (Sort, Limit, Filter)):
            plan = plan.child
        else:
            return False


def _replace_subexprs(e: Expr, mapping: dict[Expr, Col]) -> Expr:
    if not mapping:
        return e
    hit = mapping.get(e)
    if hit is not None:
        return hit
    if isinstance(e, Func) and e.op in LAMBDA_OPS:
        return map_lambda(e, lambda x: _replace_subexprs(x, mapping))
    if isinstance(e, Func):
        return Func(e.op, tuple(_replace_subexprs(a, mapping) for a in e.args), e.type, e.params)
    return e
