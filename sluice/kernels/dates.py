"""Vectorised civil-calendar arithmetic on int32 day numbers (days since 1970-01-01).

Uses Howard Hinnant's days_from_civil / civil_from_days algorithms, all integer tensor ops.
"""

from __future__ import annotations

import datetime as _dt

import torch

EPOCH = _dt.date(1970, 1, 1)


def civil_from_days(days: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    z = days.to(torch.int64) + 719468
    era = torch.div(z, 146097, rounding_mode="floor")
    doe = z - era * 146097
    yoe = torch.div(doe - doe // 1460 + doe // 36524 - doe // 146096, 365, rounding_mode="floor")
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = torch.where(mp < 10, mp + 3, mp - 9)
    y = torch.where(m <= 2, y + 1, y)
    return y, m, d


def days_from_civil(y: torch.Tensor, m: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return days_from_civil_wide(y, m, d).to(torch.int32)


def days_from_civil_wide(y: torch.Tensor, m: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """Days since 1970-01-01 of a civil date, as int64 (a year far out passes int32's days)."""
    y = torch.where(m <= 2, y - 1, y)
    era = torch.div(y, 400, rounding_mode="floor")
    yoe = y - era * 400
    mp = torch.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return (era * 146097 + doe - 719468).to(torch.int64)


_MDAYS = torch.tensor([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def add_months(days: torch.Tensor, months: int) -> torch.Tensor:
    """Add calendar months, clamping the day to the month's length (as SQL engines do); int64
    days (100000000 months once wrapped around int32: a wrong date), checked by the caller."""
    y, m, d = civil_from_days(days)
    t = y * 12 + (m - 1) + months
    y2 = torch.div(t, 12, rounding_mode="floor")
    m2 = t - y2 * 12 + 1
    leap = ((y2 % 4 == 0) & (y2 % 100 != 0)) | (y2 % 400 == 0)
    mdays = _MDAYS.to(days.device)[m2] + ((m2 == 2) & leap).to(torch.int64)
    return days_from_civil_wide(y2, m2, torch.minimum(d, mdays))


def days_to_date(days: int) -> _dt.date:
    return EPOCH + _dt.timedelta(days=int(days))
