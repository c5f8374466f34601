"""DECIMAL_AVERAGE's result from SUM's state: a group's exact sum divided by its count, rounded
half to even, in the argument's own DECIMAL type (DuckDB's: 2.5 gives 2, 3.5 gives 4).

The sum is SUM's exact (hi, lo) state -- ``hi * 2^32 + lo``, wider than int64 when it must be --
so the division is done in two steps of int64 arithmetic: ``hi`` by the count, then the
remainder's next 32 bits with ``lo``. The quotient always fits (an average lies between the
values); a count above 2^31 would overflow the second step and is refused.
"""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import UnsupportedError
from sluice.types import LType

_LOW = 4294967296  # 2^32


def rounded_average(hi: torch.Tensor, lo: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """``(hi * 2^32 + lo) / n`` rounded half to even (n > 0; a zero count gives 0)."""
    n = n.clamp(min=1)
    if bool((n > 2 ** 31).any()):
        raise UnsupportedError("DECIMAL_AVERAGE of more than 2^31 values in one group")
    qh = torch.div(hi, n, rounding_mode="floor")
    rest = (hi - qh * n) * _LOW + lo  # in [0, n * 2^32): fits
    ql = torch.div(rest, n, rounding_mode="floor")
    q = qh * _LOW + ql
    r2 = (rest - ql * n) * 2
    up = (r2 > n) | ((r2 == n) & (q % 2 != 0))
    return q + up.to(torch.int64)


def decimal_average(acc, state: dict[str, Column], out_type: LType) -> Column:
    """DECIMAL_AVERAGE per group from SUM's accumulator ``acc`` and its merged ``state``."""
    n = acc._n(state)
    nonnull = n > 0
    q = rounded_average(state[acc.name("hi")].data, state[acc.name("lo")].data, n)
    return Column(q, out_type, None if bool(nonnull.all()) else nonnull)
