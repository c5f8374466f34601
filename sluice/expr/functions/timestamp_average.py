"""AVG of TIMESTAMP / TIMESTAMPTZ exactly, as DuckDB averages them (a 128-bit sum of the
microseconds, divided by the count: truncated toward zero, a non-negative one rounded half down): translation sums each value's high
and low 32-bit halves (``timestamp_half``: two int64 sums that cannot overflow for any group
under 2^31 rows) and counts them; ``timestamp_average`` divides the 96-bit total by the count
with int64 tensors only."""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.common import and_valid
from sluice.expr.functions.registry import register
from sluice.kernels.checks import fail_if
from sluice.types import INT64

_SHIFT = 32
_LOW = (1 << _SHIFT) - 1
_MAX_COUNT = 1 << 30  # the middle remainder (below 2 * count * 2^32) stays in int64


def _bind_half(args, params):
    if args[0].type.kind not in ("timestamp", "timestamptz"):
        raise PlanError(f"timestamp_half of {args[0].type}")
    return list(args), INT64


@register("timestamp_half", bind=_bind_half)
def timestamp_half(e, args, chunk) -> Column:
    """The high (floor of microseconds / 2^32) or low (the rest, 0 to 2^32 - 1) half."""
    a, = args
    us = a.data.to(torch.int64)
    return Column(us >> _SHIFT if e.params[0] == "high" else us & _LOW, INT64, a.valid)


def _bind_average(args, params):
    return list(args), params[0]


@register("timestamp_average", bind=_bind_average)
def timestamp_average(e, args, chunk) -> Column:
    """(high * 2^32 + low) / count as DuckDB's DiscreteAverageOperation rounds it, as a value of
    the result type."""
    high, low, count = (a.data.to(torch.int64) for a in args)
    valid = and_valid(*(a.valid for a in args))
    has = count > 0
    if valid is not None:
        has = has & valid.expand(count.shape)
    fail_if(count >= _MAX_COUNT, "AVG of 2^30 or more timestamps in one group", has)
    n = torch.where(has, count, torch.ones_like(count))
    high, low = torch.where(has, high, torch.zeros_like(high)), torch.where(has, low, torch.zeros_like(low))
    q = torch.div(high, n, rounding_mode="floor")
    m = (high - q * n) * (1 << _SHIFT) + low  # 0 <= m < 2 * n * 2^32
    floor = q * (1 << _SHIFT) + torch.div(m, n, rounding_mode="floor")
    rem = m % n  # total = floor * n + rem, 0 <= rem < n
    # DuckDB: the quotient truncated toward zero, then 1 more where the remainder passes n // 2
    # (only a non-negative total's remainder can: a negative one's is not positive)
    result = floor + ((floor < 0) & (rem != 0)).to(torch.int64) + ((floor >= 0) & (rem > n // 2)).to(torch.int64)
    return Column(result.to(e.type.torch_dtype), e.type, has)
