"""DuckDB's 'infinity' and '-infinity' dates and timestamps, kept as DuckDB keeps them.

DuckDB stores +/-infinity as the extremes of the integer range: a DATE's int32 days as
``2**31 - 1`` and ``-(2**31 - 1)``, a TIMESTAMP's int64 microseconds as ``2**63 - 1`` and
``-(2**63 - 1)``; its Parquet export writes those integers as they are (a TIMESTAMP_MS the same
int64 extremes in milliseconds). sluice keeps the same numbers: every value stays one integer, so
comparisons, sorting, grouping, joins (ASOF included), MIN / MAX, spill pages and the exchange
order and match them exactly as DuckDB does (below and above every real date) with no work of
their own. What computes *on* a date's value -- casts, printing, the calendar functions,
arithmetic -- must know them: this module finds them, and the expression evaluator
(:mod:`sluice.expr.evaluate`) answers or refuses functions over them.
"""

from __future__ import annotations

import torch

#: The +infinity of a DATE (int32 days) and of a TIMESTAMP (int64 microseconds); -infinity is
#: its negation (not the type's minimum).
DATE_INFINITY = 2 ** 31 - 1
TIMESTAMP_INFINITY = 2 ** 63 - 1


def infinity_of(is_date: bool) -> int:
    """The +infinity of a DATE (``is_date``) or a TIMESTAMP."""
    return DATE_INFINITY if is_date else TIMESTAMP_INFINITY


def infinite_mask(data: torch.Tensor, is_date: bool) -> torch.Tensor:
    """Per value: +infinity or -infinity."""
    big = infinity_of(is_date)
    return (data == big) | (data == -big)


def maybe_infinite(data: torch.Tensor, is_date: bool) -> bool:
    """Whether ``data`` may hold an infinity: on the host one pass (min and max; a scan's date
    columns, every chunk), on a device True (the caller then masks without a host wait)."""
    if data.device.type != "cpu":
        return True
    if not data.numel():
        return False
    big = infinity_of(is_date)
    lo, hi = torch.aminmax(data)
    return not (-big < int(lo) and int(hi) < big)


def with_infinities(values: torch.Tensor, source: torch.Tensor, source_is_date: bool,
                    is_date: bool) -> torch.Tensor:
    """``values`` (a DATE's or TIMESTAMP's, ``is_date``) with the infinities of ``source`` (of the
    other kind or the same) carried over: +infinity to +infinity, -infinity to -infinity."""
    if not maybe_infinite(source, source_is_date):
        return values
    big_in, big_out = infinity_of(source_is_date), infinity_of(is_date)
    out = torch.where(source == big_in, torch.tensor(big_out, dtype=values.dtype, device=values.device), values)
    return torch.where(source == -big_in, torch.tensor(-big_out, dtype=values.dtype, device=values.device), out)


def widen_infinite(v: torch.Tensor, factor: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seconds or milliseconds since the epoch with DuckDB's infinities (the int64 extremes in
    those units): the values with each infinity replaced by 0, and the mask of infinities."""
    inf = infinite_mask(v, False)
    return torch.where(inf, torch.zeros((), dtype=v.dtype, device=v.device), v), inf
