"""Numeric functions beyond arithmetic: FLOOR / CEIL / TRUNC, SQRT, CBRT, LN, LOG, EXP, POWER,
SIGN, integer division ``//``, ISNAN / ISINF / ISFINITE -- with DuckDB's result types.

FLOOR, CEIL and TRUNC keep a decimal's precision at scale 0 and give a DOUBLE for integers and
floats (DuckDB 2.0). The transcendental functions are DOUBLE and follow IEEE outside their
domain as DuckDB does (``SQRT(-1)`` and ``LN(-1)`` are NaN, ``LN(0)`` is -inf, ``POWER(10,
400)`` is inf). ``a // b`` truncates toward zero for integers and raises on a zero divisor;
for other numbers it is ``/``."""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.kernels.checks import fail_if
from sluice.kernels.infinite import infinite_mask
from sluice.expr.functions.registry import register
from sluice.expr.functions.common import and_valid, numeric_pair, to_type
from sluice.types import BOOL, FLOAT64, LType, common_numeric, decimal

INT8 = LType("int8")


def _numbers(args, what: str) -> list:
    for a in args:
        if not a.type.is_numeric:
            raise PlanError(f"cannot take {what} of {a.type}")
    return list(args)


def _bind_rounding(what: str):
    def bind(args, params):
        """DuckDB's types: a decimal of the digits kept (scale 0 for FLOOR / CEIL / TRUNC,
        ``min(n, s)`` for TRUNC(x, n)), REAL stays REAL; integers are DOUBLE for FLOOR / CEIL
        and keep their type for TRUNC."""
        t = _numbers(args, what)[0].type
        digits = params[0] if params else 0
        if t.kind == "decimal":
            return list(args), decimal(max(0, min(digits, t.scale)))
        if t.kind == "float32" or (what == "TRUNC" and t.is_integer):
            return list(args), t
        return list(args), FLOAT64
    return bind


@register("floor", "ceil", bind=_bind_rounding("FLOOR/CEIL"))
@register("trunc", bind=_bind_rounding("TRUNC"))
def rounding(e, args, chunk) -> Column:
    """FLOOR / CEIL / TRUNC to a whole number; TRUNC(x, n) to n digits (toward zero)."""
    a, = args
    digits = e.params[0] if e.params else 0
    if a.type.kind == "decimal" or a.type.is_integer:
        scale = a.type.scale if a.type.kind == "decimal" else 0
        if digits >= scale:
            return Column(a.data.to(e.type.torch_dtype), e.type, a.valid)
        if scale - digits > 18:  # beyond every 64-bit value: all truncate to 0
            return Column(torch.zeros_like(a.data).to(e.type.torch_dtype), e.type, a.valid)
        f = 10 ** (scale - digits)
        mode = {"floor": "floor", "ceil": "floor", "trunc": "trunc"}[e.op]
        x = a.data.to(torch.int64)
        q = -torch.div(-x, f, rounding_mode="floor") if e.op == "ceil" else torch.div(x, f, rounding_mode=mode)
        if e.type.kind != "decimal":  # an integer: back to its own magnitude (TRUNC(1255, -1) is 1250)
            q = q * f
        elif digits < 0:  # a decimal of scale 0: tens, hundreds, ... as whole numbers
            q = q * 10 ** -digits
        return Column(q.to(e.type.torch_dtype), e.type, a.valid)
    fn = {"floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc}[e.op]
    x = a.data if a.type.kind == "float32" else to_type(a, FLOAT64)
    if digits:
        m = 10.0 ** digits
        return Column((fn(x.double() * m) / m).to(e.type.torch_dtype), e.type, a.valid)
    return Column(fn(x).to(e.type.torch_dtype), e.type, a.valid)


def _bind_double(args, params):
    return _numbers(args, "a logarithm, root, power or exponential"), FLOAT64


_UNARY = {"sqrt": torch.sqrt, "ln": torch.log, "log10": torch.log10, "log2": torch.log2, "exp": torch.exp,
          "cbrt": lambda x: torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)}


@register(*_UNARY, bind=_bind_double)
def transcendental(e, args, chunk) -> Column:
    a, = args
    return Column(_UNARY[e.op](to_type(a, FLOAT64)), FLOAT64, a.valid)


@register("power", "log_base", bind=_bind_double)
def binary_double(e, args, chunk) -> Column:
    """POWER(x, y); LOG(b, x) as ln(x) / ln(b)."""
    a, b = args
    x, y = to_type(a, FLOAT64), to_type(b, FLOAT64)
    out = torch.pow(x, y) if e.op == "power" else torch.log(y) / torch.log(x)
    return Column(out, FLOAT64, and_valid(a.valid, b.valid))


@register("sign", bind=lambda args, params: (_numbers(args, "SIGN"), INT8))
def sign(e, args, chunk) -> Column:
    """-1, 0 or 1 (TINYINT, as DuckDB; NaN's sign is 0 there)."""
    a, = args
    s = torch.sign(a.data)
    if s.is_floating_point():
        s = torch.nan_to_num(s, nan=0.0)
    return Column(s.to(torch.int8), INT8, a.valid)


def _bind_int_div(args, params):
    a, b = args
    if not (a.type.is_numeric and b.type.is_numeric):
        raise PlanError(f"cannot apply // to {a.type} and {b.type}")
    if a.type.is_integer and b.type.is_integer:
        return list(args), common_numeric(a.type, b.type)
    return list(args), FLOAT64


@register("int_div", bind=_bind_int_div, operands=True)
def int_div(e, args, chunk) -> Column:
    a, b = args
    valid = and_valid(a.valid, b.valid)
    if not e.type.is_integer:
        x, y = to_type(a, FLOAT64), to_type(b, FLOAT64)
        return Column(x / y, FLOAT64, valid)
    x, y = numeric_pair(a, b, e.type)
    fail_if(y == 0, "division by zero in //", valid)
    info = torch.iinfo(x.dtype)
    fail_if((x == info.min) & (y == -1), f"overflow in // of {e.type} (out of range)", valid)
    # (checks may be deferred -- a GPU, TRY: MIN // -1 traps a CPU as // 0 does, so neither runs)
    safe = torch.where((y == 0) | ((x == info.min) & (y == -1)), torch.ones_like(y), y)
    return Column(torch.div(x, safe, rounding_mode="trunc"), e.type, valid)


def _bind_float_class(args, params):
    """Numbers; for ISINF / ISFINITE also dates and timestamps (DuckDB's 'infinity')."""
    if params == () and len(args) == 1 and args[0].type.is_temporal:
        return list(args), BOOL
    return _numbers(args, "ISNAN/ISINF/ISFINITE"), BOOL


@register("isnan", "isinf", "isfinite", bind=_bind_float_class)
def float_class(e, args, chunk) -> Column:
    a, = args
    x = a.data
    if a.type.is_temporal:
        if e.op == "isnan":
            raise PlanError(f"cannot take ISNAN of {a.type}")
        inf = infinite_mask(x, a.type.kind == "date")
        return Column(inf if e.op == "isinf" else ~inf, BOOL, a.valid)
    if not x.is_floating_point():  # integers and decimals are finite numbers
        v = torch.full(x.shape, e.op == "isfinite", dtype=torch.bool, device=x.device)
    else:
        v = {"isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite}[e.op](x)
    return Column(v, BOOL, a.valid)
