"""CAST between SQL types, with DuckDB's rounding and range checks: numbers to numbers
(decimals round half away from zero, doubles half to even), strings to anything through
Arrow once per dictionary entry, anything to strings printed as DuckDB prints it, dates to
timestamps and back."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Chunk, Column, host_tensor
from sluice.errors import ExecutionError, UnsupportedError
from sluice.kernels.checks import fail_if, rows_wanted
from sluice.expr.functions.registry import register
from sluice.expr.constants import column_scalar, literal_column
from sluice.expr.functions.common import and_valid, to_type
from sluice.expr.nodes import Expr, Func, Lit
from sluice.expr.functions.cast_nested import cast_nested
from sluice.expr.functions.cast_text import to_strings
from sluice.expr.functions.text_to_nested import cast_texts_column
from sluice.types import STRING, LType, check_state_cast, is_bit
from sluice.expr.functions.bits import cast_from_bit, cast_to_bit
from sluice.arrow import arrow_to_column
from sluice.kernels.infinite import infinity_of, with_infinities
import decimal

_DAY_US = 86_400_000_000


def cast_expr(a: Expr, t: LType) -> Expr:
    """CAST(a AS t) as the plan holds it, a constant cast at once (as ``make_func`` folds it):
    the binders of other families insert casts through this, not through the registry that
    loads them."""
    check_state_cast(a.type, t)
    if a.type.is_nested and not t.is_nested:
        # DuckDB's functions over strings do not take a LIST as its text (CONCAT([42]) is a list
        # there): only an explicit CAST writes a nested value as text
        raise UnsupportedError(f"a {a.type} value where a {t} is expected (write CAST(... AS VARCHAR))")
    f = Func("cast", (a,), t, (t,))
    if not isinstance(a, Lit) or t.is_nested:  # (a nested value is no Lit: '[1]'::INT[] stays a call)
        return f
    return Lit(column_scalar(cast(f, [literal_column(a, torch.device("cpu"))], Chunk({}, 1, home=torch.device("cpu")))), t)


def coerce(e: Expr, t: LType) -> Expr:
    """``e`` as a value of type ``t``: a NULL constant retyped, anything else cast."""
    if isinstance(e, Lit) and e.value is None:
        return e if e.type == t else Lit(None, t)
    return e if e.type == t else cast_expr(e, t)


@register("cast", result=lambda args, params: params[0])
def cast(e, args, chunk) -> Column:
    a, = args
    t = e.type
    src = a.type
    if src.kind == "null":  # a NULL of no type: the same NULLs, of t
        return Column(torch.zeros(a.data.shape, dtype=t.torch_dtype, device=a.data.device), t,
                      torch.zeros(a.data.shape, dtype=torch.bool, device=a.data.device),
                      pa.array([""], pa.string()) if t.kind == "string" else None)
    if src == t and not t.is_nested:
        _check_precision(e, a.data, a.valid)  # DECIMAL(3,0) to DECIMAL(2,0): 100 does not fit
        return a
    if is_bit(t) or is_bit(src):  # DuckDB's BIT (sluice.expr.functions.bits)
        return cast_to_bit(a, False) if is_bit(t) else cast_from_bit(a, t, False)
    if t.is_numeric and (src.is_numeric or src.kind == "bool"):
        out = _cast_numeric(a, t)
        _check_precision(e, out, a.valid)
        return Column(out, t, a.valid)
    if src.kind == "string":
        out = _from_strings(a, t)
        _check_precision(e, out.data, out.valid)
        return out
    if t.kind == "string":
        return to_strings(a, t, _cast_column)
    if t.kind == "date" and src.is_timestamp:  # an infinity stays one (DuckDB)
        days = torch.div(a.data, _DAY_US, rounding_mode="floor").to(torch.int32)
        return Column(with_infinities(days, a.data, False, True), t, a.valid)
    if t.is_timestamp and src.kind == "date":
        return Column(with_infinities(a.data.long() * _DAY_US, a.data, True, False), t, a.valid)
    if t.is_timestamp and src.is_timestamp:  # the session time zone is UTC: the same microseconds
        return Column(a.data, t, a.valid)
    if src.is_nested and t.is_nested:
        return cast_nested(a, t, False, _cast_column)
    raise UnsupportedError(f"CAST from {src} to {t}")


def _cast_column(c: Column, t: LType, lenient: bool) -> Column:
    """A whole column cast (TRY_CAST if ``lenient``): the children of a nested cast. A DECIMAL
    inside a nested type checks the precision its type declares."""
    if c.type == t and not (t.kind == "decimal" and t.precision):
        return c
    op = "try_cast" if lenient else "cast"
    params = (t, t.precision) if t.kind == "decimal" and t.precision else (t,)
    f = Func(op, (Lit(None, c.type),), t, params)
    return (try_cast if lenient else cast)(f, [c], Chunk({}, len(c), home=c.data.device))


@register("cast_null", result=lambda args, params: args[0].type)
def cast_null(e, args, chunk) -> Column:
    """An untyped NULL given the type of the column it stands in (a UNION branch's NULL)."""
    return literal_column(Lit(None, e.type), args[0].data.device)


def _cast_numeric(a: Column, t: LType, bad=None) -> torch.Tensor:
    """Numeric (or boolean) ``a`` as type ``t``, refusing values outside ``t``'s range (or, for
    TRY_CAST, handing their mask to ``bad``)."""
    src = a.type
    msg = f"a {src} value is out of range for {t}"
    check = fail_if if bad is None else (lambda mask, message, valid: bad(mask))
    if t.is_integer:
        info = torch.iinfo(t.torch_dtype)
        if src.is_float or src.kind == "decimal":
            # DuckDB: decimals round half away from zero, doubles half to even (nearbyint).
            if src.kind == "decimal":
                f = 10 ** src.scale
                q = torch.div(a.data.abs() + f // 2, f, rounding_mode="floor") * torch.sign(a.data)
                check((q < info.min) | (q > info.max), msg, a.valid)
                return q.to(t.torch_dtype)
            x = torch.round(a.data.double())
            # 2**63 is a double, 2**63 - 1 is not: compare with the power of two, exclusive.
            check(~((x >= float(info.min)) & (x < float(info.max) + 1.0)), msg, a.valid)
            return x.to(t.torch_dtype)
        if src.kind != "bool" and torch.iinfo(a.data.dtype).bits > info.bits:
            check((a.data < info.min) | (a.data > info.max), msg, a.valid)
        return a.data.to(t.torch_dtype)
    if t.kind == "decimal" and src.kind == "decimal" and src.scale > t.scale:
        f = 10 ** (src.scale - t.scale)
        x = a.data
        return torch.div(x.abs() + f // 2, f, rounding_mode="floor") * torch.sign(x)
    if t.kind == "decimal" and (src.is_float or src.is_integer or src.kind == "decimal"):
        # scaled up in float64 first to find the values beyond 64 bits (TRY_CAST: NULL)
        f = 10 ** (t.scale - (src.scale if src.kind == "decimal" else 0))
        wide = a.data.double() * f
        x, lim = a.data.long(), (2 ** 63 - 1) // f
        over = ~(wide.abs() < 2.0 ** 63) if src.is_float else (x > lim) | (x < -lim)  # abs() of INT64_MIN wraps
        if 0 < t.precision <= 18:  # beyond the precision asked for: NULL for TRY_CAST, else an error
            check(over, f"a value does not fit DECIMAL({t.precision},{t.scale})", a.valid)
        else:
            fail_if(over, f"a {src} value as {t}: beyond 18 digits (sluice's decimals are 64-bit; DuckDB's "
                    "reach 38)", a.valid, UnsupportedError)
        ok = Column(torch.where(over, torch.zeros_like(a.data), a.data), src, a.valid)
        return to_type(ok, t)
    return to_type(a, t)


def _beyond_precision(e, scaled: torch.Tensor) -> torch.Tensor | None:
    """Where a DECIMAL(p, s) cast's scaled values reach 10**p (DuckDB refuses those)."""
    if e.type.kind == "decimal" and len(e.params) > 1 and e.params[1] is not None and e.params[1] < 19:
        lim = 10 ** e.params[1]
        return (scaled >= lim) | (scaled <= -lim)  # not abs(): INT64_MIN has none
    return None


def _check_precision(e, scaled: torch.Tensor, valid) -> None:
    bad = _beyond_precision(e, scaled)
    if bad is not None:
        fail_if(bad, f"a value does not fit DECIMAL({e.params[1]},{e.type.scale})", valid)


@register("try_cast", result=lambda args, params: params[0])
def try_cast(e, args, chunk) -> Column:
    """TRY_CAST: a value the cast refuses is NULL instead of an error."""
    a, = args
    t = e.type
    if a.type == t and t.kind != "decimal" and not t.is_nested:
        return a
    if is_bit(t) or is_bit(a.type):
        return cast_to_bit(a, True) if is_bit(t) else cast_from_bit(a, t, True)
    if t.is_numeric and (a.type.is_numeric or a.type.kind == "bool"):
        masks: list[torch.Tensor] = []
        out = Column(_cast_numeric(a, t, masks.append), t, a.valid)
    elif a.type.kind == "string" and t.is_nested:
        return _from_strings(a, t, lenient=True)
    elif a.type.is_nested and t.is_nested:
        return cast_nested(a, t, True, _cast_column)
    elif a.type.kind == "string":
        out, masks = _from_strings(a, t, lenient=True), []
    else:
        return cast(e, args, chunk)  # to strings, between dates and timestamps: these cannot fail
    beyond = _beyond_precision(e, out.data)
    valid = out.valid
    for m in masks + ([beyond] if beyond is not None else []):
        valid = and_valid(valid, ~m)
    return Column(out.data, t, valid)


#: Strings DuckDB may read as a number although Arrow does not (blanks around it, an exponent
#: or a fraction for an integer, hexadecimal, digit separators, inf/nan): TRY_CAST refuses
#: rather than answer NULL where DuckDB has a number.
_NUMBER_LIKE = (r"(?i)^\s*[+-]?((\d[\d_]*(\.[\d_]*)?|\.\d[\d_]*)(e[+-]?\d+)?|0x[0-9a-f]+|0b[01]+"
                r"|inf(inity)?|nan)\s*$")
#: ... and the like for dates and timestamps: anything starting with digits and a separator,
#: and DuckDB's special values ('infinity', 'epoch').
_DATE_LIKE = r"(?i)^\s*([+-]?\d+[-/.]|[+-]?inf(inity)?\s*$|epoch\s*$)"


def _failing_entries(convert, d: pa.Array, target: pa.DataType) -> tuple[pa.Array, list[int]]:
    """``convert`` over ``d``, NULL where an entry fails, and the failing positions: halves
    of ``d`` are converted until each failure stands alone (two conversions per failure and
    level)."""
    pieces: list[tuple[int, pa.Array | None]] = []
    failed: list[int] = []
    stack = [(0, len(d))]
    while stack:
        lo, hi = stack.pop()
        try:
            pieces.append((lo, convert(d.slice(lo, hi - lo))))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if hi - lo == 1:
                failed.append(lo)
                pieces.append((lo, None))
            else:
                mid = (lo + hi) // 2
                stack += [(mid, hi), (lo, mid)]
    pieces.sort(key=lambda p: p[0])
    typ = next((p.type for _, p in pieces if p is not None), target)
    return pa.concat_arrays([p if p is not None else pa.nulls(1, typ) for _, p in pieces]), failed


_HEX = r"^0[xX][0-9a-fA-F]+$"


def _hex_beyond(strings: pa.Array, t: LType) -> pa.Array:
    """Per string: hexadecimal (``0x80``) beyond integer type ``t``'s range. Arrow reads
    ``0x80`` as an int8 of those bits (-128); DuckDB reads the number 128, which does not fit."""
    hexes = pc.match_substring_regex(strings, _HEX)
    digits = pc.utf8_length(pc.utf8_ltrim(pc.utf8_slice_codeunits(pc.if_else(hexes, strings, pa.scalar("0x0")), 2), "0"))
    short = pc.less_equal(digits, 16)
    value = pc.if_else(pc.and_(hexes, short), strings, pa.scalar("0x0")).cast(pa.uint64())
    over = pc.or_(pc.invert(short), pc.greater(value, pa.scalar(torch.iinfo(t.torch_dtype).max, pa.uint64())))
    return pc.and_(hexes, over)


#: A number DuckDB reads as an integer although Arrow does not: blanks around it, a sign, a
#: fraction or an exponent (rounded half away from zero: '0.5' is 1, '1e2' is 100).
_DECIMAL_TEXT = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"


def _strings_to_integers(arr: pa.Array, target: pa.DataType, t: LType) -> pa.Array:
    """Strings as integers as DuckDB reads them: Arrow's parse, less its reading of hexadecimal
    beyond the range; failing that, numbers with a fraction or an exponent, rounded."""
    try:
        out = arr.cast(target)
    except pa.ArrowInvalid:
        fits = pc.fill_null(pc.match_substring_regex(arr, _DECIMAL_TEXT), True)
        if not pc.all(fits).as_py():
            raise
        out = _rounded_integers(arr).cast(target)  # raises ArrowInvalid beyond the range
        return out
    if pc.any(_hex_beyond(arr, t)).as_py():
        raise pa.ArrowInvalid(f"hexadecimal value out of range for {t}")
    return out


def _rounded_integers(arr: pa.Array) -> pa.Array:
    """Decimal-looking strings (:data:`_DECIMAL_TEXT`) as whole numbers, halves away from zero."""
    trimmed = pc.utf8_ltrim(pc.utf8_trim_whitespace(arr), "+")
    if pc.any(pc.match_substring_regex(trimmed, "[eE]")).as_py():
        trimmed = _exponents_written_out(trimmed, 0)
    fixed = pc.replace_substring_regex(trimmed, r"^\.", "0.")
    fixed = pc.replace_substring_regex(pc.replace_substring_regex(fixed, r"^-\.", "-0."), r"\.$", "")
    return _strings_to_decimals(fixed, 0)  # rounded once, from all the digits


def _beyond_range(strings: pa.Array, t: LType) -> pa.Array:
    """Per string: a whole number (``-123``, ``127.5``, ``1e20``) or hexadecimal outside integer
    type ``t``'s range (for a decimal of scale s: of more than 38 - s digits, beyond any
    precision)."""
    if t.is_integer:
        out = pc.or_(_hex_beyond(strings, t), _beyond_plain(strings, t))
        decimal_like = pc.fill_null(pc.match_substring_regex(strings, _DECIMAL_TEXT), False)
        if pc.any(decimal_like).as_py():
            info = torch.iinfo(t.torch_dtype)
            try:
                v = _rounded_integers(pc.if_else(decimal_like, strings, pa.scalar("0")))
                far = pc.or_(pc.less(v, pa.scalar(info.min).cast(v.type)), pc.greater(v, pa.scalar(info.max).cast(v.type)))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # an exponent beyond any integer
                far = decimal_like
            out = pc.or_(out, pc.and_(decimal_like, far))
        return out
    return _beyond_plain(strings, t)


def _beyond_plain(strings: pa.Array, t: LType) -> pa.Array:
    plain = pc.match_substring_regex(strings, r"^[+-]?\d+$")
    digits = pc.if_else(plain, strings, pa.scalar("0"))
    length = pc.utf8_length(pc.utf8_ltrim(digits, "+-0"))
    if t.kind == "decimal":
        return pc.and_(plain, pc.greater(length, 38 - t.scale))
    info = torch.iinfo(t.torch_dtype)
    # as a decimal of 38 digits (exact; longer numbers are certainly beyond the range)
    short = pc.less_equal(length, 38)
    value = pc.if_else(short, digits, pa.scalar("0")).cast(pa.decimal128(38, 0))
    out = pc.or_(pc.invert(short), pc.or_(pc.less(value, pa.scalar(info.min).cast(pa.decimal128(38, 0))),
                                          pc.greater(value, pa.scalar(info.max).cast(pa.decimal128(38, 0)))))
    return pc.and_(plain, out)


def _from_strings(a: Column, t: LType, lenient: bool = False) -> Column:
    """Each dictionary entry cast with Arrow, then gathered by code (``lenient``: TRY_CAST,
    entries that do not cast are NULL)."""
    if t.is_nested:  # '[1, 2]', '{a: 1}', '(1, x)', '{k=v}': read level by level as DuckDB reads them
        return cast_texts_column(a, t, lenient, _leaf_from_texts)
    if t.kind in ("null", "interval"):
        raise UnsupportedError(f"CAST from a string to {t}")
    target = {"date": pa.date32(), "decimal": pa.decimal128(38, t.scale), "timestamp": pa.timestamp("us"),
              "timestamptz": pa.timestamp("us", tz="UTC")}.get(t.kind)
    target = target or (pa.bool_() if t.kind == "bool" else getattr(pa, t.kind)())
    codes = a.data.long()
    convert = {"date": _strings_to_dates, "timestamptz": _strings_to_instants}.get(t.kind, lambda arr: arr.cast(target))
    if t.is_temporal:
        convert = _reading_infinities(convert, target, t.kind == "date")
    if t.is_integer:
        convert = lambda arr: _strings_to_integers(arr, target, t)  # noqa: E731
    elif t.kind == "decimal":
        convert = lambda arr: _strings_to_decimals(arr, t.scale)  # noqa: E731
    elif t.is_timestamp:
        base = convert
        convert = lambda arr: _no_bare_hour(arr, base)  # noqa: E731
    elif t.kind == "bool":
        convert = _strings_to_bools
    try:
        per = convert(a.dictionary)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # The dictionary may hold entries no row uses (a filtered column): cast only those in use.
        used = torch.unique(codes if a.valid is None else codes[a.valid.expand(codes.shape)])
        entries = a.dictionary.take(pa.array(used.cpu().numpy()))
        try:
            part = convert(entries)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as ex:
            if not lenient:
                message = f"cannot cast string to {t}: {str(ex).splitlines()[0]}"
                if not rows_wanted():
                    raise ExecutionError(message) from None
                out = _from_strings(a, t, lenient=True)  # inside TRY: the failing rows are NULL
                if out.valid is not None:
                    fail_if(~out.valid, message, a.valid)
                return out
            part, failed = _failing_entries(convert, entries, target)
            bad = entries.take(pa.array(failed, pa.int64()))
            if t.is_integer or t.kind == "decimal":  # a whole number beyond the range is NULL, as in DuckDB
                bad = bad.filter(pc.invert(_beyond_range(bad, t)))
            if t.is_integer or t.kind == "decimal":  # and NaN or an infinity, which no such number is
                bad = bad.filter(pc.invert(pc.match_substring_regex(bad, r"(?i)^\s*[+-]?(nan|inf(inity)?)\s*$")))
            if t.kind == "decimal":  # and an exponent beyond 16 bits (one string per distinct value)
                bad = bad.filter(pa.array([not re.search("[eE]", v) or _exponent_fits(v.strip())
                                           for v in bad.to_pylist()], pa.bool_()))
            if t.is_timestamp:  # so is a time of an hour alone
                bad = bad.filter(pc.invert(pc.match_substring_regex(bad, _BARE_HOUR)))
            like = _NUMBER_LIKE if t.is_numeric else _DATE_LIKE if t.is_temporal else \
                r"[^\s\S]" if t.kind == "bool" else None  # (matches nothing: no other string is a boolean)
            if like is None:
                raise UnsupportedError(f"TRY_CAST to {t}") from None
            maybe = pc.match_substring_regex(bad, like)
            if pc.any(maybe).as_py():
                v = bad.filter(maybe)[0].as_py()
                raise UnsupportedError(f"TRY_CAST of {v!r} to {t} (a form DuckDB may read; "
                                       "sluice does not parse it)") from None
        remap = torch.zeros(len(a.dictionary), dtype=torch.long, device=codes.device)
        remap[used] = torch.arange(len(used), device=codes.device)
        per, codes = part, remap[codes]
    if t.kind == "decimal" and len(per):
        per = _within_64_bits(per, t, lenient)
    pc_col = arrow_to_column(per, t, a.data.device)
    if pc_col.data.numel() == 0:  # no strings at all: every row is NULL
        return Column(torch.zeros(codes.shape, dtype=pc_col.data.dtype, device=codes.device), t,
                      torch.zeros(codes.shape, dtype=torch.bool, device=codes.device))
    valid = a.valid if pc_col.valid is None else and_valid(a.valid, pc_col.valid[codes])
    return Column(pc_col.data[codes], t, valid)


def _leaf_from_texts(texts: pa.Array, t: LType, lenient: bool) -> Column:
    """The innermost parts of texts cast to a nested type (one row per part; None: NULL), by
    the ordinary string casts; a DECIMAL(p, s) inside checks its precision as a cast to it
    does."""
    n = len(texts)
    valid = None if texts.null_count == 0 else host_tensor(
        np.asarray(pc.is_valid(texts).to_numpy(zero_copy_only=False), dtype=np.bool_))
    if t.kind == "string":
        return Column(torch.arange(n, dtype=torch.int32), STRING, valid, texts.fill_null(""))
    # each distinct part cast once (a TRY_CAST finds each failing part apart: once, not per element)
    enc = pc.dictionary_encode(texts.fill_null(""))
    codes = host_tensor(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int32))
    col = Column(codes, STRING, valid, enc.dictionary)
    out = _from_strings(col, t, lenient)
    if t.kind == "decimal" and 0 < t.precision < 19:
        lim = 10 ** t.precision
        bad = (out.data >= lim) | (out.data <= -lim)
        if not lenient:
            fail_if(bad, f"a value does not fit DECIMAL({t.precision},{t.scale})", out.valid)
        else:
            out = Column(out.data, t, and_valid(out.valid, ~bad))
    return out


#: A date with an hour and nothing after (Arrow reads '1111-11-11 11' as 11:00; DuckDB does not).
_BARE_HOUR = r"^\s*[+-]?\d+-\d+-\d+[T ]\d{1,2}\s*(Z|[+-]\d{2}(:?\d{2})?)?\s*$"


def _no_bare_hour(arr: pa.Array, convert) -> pa.Array:
    if pc.any(pc.match_substring_regex(arr, _BARE_HOUR)).as_py():
        raise pa.ArrowInvalid("a timestamp with an hour but no minutes")
    return convert(arr)


def _within_64_bits(per: pa.Array, t: LType, lenient: bool) -> pa.Array:
    """Decimals read from strings that 64-bit decimals cannot hold: beyond a precision asked
    for (of at most 18 digits) NULL for TRY_CAST, an error for CAST; otherwise refused, as
    DuckDB's 38-digit decimals would hold them."""
    lim = pa.scalar(10 ** (18 - t.scale), pa.decimal128(38, 0)).cast(per.type)
    over = pc.fill_null(pc.greater_equal(pc.abs(per), lim), False)
    if not pc.any(over).as_py():
        return per
    if 0 < t.precision <= 18:
        if not lenient:
            raise ExecutionError(f"a value does not fit DECIMAL({t.precision},{t.scale})")
        return pc.if_else(over, pa.scalar(None, per.type), per)
    raise UnsupportedError(f"a string as {t}: beyond 18 digits (sluice's decimals are 64-bit; DuckDB's reach 38)")


_EXPONENT = re.compile(r"[eE]([+-]?)0*(\d{0,6})$")


def _exponent_fits(text: str) -> bool:
    """Whether a number's exponent is a 16-bit integer, as DuckDB reads it for a decimal
    (beyond, ``1e-99999999999999999999999999`` met Python's decimal limits: an internal error;
    DuckDB cannot convert it)."""
    m = _EXPONENT.search(text)
    if m is None:
        return False
    value = int(m.group(2) or 0)
    return value <= (2 ** 15 if m.group(1) == "-" else 2 ** 15 - 1)


def _exponents_written_out(arr: pa.Array, scale: int) -> pa.Array:
    """Numbers with an exponent (``-0.0000922e50``) as plain digits, exactly -- a double would
    round a 19-digit mantissa -- rounded half away from zero to ``scale`` digits. Only the
    distinct strings that have an exponent are worked on, with Python's exact decimals."""
    has = pc.fill_null(pc.match_substring_regex(arr, "[eE]"), False)
    out = []
    for v in arr.filter(has).to_pylist():
        if not _exponent_fits(v):
            raise pa.ArrowInvalid(f"{v}: its exponent is beyond 16 bits")
        try:
            d = decimal.Decimal(v)
        except decimal.InvalidOperation:
            raise pa.ArrowInvalid(f"{v} is no number") from None
        if d and d.adjusted() > 38:  # (0e32767 is 0)
            raise pa.ArrowInvalid(f"{v} is beyond 38 digits")
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP,
                       context=decimal.Context(prec=80))
        out.append(format(q, "f"))
    return pc.replace_with_mask(arr, has, pa.array(out, pa.string()))


def _strings_to_bools(arr: pa.Array) -> pa.Array:
    """Strings as booleans as DuckDB reads them: true / t / yes / y / 1 and false / f / no / n /
    0, in any case; anything else raises ArrowInvalid."""
    low = pc.utf8_lower(arr)
    yes = pc.is_in(low, value_set=pa.array(["true", "t", "yes", "y", "1"]))
    no = pc.is_in(low, value_set=pa.array(["false", "f", "no", "n", "0"]))
    if not pc.all(pc.fill_null(pc.or_(yes, no), True), min_count=0).as_py():  # (no strings: none bad)
        raise pa.ArrowInvalid("not a boolean")
    return pc.if_else(pc.is_null(arr), pa.scalar(None, pa.bool_()), yes)


def _strings_to_decimals(arr: pa.Array, scale: int) -> pa.Array:
    """Strings as decimals of ``scale``, more digits rounded half away from zero as DuckDB
    rounds them (``'1.25'::DECIMAL(2,1)`` is 1.3; Arrow refuses to drop digits)."""
    target = pa.decimal128(38, scale)
    try:
        return arr.cast(target)
    except pa.ArrowInvalid as ex:
        exponents = pc.any(pc.match_substring_regex(arr, "[eE]")).as_py()
        if "Rescaling" not in str(ex) or exponents:  # ('1e-10' needs rescaling: written out too)
            if not pc.all(pc.fill_null(pc.match_substring_regex(arr, _DECIMAL_TEXT), True)).as_py():
                raise
            # blanks, a sign, '.5', '12.' or an exponent, as DuckDB reads them
            arr = pc.utf8_ltrim(pc.utf8_trim_whitespace(arr), "+")
            arr = pc.replace_substring_regex(pc.replace_substring_regex(arr, r"^\.", "0."), r"^-\.", "-0.")
            arr = pc.replace_substring_regex(arr, r"\.$", "")
            if exponents:
                arr = _exponents_written_out(arr, scale)
            try:
                return arr.cast(target)
            except pa.ArrowInvalid as ex2:
                if "Rescaling" not in str(ex2):
                    raise
    digits = pc.max(pc.utf8_length(pc.extract_regex(arr, r"\.(?P<f>\d+)").field("f"))).as_py() or 0
    wide = arr.cast(pa.decimal128(38, min(38, max(digits, scale))))
    return pc.round(wide, ndigits=scale, round_mode="half_towards_infinity").cast(target)


#: How DuckDB writes 'infinity' and '-infinity' as a date or timestamp string (any case, blanks
#: around; no '+').
_INFINITY_TEXT = r"(?i)^\s*inf(inity)?\s*$"
_MINUS_INFINITY_TEXT = r"(?i)^\s*-inf(inity)?\s*$"


def _reading_infinities(convert, target: pa.DataType, is_date: bool):
    """``convert`` (strings to dates or timestamps) that also reads 'infinity' and '-infinity'
    as DuckDB's infinities (:mod:`sluice.kernels.infinite`)."""
    def run(arr: pa.Array) -> pa.Array:
        pos = pc.fill_null(pc.match_substring_regex(arr, _INFINITY_TEXT), False)
        neg = pc.fill_null(pc.match_substring_regex(arr, _MINUS_INFINITY_TEXT), False)
        if not (pc.any(pos).as_py() or pc.any(neg).as_py()):
            return convert(arr)
        inf = pc.or_(pos, neg)
        out = convert(pc.if_else(inf, pa.scalar("1970-01-01"), arr))
        ints = pa.int32() if is_date else pa.int64()
        big = infinity_of(is_date)
        raw = pc.if_else(pos, pa.scalar(big, ints), pc.if_else(neg, pa.scalar(-big, ints), out.cast(ints)))
        return raw.cast(out.type)
    return run


#: A date as DuckDB reads one: ``YYYY-M-D``, then optionally a time (``T`` or blanks, ``H:MM``,
#: seconds and a fraction) and a zone (``Z``, an offset, or a name) that the date ignores.
_DATE_TEXT = (r"^\s*(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
              r"(?:(?:T|\s+)(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.\d*)?)?"
              r"(?:Z|\s*[+-]\d{2}(?::?\d{2})?|\s+\S+)?)?\s*$")


def _strings_to_dates(arr: pa.Array) -> pa.Array:
    """Strings as dates, as DuckDB reads them: ISO ``YYYY-MM-DD``, also one-digit months and
    days (``1999-2-01``, which TPC-DS queries write), and a timestamp's text, whose time and
    zone are checked and dropped (``'2022-01-01 23:59:59-05:00'`` is 2022-01-01, as in DuckDB;
    up to 24:00:00); anything else raises ArrowInvalid."""
    try:
        return arr.cast(pa.date32())
    except pa.ArrowInvalid:
        parts = pc.extract_regex(arr, _DATE_TEXT)
        if parts.null_count > arr.null_count:
            raise
        clock = [pc.cast(pc.replace_substring_regex(pc.fill_null(parts.field(k), ""), "^$", "0"), pa.int32())
                 for k in ("H", "M", "S")]  # (a part not there is "")
        beyond = pc.or_(pc.greater(clock[0], 24), pc.or_(pc.greater_equal(clock[1], 60), pc.greater_equal(clock[2], 60)))
        beyond = pc.or_(beyond, pc.and_(pc.equal(clock[0], 24), pc.greater(pc.add(clock[1], clock[2]), 0)))
        if pc.any(beyond).as_py():
            raise pa.ArrowInvalid("a time of day out of range in a date")
        y, m, d = (parts.field(k) for k in ("y", "m", "d"))
        iso = pc.binary_join_element_wise(y, pc.utf8_lpad(m, 2, "0"), pc.utf8_lpad(d, 2, "0"), "-")
        return iso.cast(pa.date32())


def _strings_to_instants(arr: pa.Array) -> pa.Array:
    """Strings as TIMESTAMP WITH TIME ZONE: with an offset (``+02``, ``Z``) they name an instant;
    without one they are a time in the session time zone, UTC (as DuckDB with TimeZone UTC)."""
    try:
        return arr.cast(pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr.cast(pa.timestamp("us")).cast(pa.int64()).cast(pa.timestamp("us", tz="UTC"))


