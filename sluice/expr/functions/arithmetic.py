"""Arithmetic: + - * / %, unary minus, ABS and ROUND over integers, decimals (scaled int64),
floats, dates (+- days) and timestamps (+- microseconds, what INTERVAL arithmetic lowers to).

Overflow raises, as in DuckDB: integer and decimal results are checked row by row (on the
CPU usually proved impossible by one min/max per operand instead)."""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import PlanError, UnsupportedError
from sluice.kernels.bounds import max_abs, remember
from sluice.kernels.checks import fail_if
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.registry import register
from sluice.expr.functions.common import I64_MAX, and_valid, fold_literal, numeric_pair, to_type
from sluice.types import DATE, FLOAT64, INT64, INTERVAL, TIMESTAMP, TIMESTAMPTZ, LType, common_numeric, decimal
from sluice.expr.nodes import Lit


def bind_arith(op: str):
    def bind(args, params):
        a, b = args
        ta, tb = a.type, b.type
        if ta.kind == "interval" or tb.kind == "interval":
            if op == "+" and ta.kind == "interval" and tb.is_temporal:
                a, b, ta, tb = b, a, tb, ta
            if op in ("+", "-") and ta.is_temporal and tb.kind == "interval":
                if ta.kind == "date":  # DuckDB: a date +- an interval is a timestamp
                    a, ta = cast_expr(a, TIMESTAMP), TIMESTAMP
                return [a, b], ta
            if ta.kind == tb.kind == "interval" and op in ("+", "-"):
                raise UnsupportedError("adding or subtracting INTERVAL values (DuckDB keeps their days and "
                                       "times apart; sluice's intervals are timestamp differences)")
            raise PlanError(f"cannot apply {op} to {ta} and {tb}")
        if ta.is_timestamp or tb.is_timestamp:
            if op in ("+", "-") and ta.is_timestamp and tb.is_integer:
                return [a, b], ta
            if ta.is_temporal and tb.is_temporal and op == "-":
                # an INTERVAL; a date is its midnight, TIMESTAMPTZ meets TIMESTAMP in UTC
                t = TIMESTAMPTZ if "timestamptz" in (ta.kind, tb.kind) else TIMESTAMP
                a = a if ta == t else cast_expr(a, t)
                b = b if tb == t else cast_expr(b, t)
                return [a, b], INTERVAL
            raise PlanError(f"cannot apply {op} to {ta} and {tb}")
        if ta.kind == "date" or tb.kind == "date":
            if op in ("+", "-") and ta.kind == "date" and tb.is_integer:
                return [a, b], DATE
            if op == "+" and tb.kind == "date" and ta.is_integer:
                return [b, a], DATE
            if op == "-" and ta.kind == "date" and tb.kind == "date":
                return [a, b], INT64
            raise PlanError(f"cannot apply {op} to {ta} and {tb}")
        if not (ta.is_numeric and tb.is_numeric):
            if ta.kind == "string" and tb.kind == "string" and op == "+":
                raise PlanError("use || to concatenate strings")
            raise PlanError(f"cannot apply {op} to {ta} and {tb}")
        if op == "/":  # DOUBLE, but REAL stays REAL as in DuckDB (2e38::REAL / 0.1 is inf)
            t = (common_numeric(ta, tb) if "float32" in (ta.kind, tb.kind)
                 and "float64" not in (ta.kind, tb.kind) else FLOAT64)
            return [fold_literal(a, t), fold_literal(b, t)], t
        if op == "*" and ta.kind == "decimal" and tb.kind == "decimal":
            p = ta.precision + tb.precision if ta.precision and tb.precision else 0
            if not p or p > 18:  # the product may pass 64 bits: a literal's trailing zeros go
                a, ta = _trimmed(a)
                b, tb = _trimmed(b)
                p = ta.precision + tb.precision if ta.precision and tb.precision else 0
            return [a, b], decimal(ta.scale + tb.scale, p if p <= 38 else 0)
        if op == "*" and (ta.kind == "decimal") != (tb.kind == "decimal") and not (ta.is_float or tb.is_float):
            return [a, b], decimal(max(ta.scale, tb.scale))
        t = common_numeric(ta, tb)  # INTEGER * INTEGER too, overflowing as in DuckDB
        if t.kind == "decimal" and op in ("+", "-") and t.precision:
            t = decimal(t.scale, t.precision + 1 if t.precision < 38 else 0)  # room for the carry
        # (every operation here converts both operands to t: numeric_pair in arith)
        return [fold_literal(a, t), fold_literal(b, t)], t
    return bind


def _trimmed(e):
    """A decimal literal without the trailing zeros of its digits (``0.0001000000`` is
    ``0.0001``: scale 4, not 10), so that a product with it keeps 6 fewer decimals. sluice's
    decimals are 64-bit (DuckDB's reach 38 digits): TPC-H q11's ``sum(...) * 0.0001000000``
    at SF 10 is 8e7 with 12 decimals, past 64 bits, and 8e7 with 6 once the literal is trimmed.
    The value is the same; the product shows fewer decimal places than DuckDB's."""
    if not isinstance(e, Lit) or e.value is None or e.type.kind != "decimal" or not e.type.scale:
        return e, e.type
    v, s = int(e.value), e.type.scale
    while s and v % 10 == 0:
        v, s = v // 10, s - 1
    if s == e.type.scale:
        return e, e.type
    t = decimal(s, max(1, e.type.precision - (e.type.scale - s)) if e.type.precision else 0)
    return Lit(v, t), t


def _register_arith(op: str):
    register(op, bind=bind_arith(op), operands=True)(arith)


def arith(e, args, chunk) -> Column:
    a, b = args
    t = e.type
    valid = and_valid(a.valid, b.valid)
    op = e.op
    if t.is_timestamp or t.kind == "interval":  # timestamp +- microseconds, timestamp - timestamp
        x, y = a.data.to(torch.int64), b.data.to(torch.int64)
        r = x + y if op == "+" else x - y
        bad = _add_overflow(x, y, r, op)
        if bad is not None:
            fail_if(bad, "timestamp out of range" if t.is_timestamp else "interval out of range", valid)
        return Column(r, t, valid)
    if t.kind == "date" or a.type.kind == "date":
        x = a.data.to(torch.int64)
        y = b.data.to(torch.int64)
        r = x + y if op == "+" else x - y
        if t.kind == "date":
            fail_if((r < -(2 ** 31)) | (r >= 2 ** 31), "date out of range", valid)
        return Column(r.to(t.torch_dtype), t, valid)
    if op == "/":
        # IEEE semantics, as DuckDB: x/0 is +-inf, 0/0 is NaN.
        x = to_type(a, t)
        y = to_type(b, t)
        return Column(x / y, t, valid)
    if op == "*" and t.kind == "decimal":
        # decimal*decimal has scale s1+s2; decimal*int keeps the decimal's scale.
        x, y = a.data.long(), b.data.long()
        r = x * y
        bad = _mul_overflow(x, y, r)
        if bad is not None:
            # DuckDB's product has up to 38 digits and answers: past 64 bits, a limit of
            # sluice's, refused (``bigint_col * 0.5`` near 2**62), not an overflow of SQL's
            fail_if(bad, "a decimal product beyond 18 digits (sluice's decimals are 64-bit; DuckDB's "
                    "reach 38): CAST an operand to DOUBLE", valid, UnsupportedError)
        return Column(r, t, valid)
    x, y = numeric_pair(a, b, t)
    if op in ("+", "-"):
        r = x + y if op == "+" else x - y
        bad = _add_overflow(x, y, r, op) if t.is_integer or t.kind == "decimal" else None
        if bad is not None:
            what = "addition" if op == "+" else "subtraction"
            fail_if(bad, f"overflow in {what} of {t} values (out of range)", valid)
    elif op == "*":
        r = x * y
        bad = _mul_overflow(x, y, r) if t.is_integer else None
        if bad is not None:
            fail_if(bad, f"overflow in multiplication of {t} values (out of range)", valid)
    else:  # %
        if t.is_float:
            r = torch.fmod(x, y)
        else:
            zero = y == 0
            fail_if(zero, "division by zero in %", valid)  # as DuckDB (a float % 0 is NaN)
            r = torch.fmod(x, torch.where(zero, torch.ones_like(y), y))
    return Column(r, t, valid)


for _op in ("+", "-", "*", "/", "%"):
    _register_arith(_op)


def _max_abs(x: torch.Tensor) -> int:
    return max_abs(x)


def _add_overflow(x: torch.Tensor, y: torch.Tensor, r: torch.Tensor, op: str) -> torch.Tensor | None:
    """Rows where ``r = x + y`` (or ``x - y``) wrapped around (None: provably none did).

    On the CPU one min/max per operand usually proves it; otherwise, per row, a sum wrapped
    iff its sign differs from both operands' (a difference: iff the operands' signs differ and
    the result's differs from the first's)."""
    if x.device.type == "cpu" and x.numel() and y.numel():
        bound = _max_abs(x) + _max_abs(y)
        if bound < 2 ** (torch.iinfo(r.dtype).bits - 1):
            remember(r, bound)
            return None
    if op == "+":
        return ((x ^ r) & (y ^ r)) < 0
    return ((x ^ y) & (x ^ r)) < 0


def _mul_overflow(x: torch.Tensor, y: torch.Tensor, r: torch.Tensor) -> torch.Tensor | None:
    """Rows where the integer product ``r = x * y`` wrapped around (None: provably none did).

    int64: on the CPU one min/max per operand usually proves that no product reaches 2**62;
    otherwise (and always on a GPU, where reading a bound would stall the stream) per row:
    the double product ``p`` has the true sign and a magnitude within 2**-52 of the truth, and
    between 2**62 and 1.5 * 2**63 a product wrapped iff ``r``'s sign differs from ``p``'s."""
    if r.dtype == torch.int64:
        if x.device.type == "cpu" and x.numel() and y.numel():
            bound = _max_abs(x) * _max_abs(y)
            if bound < 2 ** 62:
                remember(r, bound)
                return None
        p = x.double() * y.double()
        mag = p.abs()
        return (mag > 1.5 * 2.0 ** 63) | ((mag >= 2.0 ** 62) & ((r < 0) != (p < 0)))
    info = torch.iinfo(r.dtype)
    wide = x.long() * y.long()
    return (wide < info.min) | (wide > info.max)


def _numeric_arg(what: str):
    def result(args, params) -> LType:
        if not args[0].type.is_numeric:
            raise PlanError(f"cannot {what} {args[0].type}")
        return args[0].type
    return result


@register("neg", result=_numeric_arg("negate"))
def neg(e, args, chunk) -> Column:
    a, = args
    if a.type.is_integer or a.type.kind == "decimal":
        fail_if(a.data == torch.iinfo(a.data.dtype).min, f"overflow in negation of {a.type} (out of range)", a.valid)
    return Column(-a.data, a.type, a.valid)


@register("abs", result=_numeric_arg("take ABS of"))
def abs_(e, args, chunk) -> Column:
    a, = args
    if a.type.is_integer or a.type.kind == "decimal":
        fail_if(a.data == torch.iinfo(a.data.dtype).min, f"overflow in ABS of {a.type} (out of range)", a.valid)
    return Column(a.data.abs(), a.type, a.valid)


def _two_product(a: torch.Tensor, b: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (Dekker's product)."""
    def split(v):
        c = 134217729.0 * v  # 2^27 + 1
        hi = c - (c - v)
        return hi, v - hi
    p = a * b
    ah, al = split(a)
    bh, bl = split(torch.full_like(a, b))
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_half_away(x: torch.Tensor, digits: int = 0, even: bool = False) -> torch.Tensor:
    """ROUND of floats as DuckDB 2.0 gives it: the double's exact binary value rounded to
    ``digits`` decimals, halves away from zero. ``0.075`` is 0.07499999999999999722... and
    rounds to 0.07, though ``0.075 * 100`` is exactly 7.5 in floating point: a product or
    quotient that lands on a half is checked against its exact value (Dekker's product)
    before it rounds away. Infinities and NaN stay; a finite value whose result is not
    finite gives back ``x`` (0 for negative ``digits``: ``round(42.0, -1000)`` is 0). ``even``:
    an exact half goes to the even neighbour instead (ROUND_EVEN)."""
    v = x.double()
    m = 10.0 ** abs(digits) if abs(digits) <= 308 else float("inf")
    exact = abs(digits) <= 22  # 10^22 is the largest power of ten a double holds exactly
    if digits >= 0:
        y = v * m
        _, err = _two_product(v, m) if exact else (None, torch.zeros_like(v))  # y + err == v * m
    else:
        y = v / m
        p, e = _two_product(y, m) if exact else (None, None)
        err = ((v - p) - e) if exact else torch.zeros_like(v)  # sign of v - y * m: of the exact quotient
    t = torch.trunc(y)
    frac = (y - t).abs()
    up = (frac > 0.5) | ((frac == 0.5) & ~(torch.sign(err) * torch.sign(y) < 0))
    if even:  # an exact half (no error left): the even one of t and t +- 1
        up = torch.where((frac == 0.5) & (err == 0), torch.fmod(t, 2) != 0, up)
    r = t + torch.sign(y) * up.double()
    r = r / m if digits >= 0 else r * m
    # not finite: x itself, or for negative digits 0 where it is NaN (42 / 10^1000 * 10^1000)
    out = torch.where(torch.isfinite(r) | ~torch.isfinite(v), r,
                      v if digits >= 0 else torch.where(torch.isnan(r), torch.zeros_like(v), v))
    # The sign of x, also on a zero: round(-0.4) and round(-0.0) are -0.0 in DuckDB (t + 0.0
    # above made them +0.0, and x / round(f) then an infinity of the other sign).
    return torch.where(torch.isfinite(v), torch.copysign(out, v), v).to(x.dtype)


def _round_type(args, params) -> LType:
    """DuckDB's ROUND keeps a decimal's scale down to the digits asked for: ``round(104.35, 1)``
    is a DECIMAL(5,1), ``round(104.35)`` a DECIMAL(5,0); other numbers keep their type."""
    t = _numeric_arg("ROUND")(args, params)
    digits = params[0] if params else 0
    return decimal(max(0, min(digits, t.scale))) if t.kind == "decimal" else t


@register("round", result=_round_type)
def round_(e, args, chunk) -> Column:
    a, = args
    digits = e.params[0] if e.params else 0
    if a.type.is_float:
        return Column(_round_half_away(a.data, digits), a.type, a.valid)
    scale = a.type.scale if a.type.kind == "decimal" else 0
    if (a.type.kind == "decimal" or a.type.is_integer) and digits < scale:
        # Half away from zero on the scaled integers: |x| + f/2, floored to a multiple of f.
        if scale - digits > 18:
            return Column(torch.zeros_like(a.data), e.type, a.valid)
        f = 10 ** (scale - digits)
        x = a.data.long()
        q = torch.div(x.abs() + f // 2, f, rounding_mode="floor")
        fail_if(q > I64_MAX // f, f"ROUND result out of range for {a.type}", a.valid)
        r = (q * f * torch.sign(x)).to(a.data.dtype)
        if a.type.is_integer:
            info = torch.iinfo(a.data.dtype)
            fail_if((q * f > info.max), f"ROUND result out of range for {a.type}", a.valid)
        if e.type.kind == "decimal" and e.type.scale < scale:  # the result's own scale
            r = torch.div(r, 10 ** (scale - e.type.scale), rounding_mode="trunc")
        return Column(r, e.type, a.valid)
    return a
