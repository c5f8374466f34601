"""TIME_BUCKET(width, date | timestamp [, offset | origin]): the start of the bucket of ``width``
holding each value, by DuckDB's rules, over int64 microseconds and months as tensors.

A width is either whole months (buckets counted in months from the origin's month, the result
the 1st of a month; a DATE is bucketed from its own year and month) or days and microseconds
(buckets of that many microseconds from the origin; a DATE becomes a TIMESTAMP first, and the
result a DATE again, its day). The origin defaults to 2000-01-03 00:00 (a Monday) for
microseconds and to 2000-01 for months; an offset is subtracted before bucketing and added
back after. Infinite values stay as they are. Where DuckDB's int64 microseconds or int32
months overflow, or a DATE lies outside TIMESTAMP's range, the same error is raised here.
The translator (``sql/temporal_calls.py``) reads the constant width, offset and origin.
"""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.registry import register
from sluice.kernels import dates
from sluice.kernels.checks import fail_if
from sluice.kernels.infinite import infinite_mask
from sluice.types import DAY_US

#: 2000-01-03 00:00:00 in microseconds since the epoch, and 2000-01 in months since 1970-01.
DEFAULT_ORIGIN_US = 946_857_600_000_000
DEFAULT_ORIGIN_MONTHS = 360
_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1
_I32_MIN, _I32_MAX = -2 ** 31, 2 ** 31 - 1
#: The days of TIMESTAMP's first and last dates (290309-12-22 BC and 294247-01-10).
_TS_FIRST_DAY, _TS_LAST_DAY = -106_751_991, 106_751_991


def _trunc_mod(a: int, b: int) -> int:
    """C's ``a % b`` (the remainder takes ``a``'s sign)."""
    r = abs(a) % b
    return -r if a < 0 else r


def _bind(args, params):
    a, = args
    if a.type.kind not in ("date", "timestamp"):
        raise PlanError(f"TIME_BUCKET needs a DATE or TIMESTAMP, got {a.type}")
    return list(args), a.type


def _micros_of_dates(days: torch.Tensor, valid) -> torch.Tensor:
    """DATEs as TIMESTAMP microseconds (DuckDB's cast: a date outside TIMESTAMP's range fails)."""
    d = days.to(torch.int64)
    fail_if((d < _TS_FIRST_DAY) | (d > _TS_LAST_DAY), "Date out of range for a TIMESTAMP in TIME_BUCKET", valid)
    return d * DAY_US


def _bucket_micros(ts: torch.Tensor, width: int, origin: int, valid) -> torch.Tensor:
    """DuckDB's WidthConvertibleToMicrosCommon: floor((ts - origin % width) / width) * width + that."""
    origin = _trunc_mod(origin, width)
    fail_if(ts < _I64_MIN + origin if origin > 0 else ts > _I64_MAX + origin,
            "Overflow in subtraction of INT64 in TIME_BUCKET", valid)
    shifted = ts - origin
    q = torch.div(shifted, width, rounding_mode="floor")
    fail_if(q < _I64_MIN // width, "Overflow in subtraction of INT64 in TIME_BUCKET", valid)
    out = q * width
    if origin < 0:
        fail_if(out < _I64_MIN - origin, "Overflow in addition of INT64 in TIME_BUCKET", valid)
    return out + origin


def _epoch_months(days: torch.Tensor) -> torch.Tensor:
    y, m, _ = dates.civil_from_days(days)
    return (y - 1970) * 12 + m - 1


def _bucket_months(months: torch.Tensor, width: int, origin: int, valid) -> torch.Tensor:
    """DuckDB's WidthConvertibleToMonthsCommon in int32 months (its overflow errors), as the
    days of each bucket's first day."""
    origin = _trunc_mod(origin, width)
    shifted = months - origin
    fail_if((shifted < _I32_MIN) | (shifted > _I32_MAX), "Overflow in subtraction of INT32 in TIME_BUCKET", valid)
    q = torch.div(shifted, width, rounding_mode="floor")
    out = q * width
    fail_if(out < _I32_MIN, "Overflow in subtraction of INT32 in TIME_BUCKET", valid)
    out = out + origin
    fail_if((out < _I32_MIN) | (out > _I32_MAX), "Overflow in addition of INT32 in TIME_BUCKET", valid)
    year = 1970 + torch.div(out, 12, rounding_mode="floor")
    month = out - torch.div(out, 12, rounding_mode="floor") * 12 + 1
    return dates.days_from_civil_wide(year, month, torch.ones_like(month))


@register("time_bucket", bind=_bind)
def time_bucket(e, args, chunk) -> Column:
    """``e.params``: (mode "micros" | "months" | "error", width (or the error's message), origin
    in microseconds or None for the default, offset in microseconds)."""
    a, = args
    mode, width, origin_us, offset_us = e.params
    if mode == "error":  # a width DuckDB refuses (``width`` holds its message): for any row not NULL
        fail_if(torch.ones_like(a.data, dtype=torch.bool), width, a.valid)
        return Column(a.data, e.type, a.valid)
    is_date = a.type.kind == "date"
    data = a.data
    inf = infinite_mask(data, is_date)
    ok = ~inf if a.valid is None else (a.valid & ~inf)
    raw = torch.where(inf, torch.zeros_like(data), data).to(torch.int64)
    if mode == "months" and is_date and not offset_us:  # a DATE's own year and month
        origin = DEFAULT_ORIGIN_MONTHS if origin_us is None else \
            int(_epoch_months(torch.tensor([origin_us // DAY_US]))[0])
        days = _bucket_months(_epoch_months(raw), width, origin, ok)
        fail_if((days <= -_I32_MAX) | (days >= _I32_MAX), "Date out of range in TIME_BUCKET", ok)
        out = days.to(data.dtype)
    else:
        ts = _micros_of_dates(raw, ok) if is_date else raw
        if offset_us:
            fail_if(ts < _I64_MIN + offset_us if offset_us > 0 else ts > _I64_MAX + offset_us,
                    "Date out of range in TIME_BUCKET", ok)
            ts = ts - offset_us
        if mode == "micros":
            res = _bucket_micros(ts, width, DEFAULT_ORIGIN_US if origin_us is None else origin_us, ok)
        else:
            origin = DEFAULT_ORIGIN_MONTHS if origin_us is None else \
                int(_epoch_months(torch.tensor([origin_us // DAY_US]))[0])
            days = _bucket_months(_epoch_months(torch.div(ts, DAY_US, rounding_mode="floor")), width, origin, ok)
            fail_if((days < _TS_FIRST_DAY) | (days > _TS_LAST_DAY), "Date out of range in TIME_BUCKET", ok)
            res = days * DAY_US
        if offset_us:
            fail_if(res > _I64_MAX - offset_us if offset_us > 0 else res < _I64_MIN - offset_us,
                    "Date out of range in TIME_BUCKET", ok)
            res = res + offset_us
        out = torch.div(res, DAY_US, rounding_mode="floor").to(data.dtype) if is_date else res
    out = torch.where(inf, data, out)
    return Column(out, e.type, a.valid)
