"""EQUI_WIDTH_BINS(min, max, bin_count, nice_rounding): the upper bounds of ``bin_count`` bins of
equal width between two constants, as DuckDB computes them (its ``binning.cpp``, step for step:
integers scaled by 1000 in 128 bits, doubles with the same rounding, timestamps through
calendar intervals made "nice").

Why over constants only: the bins are a function of four scalars, a short list computed once at
translation (the loops run over the list's entries, never over rows); the translator
(:func:`sluice.sql.calls.equi_width_bins`) refuses column arguments. C's integer division and
``std::round`` differ from Python's ``//`` and ``round`` on negative values and halves, so both
are spelled out (:func:`_cdiv`, :func:`_cround`); a bound past BIGINT wraps around as DuckDB's
cast does there (the first is then replaced by ``max``, as in DuckDB)."""

from __future__ import annotations

import calendar
import datetime as _dt
import math

from sluice.errors import ExecutionError

#: DuckDB's limit on ``bin_count``.
MAX_BIN_COUNT = 1_000_000
_HOUR, _MINUTE, _SEC, _DAY = 3_600_000_000, 60_000_000, 1_000_000, 86_400_000_000
_EPOCH = _dt.datetime(1970, 1, 1)


def _cdiv(a: int, b: int) -> int:
    """C's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cround(x: float) -> float:
    """``std::round``: halves away from zero, the sign of a zero kept."""
    if not math.isfinite(x):
        return x
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return math.copysign(float(t), x)


# ------------------------------------------------------------------ integers


def _prev_power_int(x: int) -> int:
    p = 1
    while p < x:
        p *= 10
    return _cdiv(p, 10)


def _round_int(x: int, num: int, ceiling: bool) -> int:
    if num == 0:  # a step under 10 (scaled): DuckDB's 128-bit division by zero gives 0
        return 0
    return _cdiv(x + (num - 1 if ceiling else _cdiv(num, 2)), num) * num


def _nice_int(x: int, step: int) -> int:
    p = _prev_power_int(step)
    two, five = p * 2, p
    if p * 3 <= step:
        two *= 5
    if p * 2 <= step:
        five *= 5
    a, b = _round_int(x, two, False), _round_int(x, five, False)
    return a if abs(x - a) < abs(x - b) else b


def integer_bins(lo: int, hi: int, count: int, nice: bool) -> list[int]:
    """DuckDB's EquiWidthBinsInteger: the bounds from the largest down."""
    factor = 1000
    mn, mx = lo * factor, hi * factor
    step = _cdiv(mx - mn, count)
    if nice:
        new_step = _nice_int(step, step)
        new_max = _round_int(mx, new_step, True)
        if new_max != mn and new_step != 0:
            mx, step = new_max, new_step
        count *= 2
    out: list[int] = []
    b = mx
    while b > mn:
        real = (_cdiv(b, factor) + 2 ** 63) % 2 ** 64 - 2 ** 63  # DuckDB's cast wraps around here
        if out:
            if real < lo or len(out) >= count:
                break
            if real == out[-1]:
                b -= step
                continue
        out.append(real)
        b -= step
    return out


# ------------------------------------------------------------------ doubles


def _prev_power_float(x: float) -> float:
    p = 1.0
    if x < 1:
        while p > x:
            p /= 10
        return p
    while p < x:
        p *= 10
    return p / 10


def _round_float(x: float, num: float, ceiling: bool) -> float:
    r = math.ceil(x / num) * num if ceiling else _cround(x / num) * num
    return r if math.isfinite(r) else x


def _nice_float(x: float, step: float) -> float:
    if x == 0:
        return 0.0
    p = _prev_power_float(step)
    two, five = p * 2, p
    if p * 3 <= step:
        two *= 5
    if p * 2 <= step:
        five *= 5
    a, b = _round_float(x, two, False), _round_float(x, five, False)
    return a if abs(x - a) < abs(x - b) else b


def double_bins(mn: float, input_max: float, count: int, nice: bool) -> list[float]:
    """DuckDB's EquiWidthBinsDouble."""
    if not (math.isfinite(mn) and math.isfinite(input_max)):
        raise ExecutionError("equi_width_bucket does not support infinite or nan as min/max value")
    mx = input_max
    span = mx - mn
    step = span / count if math.isfinite(span) else mx / count - mn / count
    step_power = _prev_power_float(step)
    if nice:
        step = _nice_float(step, step)
        mx = _round_float(input_max, step, True)
        count *= 2
    if step == 0:
        raise ExecutionError("EQUI_WIDTH_BINS: the bins have no width")
    mult = 10 / step_power
    out: list[float] = []
    b = mx
    while b > mn:
        real = _cround(b * mult) / mult if nice else b
        if out and out[-1] == real:
            b -= step
            continue
        if real <= mn or len(out) >= count:
            break
        out.append(real)
        b -= step
    return out


# ------------------------------------------------------------------ timestamps


def _parts(us: int) -> list[int]:
    t = _EPOCH + _dt.timedelta(microseconds=us)
    return [t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond]


def _micros(y: int, mo: int, d: int, h: int, mi: int, s: int, us: int) -> int:
    delta = _dt.datetime(y, mo, d, h, mi, s, us) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _next(p: list[int], level: int) -> None:
    """Add one unit at ``level`` (1 month, 2 day, 3 hour, 4 minute, 5 second), carrying as
    DuckDB's NextMonth / NextDay / ... do (they do not zero the lower fields: the caller does)."""
    if level == 5:
        p[5] += 1
        if p[5] < 60:
            return
        p[5], level = 0, 4
    if level == 4:
        p[4] += 1
        if p[4] < 60:
            return
        p[4], level = 0, 3
    if level == 3:
        p[3] += 1
        if p[3] < 24:
            return
        p[3], level = 0, 2
    if level == 2:
        p[2] += 1
        if p[2] <= calendar.monthrange(p[0], p[1])[1]:
            return
        p[2], level = 1, 1
    p[1] += 1
    if p[1] == 13:
        p[0], p[1] = p[0] + 1, 1


def _nice_timestamp(p: list[int], months: int, days: int, micros: int) -> int:
    y, mo, d, h, mi, s, us = p
    if months >= 12:
        if d > 1 or h or mi or s or us:
            _next(p, 1)
            p[2:] = [1, 0, 0, 0, 0]
    elif months > 0 or days >= 1:
        if h or mi or s or us:
            _next(p, 2)
            p[3:] = [0, 0, 0, 0]
    elif micros >= _HOUR:
        if mi or s or us:
            _next(p, 3)
            p[4:] = [0, 0, 0]
    elif micros >= _MINUTE:
        if s or us:
            _next(p, 4)
            p[5:] = [0, 0]
    elif micros >= _SEC:
        if us:
            _next(p, 5)
            p[6] = 0
    return _micros(*p)


def _round_to(x: int, divisor: int) -> int:
    return _cdiv(x + _cdiv(divisor, 2), divisor) * divisor


def _nice_interval(months: int, days: int, micros: int) -> tuple[int, int, int]:
    if months >= 6:
        return months, 0, 0
    if months > 0 or days >= 5:
        return months, days, 0
    if days > 0 or micros >= 6 * _HOUR:
        return months, days, _round_to(micros, _HOUR)
    if micros >= _HOUR:
        return months, days, _round_to(micros, 15 * _MINUTE)
    if micros >= 10 * _MINUTE:
        return months, days, _round_to(micros, _MINUTE)
    if micros >= _MINUTE:
        return months, days, _round_to(micros, 15 * _SEC)
    if micros >= 10 * _SEC:
        return months, days, _round_to(micros, _SEC)
    return months, days, micros


def _minus_interval(ts: int, months: int, days: int, micros: int) -> int:
    """``ts - INTERVAL``: months back (the day clamped to the month's end), then days, then
    microseconds, as DuckDB subtracts an interval from a timestamp."""
    p = _parts(ts)
    total = p[0] * 12 + (p[1] - 1) - months
    y, mo = divmod(total, 12)
    mo += 1
    if not 1 <= y <= 9999:
        raise ExecutionError("EQUI_WIDTH_BINS: a bound is out of the range of timestamps")
    p[2] = min(p[2], calendar.monthrange(y, mo)[1])
    base = _micros(y, mo, *p[2:])
    return base - days * _DAY - micros


def timestamp_bins(lo: int, hi: int, count: int, nice: bool) -> list[int]:
    """DuckDB's EquiWidthBinsTimestamp over microseconds since the epoch."""
    if not nice:
        return integer_bins(lo, hi, count, False)
    a, b = _parts(lo), _parts(hi)
    d_months = (b[0] - a[0]) * 12 + (b[1] - a[1])
    d_days = b[2] - a[2]
    d_micros = (b[3] - a[3]) * _HOUR + (b[4] - a[4]) * _MINUTE + (b[5] - a[5]) * _SEC + (b[6] - a[6])
    step_months, step_days, step_micros = d_months / count, d_days / count, d_micros / count
    if step_months > 0:
        step_days += (step_months - math.floor(step_months)) * 30
    if step_days > 0:
        step_micros += (step_days - math.floor(step_days)) * _DAY
    months, days, micros = _nice_interval(math.trunc(step_months), math.trunc(step_days), math.trunc(step_micros))
    val = _nice_timestamp(b, months, days, micros)
    if months <= 0 and days <= 0 and micros <= 0:
        months, days, micros = 0, 0, 1
    out: list[int] = []
    while val >= lo and len(out) < count:
        out.append(val)
        val = _minus_interval(val, months, days, micros)
    return out


def equi_width_bins(kind: str, lo, hi, count: int, nice: bool) -> list:
    """The bins' upper bounds in ascending order, the last one ``hi`` or above; ``kind`` is
    "integer", "double" or "timestamp" (microseconds). DuckDB's errors as one line."""
    if hi < lo:
        raise ExecutionError("Invalid input for bin function - max value is smaller than min value")
    if count <= 0:
        raise ExecutionError("Invalid input for bin function - there must be > 0 bins")
    if count > MAX_BIN_COUNT:
        raise ExecutionError(f"Invalid input for bin function - max bin count of {MAX_BIN_COUNT} exceeded")
    if hi == lo:
        return [hi]
    fn = {"integer": integer_bins, "double": double_bins, "timestamp": timestamp_bins}[kind]
    out = fn(lo, hi, count, nice)
    if not out:
        raise ExecutionError("EQUI_WIDTH_BINS: no bins between these bounds")
    if out[0] < hi:
        out[0] = hi
    return out[::-1]
