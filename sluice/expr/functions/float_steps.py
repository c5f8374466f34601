"""ROUND_EVEN / ROUNDBANKERS (halves to the even neighbour) and NEXTAFTER (the next float
toward another), with DuckDB 2.0's types and answers.

ROUND_EVEN of an integer or a decimal rounds its scaled integer exactly: a remainder of
exactly half the step goes to the even quotient, any other rounds as ROUND (half away from
zero). Of a DOUBLE or REAL it rounds the float's exact binary value, as DuckDB 2.0 does:
``2.85`` (2.8500000000000000888...) to 2.9, ``0.15`` (0.1499999999999999944...) to 0.1, only
an exact half (``0.125``, ``2.5``) to the even neighbour.
"""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.common import and_valid
from sluice.expr.functions.arithmetic import _round_half_away, _round_type
from sluice.expr.functions.registry import register
from sluice.kernels.checks import fail_if
from sluice.types import FLOAT64, LType

_FLOAT32 = LType("float32")


def _even_integers(x: torch.Tensor, step: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` (int64) rounded to a multiple of ``step`` (None: 10^19 and more, past int64),
    halves to the even multiple; and where the result leaves int64 (an error)."""
    if step is None:  # |x| < 10^19: a half (5 * 10^18) or more rounds to 10^19, past int64
        too_big = (x >= 5 * 10 ** 18) | (x <= -5 * 10 ** 18)
        return torch.zeros_like(x), too_big & ~((x == 5 * 10 ** 18) | (x == -5 * 10 ** 18))
    q = torch.div(x, step, rounding_mode="trunc")
    r = (x - q * step).abs()
    half = step // 2
    up = (r > half) | ((r == half) & (q % 2 != 0))
    q = q + torch.where(x < 0, -up.to(torch.int64), up.to(torch.int64))
    limit = (2 ** 63 - 1) // step
    return q * step, (q > limit) | (q < -limit)


@register("round_even", result=_round_type)
def round_even(e, args, chunk) -> Column:
    a, = args
    digits = e.params[0]
    t = a.type
    if t.is_float:
        return Column(_round_half_away(a.data, digits, even=True), e.type, a.valid)
    scale = t.scale if t.kind == "decimal" else 0
    if digits >= scale:
        return Column(a.data, e.type, a.valid)
    shift = scale - digits
    step = 10 ** shift if shift <= 18 else None
    r, bad = _even_integers(a.data.to(torch.int64), step)
    if t.is_integer:
        info = torch.iinfo(a.data.dtype)
        bad = bad | (r > info.max) | (r < info.min)
        fail_if(bad, "Overflow in ROUND_EVEN of integer", a.valid)
        return Column(r.to(a.data.dtype), e.type, a.valid)
    fail_if(bad, f"ROUND_EVEN result out of range for {t}", a.valid)
    if e.type.scale < scale:  # the result's own scale (exact: r is a multiple of the step)
        r = torch.div(r, 10 ** (scale - e.type.scale), rounding_mode="trunc")
    return Column(r, e.type, a.valid)


def _bind_nextafter(args, params):
    """DuckDB binds NEXTAFTER(FLOAT, FLOAT) where both are REALs, integers or NULLs (one a
    REAL), else NEXTAFTER(DOUBLE, DOUBLE); other types are no number."""
    for a in args:
        if not (a.type.is_numeric or a.type.kind == "null"):
            raise PlanError(f"NEXTAFTER needs numbers, got {a.type}")
    real = any(a.type.kind == "float32" for a in args) and \
        all(a.type.kind in ("float32", "null") or a.type.is_integer for a in args)
    t = _FLOAT32 if real else FLOAT64
    return [a if a.type == t else cast_expr(a, t) for a in args], t


@register("nextafter", bind=_bind_nextafter)
def nextafter(e, args, chunk) -> Column:
    a, b = args
    return Column(torch.nextafter(a.data, b.data), e.type, and_valid(a.valid, b.valid))
