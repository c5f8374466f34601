"""Dates (int32 days since 1970-01-01) and timestamps (int64 microseconds): EXTRACT /
DATE_PART, DATE_TRUNC, DATE_DIFF, STRFTIME and month arithmetic (what ``+ INTERVAL n MONTH``
lowers to), by DuckDB's definitions. Calendar arithmetic is integer tensor ops
(:mod:`sluice.kernels.dates`); only STRFTIME formats, once per distinct value."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor
from sluice.errors import PlanError, UnsupportedError, ExecutionError
from sluice.kernels import dates
from sluice.kernels.infinite import infinity_of
from sluice.expr.functions.registry import register
from sluice.expr.functions.common import and_valid
from sluice.kernels.checks import fail_if
from sluice.types import LType, DATE, DAY_US, FLOAT64, INT64, STRING, split_interval
from sluice.expr.functions.time_format import parse_format, format_times, strptime_format, strptime_parser

#: Microseconds in each sub-day unit of DATE_TRUNC / DATE_DIFF / EXTRACT.
UNIT_US = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000,
           "microsecond": 1}


def _temporal(what: str, result):
    """A bind that wants dates or timestamps; ``result(args, params)`` gives the type."""
    def bind(args, params):
        if any(not a.type.is_temporal for a in args):
            raise PlanError(f"{what} needs dates or timestamps, got {', '.join(str(a.type) for a in args)}")
        return list(args), result(args, params)
    return bind


def days_and_time(c: Column) -> tuple[torch.Tensor, torch.Tensor]:
    """(days since 1970-01-01, microseconds since midnight) of a date or timestamp column."""
    if c.type.kind == "date":
        return c.data.to(torch.int64), torch.zeros_like(c.data, dtype=torch.int64)
    days = torch.div(c.data, DAY_US, rounding_mode="floor")
    return days, c.data - days * DAY_US


#: The fields EXTRACT reads from an INTERVAL (DuckDB's; a timestamp difference has no months).
INTERVAL_FIELDS = ("epoch", "year", "quarter", "month", "day", "hour", "minute", "second", "millisecond",
                   "microsecond")


def _bind_extract(args, params):
    if args[0].type.kind == "interval":
        if params[0] not in INTERVAL_FIELDS:
            raise PlanError(f"EXTRACT({params[0].upper()} ...) of an INTERVAL")
        return list(args), FLOAT64 if params[0] == "epoch" else INT64
    return _temporal("EXTRACT", lambda a, p: FLOAT64 if p[0] == "epoch" else INT64)(args, params)


def interval_parts(us: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(whole days, microseconds of the rest) of an interval, both with its sign."""
    return split_interval(us)


def _extract_interval(e, a: Column) -> Column:
    fld = e.params[0]
    us = a.data.to(torch.int64)
    if fld == "epoch":
        return Column(us.to(torch.float64) / 1e6, e.type, a.valid)
    days, rest = interval_parts(us)
    if fld == "day":
        out = days
    elif fld in ("year", "quarter", "month"):
        out = torch.zeros_like(us)
    elif fld == "hour":
        out = torch.div(rest, UNIT_US["hour"], rounding_mode="trunc")
    elif fld == "minute":
        out = torch.div(torch.fmod(rest, UNIT_US["hour"]), UNIT_US["minute"], rounding_mode="trunc")
    elif fld == "second":
        out = torch.div(torch.fmod(rest, UNIT_US["minute"]), UNIT_US["second"], rounding_mode="trunc")
    elif fld == "millisecond":
        out = torch.div(torch.fmod(rest, UNIT_US["minute"]), 1_000, rounding_mode="trunc")
    else:  # microsecond
        out = torch.fmod(rest, UNIT_US["minute"])
    return Column(out, e.type, a.valid)


@register("extract", bind=_bind_extract)
def extract(e, args, chunk) -> Column:
    """EXTRACT / DATE_PART of a date or timestamp, by DuckDB's definitions (SECOND is whole
    seconds, MILLISECOND and MICROSECOND count from the minute, EPOCH is seconds as a double)."""
    a, = args
    fld = e.params[0]
    if a.type.kind == "interval":
        return _extract_interval(e, a)
    if fld == "epoch":
        us = a.data.to(torch.int64) * (DAY_US if a.type.kind == "date" else 1)
        return Column(us.to(torch.float64) / 1e6, e.type, a.valid)
    days, tod = days_and_time(a)
    y, m, d = dates.civil_from_days(days)
    out = {"year": y, "month": m, "day": d}.get(fld)
    if out is None:
        if fld == "quarter":
            out = (m - 1) // 3 + 1
        elif fld == "dow":
            out = (days + 4) % 7
        elif fld == "isodow":
            out = (days + 3) % 7 + 1
        elif fld == "week":  # ISO 8601: the week of the year that holds this week's Thursday
            thursday = days - (days + 3) % 7 + 3
            ty, _, _ = dates.civil_from_days(thursday)
            jan1 = dates.days_from_civil(ty, torch.ones_like(ty), torch.ones_like(ty)).to(torch.int64)
            out = torch.div(thursday - jan1, 7, rounding_mode="floor") + 1
        elif fld == "doy":
            out = days - dates.days_from_civil(y, torch.ones_like(m), torch.ones_like(m)).to(torch.int64) + 1
        elif fld == "hour":
            out = tod // UNIT_US["hour"]
        elif fld == "minute":
            out = tod // UNIT_US["minute"] % 60
        elif fld == "second":
            out = tod // UNIT_US["second"] % 60
        elif fld == "millisecond":
            out = tod // 1_000 % 60_000
        elif fld == "microsecond":
            out = tod % 60_000_000
        else:
            raise UnsupportedError(f"EXTRACT({fld.upper()} ...)")
    return Column(out.to(torch.int64), e.type, a.valid)


@register("date_trunc", bind=_temporal("DATE_TRUNC", lambda args, params: args[0].type))
def date_trunc(e, args, chunk) -> Column:
    """DATE_TRUNC(unit, x): the first day of its year, quarter, month or ISO week, the day; for
    a timestamp also the hour, minute, second or millisecond it falls in."""
    a, = args
    unit = e.params[0]
    if unit in UNIT_US:  # a timestamp (the translator casts dates)
        step = UNIT_US[unit]
        return Column(torch.div(a.data, step, rounding_mode="floor") * step, e.type, a.valid)
    days, _ = days_and_time(a)
    if unit == "day":
        out = days
    elif unit == "week":  # Monday (1970-01-01 was a Thursday)
        out = days - (days + 3) % 7
    else:
        y, m, _ = dates.civil_from_days(days)
        if unit == "year":
            m = torch.ones_like(m)
        elif unit == "quarter":
            m = (m - 1) // 3 * 3 + 1
        out = dates.days_from_civil(y, m, torch.ones_like(m)).to(torch.int64)
    if a.type.is_timestamp:
        return Column(out * DAY_US, e.type, a.valid)
    return Column(out.to(torch.int32), e.type, a.valid)


@register("date_diff", bind=_temporal("DATE_DIFF", lambda args, params: INT64))
def date_diff(e, args, chunk) -> Column:
    """DATE_DIFF(unit, start, end): unit boundaries crossed from start to end, as DuckDB counts
    (on timestamps, day and longer units count the boundaries of their dates)."""
    start, end = args
    unit = e.params[0]
    valid = and_valid(start.valid, end.valid)
    if unit in UNIT_US:
        us = [c.data.to(torch.int64) * (DAY_US if c.type.kind == "date" else 1) for c in (start, end)]
        step = UNIT_US[unit]
        out = torch.div(us[1], step, rounding_mode="floor") - torch.div(us[0], step, rounding_mode="floor")
        return Column(out, e.type, valid)
    d1, _ = days_and_time(start)
    d2, _ = days_and_time(end)
    if unit == "day":
        out = d2 - d1
    elif unit == "week":
        out = torch.div(d2 - d1, 7, rounding_mode="trunc")
    else:
        y1, m1, _ = dates.civil_from_days(d1)
        y2, m2, _ = dates.civil_from_days(d2)
        if unit == "year":
            out = y2 - y1
        elif unit == "quarter":
            out = (y2 * 4 + (m2 - 1) // 3) - (y1 * 4 + (m1 - 1) // 3)
        else:
            out = (y2 * 12 + m2) - (y1 * 12 + m1)
    return Column(out.to(torch.int64), e.type, valid)


def _bind_strftime(args, params):
    args, t = _temporal("STRFTIME", lambda args, params: STRING)(args, params)
    parse_format(params[0])  # an unknown specifier fails here, before any row is read
    return args, t


@register("strftime", bind=_bind_strftime)
def strftime(e, args, chunk) -> Column:
    """STRFTIME(date or timestamp, format) as DuckDB formats it (sluice.expr.functions.time_format):
    once per distinct value, codes by value; DuckDB's 'infinity' / '-infinity' are that text
    whatever the format."""
    a, = args
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    big = infinity_of(a.type.kind == "date")
    finite = np.where(np.abs(uniq.astype("int64")) == big, 0, uniq.astype("int64"))
    us = finite * (DAY_US if a.type.kind == "date" else 1)
    text = format_times(us, parse_format(e.params[0]), a.type.kind == "timestamptz")
    if len(uniq) and (uniq[0] == -big or uniq[-1] == big):
        text = pc.if_else(pa.array(uniq == big), pa.scalar("infinity"),
                          pc.if_else(pa.array(uniq == -big), pa.scalar("-infinity"), text))
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, e.type, a.valid, text)


def _bind_strptime(args, params):
    if args[0].type.kind != "string":
        raise PlanError(f"STRPTIME needs a string, got {args[0].type}")
    strptime_format(params[0])  # an unknown or unsupported specifier fails here
    return list(args), LType("timestamp")


def _parse_times(entries: pa.Array, fmt: str) -> pa.Array:
    """Each distinct string parsed by Python's strptime, which refuses impossible dates (Arrow's
    turns 2021-02-29 into March 1st); NULL where a string does not match."""
    parse = strptime_parser(fmt)
    return pa.array([None if v is None else parse(v) for v in entries.to_pylist()], pa.timestamp("us"))


@register("strptime", bind=_bind_strptime)
def strptime(e, args, chunk) -> Column:
    """STRPTIME(text, format) / TRY_STRPTIME (``params[1]``: NULL where a string does not
    match): each dictionary entry parsed once (Python, exact), gathered by code."""
    a, = args
    d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
    codes = a.data.long()
    used = torch.unique(codes if a.valid is None else codes[a.valid.expand(codes.shape)])
    entries = d.take(pa.array(used.cpu().numpy(), pa.int64()))
    parsed = _parse_times(entries, e.params[0])
    failed = pc.and_(pc.is_valid(entries), pc.is_null(parsed))
    if not e.params[1] and pc.any(failed).as_py():
        bad = entries.filter(failed)[0].as_py()
        raise ExecutionError(f"STRPTIME: {bad!r} does not match the format {e.params[0]!r}")
    values = host_tensor(pc.fill_null(parsed.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)).to(codes.device)
    ok = host_tensor(pc.is_valid(parsed).to_numpy(zero_copy_only=False)).to(codes.device)
    remap = torch.zeros(max(len(d), 1), dtype=torch.long, device=codes.device)
    remap[used] = torch.arange(len(used), device=codes.device)
    pos = remap[codes]
    if len(used) == 0:
        return Column(torch.zeros(codes.shape, dtype=torch.int64, device=codes.device), e.type,
                      torch.zeros(codes.shape, dtype=torch.bool, device=codes.device))
    return Column(values[pos], e.type, and_valid(a.valid, ok[pos]))


@register("add_months", bind=_temporal("date + INTERVAL MONTH", lambda args, params: args[0].type))
def add_months(e, args, chunk) -> Column:
    a, = args
    if a.type.is_timestamp:
        days, tod = days_and_time(a)
        moved = dates.add_months(days, e.params[0])
        fail_if(moved.abs() > (2 ** 63 - 1) // DAY_US - 1, "timestamp out of range", a.valid)
        return Column(moved * DAY_US + tod, e.type, a.valid)
    moved = dates.add_months(a.data, e.params[0])
    fail_if((moved < -(2 ** 31)) | (moved >= 2 ** 31), "date out of range", a.valid)
    return Column(moved.to(torch.int32), e.type, a.valid)


@register("last_day", bind=_temporal("LAST_DAY", lambda args, params: DATE))
def last_day(e, args, chunk) -> Column:
    """The last day of the month (a DATE, for timestamps too, as DuckDB)."""
    a, = args
    days, _ = days_and_time(a)
    y, m, _ = dates.civil_from_days(days)
    ny, nm = torch.where(m == 12, y + 1, y), torch.where(m == 12, torch.ones_like(m), m + 1)
    first_next = dates.days_from_civil(ny, nm, torch.ones_like(nm)).to(torch.int64)
    return Column((first_next - 1).to(DATE.torch_dtype), DATE, a.valid)


def _bind_make_date(args, params):
    if any(not a.type.is_integer for a in args):
        raise PlanError(f"MAKE_DATE needs integers, got {', '.join(str(a.type) for a in args)}")
    return list(args), DATE


@register("make_date", bind=_bind_make_date)
def make_date(e, args, chunk) -> Column:
    """MAKE_DATE(year, month, day); a day the month does not have is an error, as in DuckDB."""
    y, m, d = (a.data.to(torch.int64) for a in args)
    valid = and_valid(*(a.valid for a in args))
    days = dates.days_from_civil(y, m.clamp(1, 12), d.clamp(1, 31)).to(torch.int64)
    yy, mm, dd = dates.civil_from_days(days)
    bad = (m < 1) | (m > 12) | (d < 1) | (dd != d) | (mm != m) | (yy != y) | (y > 290_000) | (y < -290_000)
    fail_if(bad, "MAKE_DATE: date out of range", valid)
    return Column(days.to(DATE.torch_dtype), DATE, valid)


_DAY_NAMES = pa.array(["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
_MONTH_NAMES = pa.array(["January", "February", "March", "April", "May", "June", "July", "August", "September",
                         "October", "November", "December"])


@register("dayname", "monthname", bind=_temporal("DAYNAME / MONTHNAME", lambda args, params: STRING))
def day_month_name(e, args, chunk) -> Column:
    """DAYNAME / MONTHNAME in English, as DuckDB: codes into a seven (twelve) name dictionary."""
    a, = args
    days, _ = days_and_time(a)
    if e.op == "dayname":
        codes, names = (days + 4) % 7, _DAY_NAMES
    else:
        codes, names = dates.civil_from_days(days)[1] - 1, _MONTH_NAMES
    return Column(codes.to(torch.int32), STRING, a.valid, names)
