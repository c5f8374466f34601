"""Translation of DuckDB's BIT functions and operators (``sluice.expr.functions.bits``):
BIT_COUNT, BIT_LENGTH, OCTET_LENGTH, GET_BIT, SET_BIT, BIT_POSITION, BITSTRING, ``&`` ``|``
``xor`` ``~`` ``<<`` ``>>``. Pattern, width and shift arguments are constants."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.functions.cast import cast_expr
from sluice.expr.nodes import Expr, Lit
from sluice.types import BIT, INT32, INT64, is_bit


def _const(tr, node, ctx, what: str) -> Lit:
    e = tr.expr(node, ctx)
    if not isinstance(e, Lit):
        raise UnsupportedError(f"{what} that is not a constant")
    return e


def _bit_arg(tr, node, ctx) -> Expr:
    e = tr.expr(node, ctx)
    if isinstance(e, Lit) and e.value is None:
        return Lit(None, BIT)
    if e.type.kind == "string" and not is_bit(e.type) and isinstance(e, Lit):
        return cast_expr(e, BIT)
    return e


def _args(n, count: int, name: str) -> list:
    args = list(n.expressions)
    if len(args) != count:
        raise PlanError(f"{name} takes {count} arguments")
    return args


def _simple(op: str, count: int):
    def translate(tr, n, ctx) -> Expr:
        args = _args(n, count, op.upper())
        a = _bit_arg(tr, args[0], ctx)
        if not is_bit(a.type):
            if op in ("bit_count", "octet_length"):
                raise UnsupportedError(f"{op.upper()} of {a.type} (sluice has it for BIT values)")
            raise PlanError(f"{op.upper()} takes a BIT, not {a.type}")
        rest = [tr.expr(x, ctx) for x in args[1:]]
        for r in rest:
            if not (r.type.is_integer or r.type.kind == "null"):
                raise PlanError(f"{op.upper()} takes integers after the BIT, not {r.type}")
        rest = [cast_expr(r, INT64) if r.type.kind != "null" else Lit(None, INT64) for r in rest]
        return E.make_func(op, [a] + rest)
    return translate


def bit_length(tr, n: exp.BitLength, ctx) -> Expr:
    """BIT_LENGTH of a BIT (its bits) or of a VARCHAR (its UTF-8 bytes times 8)."""
    a = tr.expr(n.this, ctx)
    if a.type.kind == "null":
        return Lit(None, INT64)
    if a.type.kind != "string":
        raise PlanError(f"BIT_LENGTH takes a BIT or a VARCHAR, not {a.type}")
    return E.make_func("bit_length", [a])


def get_bit(tr, n: exp.Getbit, ctx) -> Expr:
    a = _bit_arg(tr, n.this, ctx)
    i = tr.expr(n.expression, ctx)
    if not is_bit(a.type):
        raise UnsupportedError(f"GET_BIT of {a.type}")
    if not (i.type.is_integer or i.type.kind == "null"):
        raise PlanError(f"GET_BIT takes an integer index, not {i.type}")
    return E.make_func("get_bit", [a, cast_expr(i, INT64) if i.type.kind != "null" else Lit(None, INT64)])


def bit_position(tr, n, ctx) -> Expr:
    sub_node, b_node = _args(n, 2, "BIT_POSITION")
    sub = _const(tr, sub_node, ctx, "BIT_POSITION with a pattern")
    b = _bit_arg(tr, b_node, ctx)
    if sub.value is None or (isinstance(b, Lit) and b.value is None):
        return Lit(None, INT32)
    pattern = str(sub.value)
    if set(pattern) - {"0", "1"}:
        raise PlanError(f"Invalid character encountered in string -> bit conversion: '{(set(pattern) - {'0', '1'}).pop()}'")
    if not is_bit(b.type):
        raise PlanError(f"BIT_POSITION takes a BIT, not {b.type}")
    return E.make_func("bit_position", [b], (pattern or "0",))


def bitstring(tr, n, ctx) -> Expr:
    s_node, w_node = _args(n, 2, "BITSTRING")
    s = tr.expr(s_node, ctx)
    w = _const(tr, w_node, ctx, "BITSTRING with a length")
    if w.value is None or (isinstance(s, Lit) and s.value is None):
        return Lit(None, BIT)
    if s.type.kind != "string" or not w.type.is_integer:
        raise PlanError("BITSTRING takes a bit string and an integer length")
    return E.make_func("bitstring", [s], (int(w.value),))


def _bitwise(op: str):
    def translate(tr, n, ctx) -> Expr:
        if isinstance(n, exp.BitwiseNot):
            return E.make_func(op, [_bit_arg(tr, n.this, ctx)])
        a, b = _bit_arg(tr, n.this, ctx), _bit_arg(tr, n.expression, ctx)
        if op == "bit_shift":
            if not is_bit(a.type):
                raise UnsupportedError(f"bitwise operators on {a.type} (sluice has them for BIT values)")
            k = b if isinstance(b, Lit) else None
            if k is None or not (k.type.is_integer or k.value is None):
                raise UnsupportedError("shifting a BIT by a count that is not a constant integer")
            if k.value is None:
                return Lit(None, BIT)
            return E.make_func("bit_shift", [a], (int(k.value), isinstance(n, exp.BitwiseLeftShift)))
        return E.make_func(op, [a, b])
    return translate


CLASS_CALLS = {exp.BitLength: bit_length, exp.Getbit: get_bit, exp.BitwiseAnd: _bitwise("bit_and"),
               exp.BitwiseOr: _bitwise("bit_or"), exp.BitwiseXor: _bitwise("bit_xor"),
               exp.BitwiseNot: _bitwise("bit_not"), exp.BitwiseLeftShift: _bitwise("bit_shift"),
               exp.BitwiseRightShift: _bitwise("bit_shift")}
NAMED_CALLS = {"bit_count": _simple("bit_count", 1), "octet_length": _simple("octet_length", 1),
               "set_bit": _simple("set_bit", 3), "bit_position": bit_position, "bitstring": bitstring}
