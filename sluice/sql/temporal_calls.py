"""Dates, timestamps and intervals in expressions: INTERVAL arithmetic (constant amounts, and
column amounts of days down to microseconds), NOW / CURRENT_DATE, MAKE_DATE, DATE_TRUNC,
DATE_DIFF, STRFTIME, EXTRACT and the date-part functions (YEAR(x) ...). A mixin of
:class:`sluice.sql.translate.Translator`, registered by sqlglot class like the rest of
:mod:`sluice.sql.expressions`."""

from __future__ import annotations

import datetime as _dt
import re

from sqlglot import exp

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Expr, Lit
from sluice.sql.expressions import handles
from sluice.sql.literals import _const_str
from sluice.types import DATE, INT32, INT64, INTERVAL, TIMESTAMP, TIMESTAMPTZ

#: Spellings of DATE_TRUNC / DATE_DIFF units.
_TIME_UNITS = {"days": "day", "months": "month", "years": "year", "weeks": "week", "quarters": "quarter",
               "hours": "hour", "minutes": "minute", "seconds": "second", "milliseconds": "millisecond",
               "microseconds": "microsecond", "ms": "millisecond", "us": "microsecond"}

#: Functions of a date or timestamp that are one EXTRACT field.
_DATE_PARTS = {exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Hour: "hour", exp.Minute: "minute",
               exp.Second: "second", exp.DayOfWeek: "dow", exp.DayOfYear: "doy", exp.TimeToUnix: "epoch",
               exp.Quarter: "quarter", exp.Week: "week", exp.DayOfWeekIso: "isodow", exp.DayOfMonth: "day"}
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

_MICROS = {"day": 86_400_000_000, "week": 7 * 86_400_000_000, "hour": 3_600_000_000,
           "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000, "microsecond": 1}


#: The units DATE_TRUNC and DATE_DIFF take.
_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond")


def _unit(n: exp.Expression, default: str) -> str:
    """The unit a DATE_TRUNC / DATE_DIFF names, in its singular spelling."""
    unit = n.args["unit"].name.lower() if n.args.get("unit") is not None else default
    return _TIME_UNITS.get(unit, unit)


class TemporalCalls:
    """Translator methods of dates, timestamps and intervals."""

    def _interval_value(self, iv: exp.Interval) -> Expr:
        """An INTERVAL constant compared with a timestamp difference: its length in
        microseconds (a day is 24 hours, as DuckDB compares intervals); months have no fixed
        length, so they are refused here."""
        k, unit_s = _interval_amount(iv)
        if unit_s not in _MICROS:
            raise UnsupportedError(f"comparing an interval with INTERVAL {k} {unit_s.upper()}")
        return Lit(k * _MICROS[unit_s], INTERVAL)

    @handles(exp.DateBin)
    def _x_time_bucket(self, n: exp.DateBin, ctx) -> Expr:
        """TIME_BUCKET(width, date | timestamp [, offset | origin]) with a constant width and
        third argument (``functions/time_bucket.py``); a NULL one gives NULL, as DuckDB. A width
        of months with days or time, or not above zero, is DuckDB's error; a time zone is refused."""
        if n.args.get("zone") is not None or n.args.get("origin") is not None:
            raise UnsupportedError("TIME_BUCKET with a time zone")
        a = self.expr(n.expression, ctx)
        if a.type.kind == "timestamptz":
            raise UnsupportedError("TIME_BUCKET of a TIMESTAMP WITH TIME ZONE")
        if a.type.kind == "null":
            a = Lit(None, TIMESTAMP)
        if a.type.kind not in ("date", "timestamp"):
            raise PlanError(f"TIME_BUCKET needs a DATE or TIMESTAMP, got {a.type}")
        width = _interval_constant(n.this, "TIME_BUCKET's width")
        third = n.args.get("unit")
        offset_us, origin_us = 0, None
        if third is not None:
            if _is_interval_node(third):
                offset = _interval_constant(third, "TIME_BUCKET's offset")
                if offset is None:
                    return Lit(None, a.type)
                if offset[0]:
                    raise UnsupportedError("TIME_BUCKET with an offset of months")
                offset_us = offset[1] * _MICROS["day"] + offset[2]
            else:
                o = self.expr(third, ctx)
                if not isinstance(o, Lit) or o.type.kind not in ("date", "timestamp", "null"):
                    raise UnsupportedError("TIME_BUCKET with an origin that is not a DATE or TIMESTAMP constant")
                if o.value is None:
                    return Lit(None, a.type)
                raw = E.make_func("cast", [o], (TIMESTAMP,)) if o.type.kind == "date" else o
                if not isinstance(raw, Lit) or abs(int(raw.value)) == 2 ** 63 - 1:  # infinite origin: NULL
                    return Lit(None, a.type)
                origin_us = int(raw.value)
        if width is None:
            return Lit(None, a.type)
        months, days, micros = width
        if months == 0 and days * _MICROS["day"] + micros > 0:
            return E.make_func("time_bucket", [a], ("micros", days * _MICROS["day"] + micros, origin_us, offset_us))
        if months > 0 and days == 0 and micros == 0:
            return E.make_func("time_bucket", [a], ("months", months, origin_us, offset_us))
        # DuckDB's errors, raised by a row that is not NULL (a NULL value's bucket is NULL)
        if isinstance(a, Lit) and a.value is None:
            return Lit(None, a.type)
        why = "Period must be greater than 0" if months == 0 or (days == 0 and micros == 0) else \
            "Month intervals cannot have day or time component"
        return E.make_func("time_bucket", [a], ("error", why, None, 0))

    def _interval_by_column(self, a: Expr, node: exp.Expression, unit_s: str, sign: int, ctx) -> Expr:
        """date / timestamp +- ``INTERVAL (x) unit`` of an integer expression ``x``: days and
        weeks of a date as its day arithmetic, hours down to microseconds as ``x`` times the
        unit's microseconds (an overflow raises, as DuckDB's interval does); a calendar unit
        of a non-constant amount is refused. A NULL amount is a NULL result."""
        x = self.expr(node, ctx)
        if x.type.kind == "null":
            return Lit(None, a.type if a.type.kind != "date" or unit_s in ("day", "week") else TIMESTAMP)
        if not x.type.is_integer:
            raise UnsupportedError(f"INTERVAL of a {x.type} amount")
        op = "+" if sign > 0 else "-"
        if a.type.kind == "date" and unit_s in ("day", "week"):
            days = E.make_func("cast", [x], (INT32,)) if x.type != INT32 else x
            if unit_s == "week":
                days = E.make_arith("*", days, Lit(7, INT32))
            return E.make_arith(op, a, days)
        if unit_s in _MICROS:
            if a.type.kind == "date":
                a = E.make_func("cast", [a], (TIMESTAMP,))
            x = E.make_func("cast", [x], (INT64,)) if x.type != INT64 else x
            return E.make_arith(op, a, E.make_arith("*", x, Lit(_MICROS[unit_s], INT64)))
        raise UnsupportedError(f"INTERVAL with a non-constant number of {unit_s}s")

    def _interval(self, a: Expr, iv: exp.Interval, sign: int, ctx=None) -> Expr:
        """date / timestamp +- INTERVAL: days and weeks keep a date a date (sluice's DATE
        arithmetic; DuckDB would give a TIMESTAMP at midnight, the same instant), months,
        quarters and years move the calendar (clamping the day, as DuckDB), hours down to
        microseconds make a timestamp."""
        if not a.type.is_temporal:
            raise PlanError(f"interval arithmetic needs a date or timestamp, got {a.type}")
        by_column = interval_column_amount(iv)
        if by_column is not None:
            return self._interval_by_column(a, *by_column, sign, ctx)
        k, unit_s = _interval_amount(iv)
        micros = _MICROS
        if a.type.kind == "date" and unit_s in ("day", "week"):
            return E.make_arith("+", a, Lit(sign * k * (7 if unit_s == "week" else 1), INT32))
        if unit_s in micros:
            if a.type.kind == "date":
                a = E.make_func("cast", [a], (TIMESTAMP,))
            return E.make_arith("+", a, Lit(sign * k * micros[unit_s], INT64))
        if unit_s in ("month", "year", "quarter"):
            months = k * {"month": 1, "year": 12, "quarter": 3}[unit_s] * sign
            return E.make_func("add_months", [a], (months,))
        raise UnsupportedError(f"INTERVAL unit {unit_s!r}")

    @handles(exp.CurrentDate, exp.CurrentTimestamp)
    def _x_now(self, n, ctx):
        """The query's start in UTC (sluice's session time zone): a DATE, or a TIMESTAMP WITH
        TIME ZONE as DuckDB's CURRENT_TIMESTAMP / NOW()."""
        now = self.now
        if isinstance(n, exp.CurrentDate):
            return Lit((now.date() - _EPOCH_DATE).days, DATE)
        micros = (now - _EPOCH_UTC) // _dt.timedelta(microseconds=1)
        return Lit(micros, TIMESTAMPTZ)

    @handles(exp.DateFromParts)
    def _x_make_date(self, n, ctx):
        if n.args.get("month") is None and n.args.get("day") is None:  # MAKE_DATE(days since 1970-01-01)
            days = self.expr(n.args["year"], ctx)
            if not days.type.is_integer:
                raise PlanError(f"MAKE_DATE of one argument needs an integer, got {days.type}")
            return E.make_arith("+", Lit(0, DATE), E.make_func("cast", [days], (INT32,)))
        if any(n.args.get(k) is None for k in ("year", "month", "day")):
            raise PlanError("MAKE_DATE needs a year, a month and a day (or one number of days)")
        return E.make_func("make_date", [self.expr(n.args[k], ctx) for k in ("year", "month", "day")])

    @handles(exp.TimestampTrunc, exp.DateTrunc)
    def _x_timestamptrunc(self, n, ctx):
        unit = _unit(n, "")
        if unit not in _UNITS:
            raise UnsupportedError(f"DATE_TRUNC to {unit.upper() or 'this unit'}")
        a = self.expr(n.this, ctx)
        if a.type.kind == "date":  # DuckDB: DATE_TRUNC of a date is a timestamp, whatever the unit
            a = E.make_func("cast", [a], (TIMESTAMP,))
        return E.make_func("date_trunc", [a], (unit,))

    @handles(exp.DateDiff)
    def _x_datediff(self, n, ctx):
        unit = _unit(n, "day")
        if unit not in _UNITS:
            raise UnsupportedError(f"DATE_DIFF in {unit.upper()}")
        return E.make_func("date_diff", [self.expr(n.expression, ctx), self.expr(n.this, ctx)], (unit,))

    @handles(exp.TimeToStr)
    def _x_timetostr(self, n, ctx):
        return E.make_func("strftime", [self.expr(n.this, ctx)], (_const_str(n.args.get("format"), "STRFTIME"),))

    @handles(exp.Extract)
    def _x_extract(self, n, ctx):
        fld = n.this.name.lower()
        return E.make_func("extract", [self.expr(n.expression, ctx)], (fld,))

    @handles(*_DATE_PARTS)
    def _x_date_part(self, n, ctx):
        """YEAR(x), MONTH(x), ..., EPOCH(x): EXTRACT of the field the function names."""
        return E.make_func("extract", [self.expr(n.this, ctx)], (_DATE_PARTS[type(n)],))


def _interval_unit(unit_s: str) -> str:
    unit_s = {"microseconds": "microsecond", "us": "microsecond", "ms": "millisecond"}.get(unit_s, unit_s)
    return unit_s.rstrip("s")


def _amount_text(qty: exp.Expression) -> str | None:
    """The amount of ``INTERVAL 3 HOUR``, ``INTERVAL '3 hours'``, ``INTERVAL (-3) HOUR`` as
    written; None when it is no constant."""
    while isinstance(qty, exp.Paren):
        qty = qty.this
    if isinstance(qty, exp.Neg) and isinstance(qty.this, exp.Literal) and not qty.this.is_string:
        return "-" + qty.this.name
    return qty.name if isinstance(qty, exp.Literal) else None


def interval_column_amount(iv: exp.Interval) -> tuple[exp.Expression, str] | None:
    """(the amount's expression, singular unit) of ``INTERVAL (x) HOUR`` whose amount is no
    constant; None when it is one."""
    if _amount_text(iv.this) is not None:
        return None
    unit = iv.args.get("unit")
    return iv.this, _interval_unit((unit.name if unit is not None else "").lower())


def _interval_amount(iv: exp.Interval) -> tuple[int, str]:
    """(amount, singular unit) of ``INTERVAL 3 HOUR`` / ``INTERVAL '3 hours'``."""
    unit = iv.args.get("unit")
    unit_s = (unit.name if unit is not None else "").lower()
    text = _amount_text(iv.this)
    if text is None:
        raise UnsupportedError("INTERVAL with a non-constant amount here")
    parts = text.split()
    if len(parts) == 2 and not unit_s:
        text, unit_s = parts[0], parts[1].lower()
    try:
        k = int(text)
    except ValueError:
        raise PlanError(f"bad interval amount {text!r}") from None
    unit_s = _interval_unit(unit_s)
    # DuckDB keeps an interval's months and days in 32 bits and its microseconds in 64: an amount
    # beyond them is a conversion error there (it overflowed a tensor here: an internal error)
    calendar = {"day": 1, "week": 7, "month": 1, "quarter": 3, "year": 12}.get(unit_s)
    if (calendar is not None and not -2 ** 31 <= k * calendar < 2 ** 31) or \
            (unit_s in _MICROS and not -2 ** 63 <= k * _MICROS[unit_s] < 2 ** 63):
        raise ExecutionError(f"INTERVAL {k} {unit_s.upper()} is out of range")
    return k, unit_s


#: DuckDB's interval text units: months, days or microseconds each.
_TEXT_UNITS = {"year": (12, 0, 0), "y": (12, 0, 0), "yr": (12, 0, 0), "quarter": (3, 0, 0), "month": (1, 0, 0),
               "mon": (1, 0, 0), "week": (0, 7, 0), "w": (0, 7, 0), "day": (0, 1, 0), "d": (0, 1, 0),
               "hour": (0, 0, 3_600_000_000), "h": (0, 0, 3_600_000_000), "minute": (0, 0, 60_000_000),
               "min": (0, 0, 60_000_000), "m": (0, 0, 60_000_000), "mins": (0, 0, 60_000_000), "second": (0, 0, 1_000_000),
               "sec": (0, 0, 1_000_000), "s": (0, 0, 1_000_000), "millisecond": (0, 0, 1_000),
               "ms": (0, 0, 1_000), "microsecond": (0, 0, 1), "us": (0, 0, 1)}


def _is_interval_node(node: exp.Expression) -> bool:
    return isinstance(node, exp.Interval) or (isinstance(node, exp.Cast) and node.to.is_type("interval"))


def interval_text(text: str) -> tuple[int, int, int]:
    """(months, days, microseconds) of DuckDB's interval text ``'1 month 2 days'``,
    ``'1 day -3600 seconds'``: integer amounts, a minus sign attached, each with its unit;
    other forms ('1.5 days', '01:00:00') are refused."""
    parts = re.findall(r"\s*(-?\d+)\s*([a-zA-Z]+)\s*", text)
    if not parts or "".join(a + u for a, u in parts) != re.sub(r"\s+", "", text):
        raise UnsupportedError(f"the interval {text!r} (sluice reads integer amounts with units)")
    total = [0, 0, 0]
    for amount, unit in parts:
        unit = unit.lower()
        unit = unit if unit in _TEXT_UNITS else unit[:-1] if unit.endswith("s") and unit[:-1] in _TEXT_UNITS else None
        if unit is None:
            raise UnsupportedError(f"the interval {text!r} (sluice reads integer amounts with units)")
        for k, per in enumerate(_TEXT_UNITS[unit]):
            total[k] += int(amount) * per
    if not (-2 ** 31 <= total[0] < 2 ** 31 and -2 ** 31 <= total[1] < 2 ** 31 and -2 ** 63 <= total[2] < 2 ** 63):
        raise ExecutionError(f"interval {text!r} out of range")
    return total[0], total[1], total[2]


def _interval_constant(node: exp.Expression, what: str) -> tuple[int, int, int] | None:
    """An interval constant as (months, days, microseconds); None for a NULL."""
    if isinstance(node, exp.Cast) and node.to.is_type("interval"):
        if isinstance(node.this, exp.Null):
            return None
        if isinstance(node.this, exp.Literal) and node.this.is_string:
            return interval_text(node.this.this)
    if isinstance(node, exp.Interval):
        k, unit_s = _interval_amount(node)
        if unit_s not in _TEXT_UNITS:
            raise UnsupportedError(f"{what} of unit {unit_s.upper()}")
        return tuple(k * per for per in _TEXT_UNITS[unit_s])
    if isinstance(node, exp.Null):
        return None
    raise UnsupportedError(f"{what} that is not an interval constant")
