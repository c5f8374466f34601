"""STRFTIME's format strings, read as DuckDB reads them, and dates / timestamps formatted by
them: each distinct value's fields computed with NumPy at once, the text joined with Arrow.

Every specifier DuckDB knows gives DuckDB's text (``%-d`` unpadded, ``%c`` / ``%x`` / ``%X``
its ISO forms, ``%z`` ``+00`` and ``%Z`` ``UTC`` in sluice's UTC session); any other is an error
naming it, as in DuckDB -- never copied through as text.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.errors import PlanError
from sluice.types import DAY_US
from sluice.errors import UnsupportedError
import datetime as _dt

#: DuckDB's composite specifiers, spelled out.
_COMPOSITE = {"c": "%Y-%m-%d %H:%M:%S", "x": "%Y-%m-%d", "X": "%H:%M:%S", "T": "%H:%M:%S"}
_PLAIN = set("aAwudhbBmyYGHIpMSnfgzZjUWV")
_UNPADDED = set("dmyHIMSj")
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]


def parse_format(fmt: str) -> list[str]:
    """The format as literal texts and specifiers (``"%Y"``, ``"%-d"``); an unknown specifier
    or a trailing ``%`` raises PlanError with DuckDB's reason."""
    parts: list[str] = []
    text = ""
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch != "%":
            text += ch
            i += 1
            continue
        if i + 1 == len(fmt):
            raise PlanError(f"STRFTIME format {fmt!r}: trailing format character %")
        spec = fmt[i + 1]
        i += 2
        if spec == "%":
            text += "%"
            continue
        if spec == "-" and i < len(fmt):
            spec = "-" + fmt[i]
            i += 1
            if spec[1] not in _UNPADDED:
                raise PlanError(f"STRFTIME format {fmt!r}: unrecognized specifier %{spec}")
        elif spec in _COMPOSITE:
            if text:
                parts.append(text)
                text = ""
            parts += parse_format(_COMPOSITE[spec])
            continue
        elif spec not in _PLAIN:
            raise PlanError(f"STRFTIME format {fmt!r}: unrecognized specifier %{spec}")
        if text:
            parts.append(text)
            text = ""
        parts.append("%" + spec)
    if text:
        parts.append(text)
    return parts


def _num(v: np.ndarray, width: int = 0) -> pa.Array:
    s = pa.array(v.astype(np.int64)).cast(pa.string())
    return pc.utf8_lpad(s, width, "0") if width else s


def _year(y: np.ndarray) -> pa.Array:
    """Years as DuckDB prints them: four digits from 0 to 9999, as they are otherwise."""
    padded = _num(np.abs(y), 4)
    return pc.if_else(pa.array((y >= 0) & (y <= 9999)), padded, _num(y))


def format_times(us: np.ndarray, parts: list[str], with_zone: bool) -> pa.Array:
    """``us`` (int64 microseconds since the epoch) formatted by ``parts`` (:func:`parse_format`);
    ``with_zone``: TIMESTAMP WITH TIME ZONE (``%Z`` is ``UTC``, empty otherwise)."""
    n = len(us)
    days = np.floor_divide(us, DAY_US)
    tod = us - days * DAY_US
    d64 = days.astype("datetime64[D]")
    year = d64.astype("datetime64[Y]").astype(np.int64) + 1970
    month0 = d64.astype("datetime64[M]").astype(np.int64) % 12
    mday = (d64 - d64.astype("datetime64[M]")).astype(np.int64) + 1
    yday0 = (d64 - d64.astype("datetime64[Y]")).astype(np.int64)
    wday = (days + 4) % 7  # 0 = Sunday (1970-01-01 was a Thursday)
    mon0 = (wday + 6) % 7  # 0 = Monday
    thursday = (days - mon0 + 3).astype("datetime64[D]")  # the ISO week's Thursday names its year
    iso_year = thursday.astype("datetime64[Y]").astype(np.int64) + 1970
    iso_week = (thursday - thursday.astype("datetime64[Y]")).astype(np.int64) // 7 + 1
    hour = tod // 3_600_000_000
    minute = tod // 60_000_000 % 60
    second = tod // 1_000_000 % 60
    micro = tod % 1_000_000
    hour12 = np.where(hour % 12 == 0, 12, hour % 12)
    fields = {
        "%a": lambda: pa.array(np.array([d[:3] for d in _DAYS])[wday]),
        "%A": lambda: pa.array(np.array(_DAYS)[wday]),
        "%w": lambda: _num(wday), "%u": lambda: _num(mon0 + 1),
        "%d": lambda: _num(mday, 2), "%-d": lambda: _num(mday),
        "%b": lambda: pa.array(np.array([m[:3] for m in _MONTHS])[month0]),
        "%h": lambda: pa.array(np.array([m[:3] for m in _MONTHS])[month0]),
        "%B": lambda: pa.array(np.array(_MONTHS)[month0]),
        "%m": lambda: _num(month0 + 1, 2), "%-m": lambda: _num(month0 + 1),
        "%y": lambda: _num(np.abs(year) % 100, 2), "%-y": lambda: _num(np.abs(year) % 100),
        "%Y": lambda: _year(year), "%G": lambda: _year(iso_year),
        "%H": lambda: _num(hour, 2), "%-H": lambda: _num(hour),
        "%I": lambda: _num(hour12, 2), "%-I": lambda: _num(hour12),
        "%p": lambda: pa.array(np.where(hour < 12, "AM", "PM")),
        "%M": lambda: _num(minute, 2), "%-M": lambda: _num(minute),
        "%S": lambda: _num(second, 2), "%-S": lambda: _num(second),
        "%n": lambda: _num(micro * 1000, 9), "%f": lambda: _num(micro, 6), "%g": lambda: _num(micro // 1000, 3),
        "%z": lambda: pa.array(["+00"] * n), "%Z": lambda: pa.array(["UTC" if with_zone else ""] * n),
        "%j": lambda: _num(yday0 + 1, 3), "%-j": lambda: _num(yday0 + 1),
        "%U": lambda: _num((yday0 + 7 - wday) // 7, 2), "%W": lambda: _num((yday0 + 7 - mon0) // 7, 2),
        "%V": lambda: _num(iso_week, 2),
    }
    pieces = [fields[p]() if p in fields else pa.array([p] * n, pa.string()) for p in parts]
    if not pieces:
        return pa.array([""] * n, pa.string())
    if len(pieces) == 1:
        return pieces[0].cast(pa.string())
    return pc.binary_join_element_wise(*pieces, "")


def _ymd(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d64 = days.astype("datetime64[D]")
    year = d64.astype("datetime64[Y]").astype(np.int64) + 1970
    month = d64.astype("datetime64[M]").astype(np.int64) % 12 + 1
    mday = (d64 - d64.astype("datetime64[M]")).astype(np.int64) + 1
    return year, month, mday


def _date_part_text(days: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """``YYYY-MM-DD`` as DuckDB prints it -- year 0 and before as ``0001-..`` counting back
    with `` (BC)`` after -- and where the BC mark goes."""
    year, month, mday = _ymd(days)
    bc = year <= 0
    text = pc.binary_join_element_wise(_num(np.where(bc, 1 - year, year), 4), _num(month, 2), _num(mday, 2), "-")
    return text, bc


def date_text(days: np.ndarray) -> pa.Array:
    """Dates (days since the epoch) as DuckDB casts them to VARCHAR (``0044-03-13 (BC)``)."""
    text, bc = _date_part_text(days)
    return pc.if_else(pa.array(bc), pc.binary_join_element_wise(text, pa.scalar(" (BC)"), ""), text)


def timestamp_text(us: np.ndarray, with_zone: bool) -> pa.Array:
    """Timestamps (microseconds) as DuckDB casts them to VARCHAR: the date, `` (BC)`` where it
    is, the time, a fraction only when there is one (without trailing zeros), ``+00`` for
    TIMESTAMP WITH TIME ZONE in sluice's UTC session."""
    days = np.floor_divide(us, DAY_US)
    tod = us - days * DAY_US
    text, bc = _date_part_text(days)
    text = pc.if_else(pa.array(bc), pc.binary_join_element_wise(text, pa.scalar(" (BC)"), ""), text)
    clock = pc.binary_join_element_wise(_num(tod // 3_600_000_000, 2), _num(tod // 60_000_000 % 60, 2),
                                        _num(tod // 1_000_000 % 60, 2), ":")
    frac = pc.utf8_rtrim(pc.binary_join_element_wise(pa.scalar("."), _num(tod % 1_000_000, 6), ""), "0")
    frac = pc.if_else(pa.array(tod % 1_000_000 == 0), pa.scalar(""), frac)
    out = pc.binary_join_element_wise(text, pa.scalar(" "), clock, frac, "")
    return pc.binary_join_element_wise(out, pa.scalar("+00"), "") if with_zone else out


#: DuckDB's specifiers that Python's strptime reads alike (the unpadded forms read 1 or 2 digits).
#: The hour is always read as %H: Python's %I turns a bare 12 into midnight and ignores %p after
#: %H, DuckDB does neither, so ``strptime_parser`` applies the 12-hour rules itself.
_PARSE = {"%Y": "%Y", "%m": "%m", "%-m": "%m", "%d": "%d", "%-d": "%d", "%H": "%H", "%-H": "%H", "%M": "%M",
          "%-M": "%M", "%S": "%S", "%-S": "%S", "%y": "%y", "%-y": "%y", "%b": "%b", "%h": "%b", "%B": "%B",
          "%a": "%a", "%A": "%A", "%p": "%p", "%I": "%H", "%-I": "%H"}  # %j: Python would roll day 366 over


def strptime_format(fmt: str, meridiem: str = "%p") -> str:
    """A DuckDB STRPTIME format as Python's strptime reads it (%p written as ``meridiem``); a
    specifier it would read otherwise (fractions, week numbers, day of the year, zones) raises
    UnsupportedError naming it."""
    out = []
    for p in parse_format(fmt):
        if p.startswith("%") and len(p) > 1:
            if p not in _PARSE:
                raise UnsupportedError(f"STRPTIME with {p}")
            out.append(meridiem if p == "%p" else _PARSE[p])
        else:
            out.append(p.replace("%", "%%"))
    return "".join(out)


def strptime_parser(fmt: str):
    """A function from one string to a ``datetime`` (None where it does not match) that reads
    the hour as DuckDB does: %I takes 1-12 as written; with %p an hour above 12 does not
    match, PM adds 12 below 12 and 12 AM is midnight."""
    parts = parse_format(fmt)
    twelve = any(p in ("%I", "%-I") for p in parts)
    ampm = "%p" in parts
    py = strptime_format(fmt)
    am = strptime_format(fmt, meridiem="AM")  # Python matches literals regardless of case

    def parse(text: str):
        try:
            t = _dt.datetime.strptime(text, py)
        except ValueError:
            return None
        if twelve and not 1 <= t.hour <= 12 or ampm and t.hour > 12:
            return None
        if ampm:
            try:
                _dt.datetime.strptime(text, am)
                is_am = True
            except ValueError:
                is_am = False
            t = t.replace(hour=(0 if t.hour == 12 else t.hour) if is_am else (t.hour if t.hour == 12 else t.hour + 12))
        return t
    return parse
