"""Evaluate plan expressions over a chunk with tensor operations.

Constants are 0-d tensors that broadcast. NULLs follow SQL's three-valued logic: every
operator's validity is the AND of its inputs' validity, except AND/OR/CASE/COALESCE/IS NULL.
String operations run once per dictionary entry on the host (pyarrow.compute) and come back
as a gather by code.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Chunk, Column, host_tensor, unify_dictionaries
from sluice.errors import ExecutionError, UnsupportedError
from sluice.exec.checks import fail_if
from sluice.exec.kernels import dates
from sluice.plan.expr import Col, Expr, Func, Lit
from sluice.types import LType

_CPU = torch.device("cpu")


#: Per-chunk results of sub-expressions, so an expression used twice (TPC-H Q1's
#: ``l_extendedprice * (1 - l_discount)``) is computed once: (id(chunk), expr) -> Column.
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("sluice_eval_memo", default=None)


@contextlib.contextmanager
def shared_subexpressions():
    """Within this block, evaluating equal expressions over the same chunk reuses results."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def evaluate(e: Expr, chunk: Chunk) -> Column:
    if isinstance(e, Col):
        return chunk.columns[e.name]
    if isinstance(e, Lit):
        return literal_column(e, _device_of(chunk))
    memo = _MEMO.get()
    if memo is not None:
        key = (id(chunk), e)
        hit = memo.get(key)
        if hit is not None:
            return hit[1]
        out = _evaluate_func(e, chunk)
        memo[key] = (chunk, out)  # holding the chunk keeps its id from being reused
        return out
    return _evaluate_func(e, chunk)


def _evaluate_func(e: Expr, chunk: Chunk) -> Column:
    assert isinstance(e, Func)
    for a in e.args:
        if isinstance(a, Col) and chunk.columns[a.name].wide is not None:
            raise ExecutionError(f"{a.name} is a SUM exceeding 64 bits; it can only be output, not computed with")
    fn = _OPS.get(e.op)
    if fn is None:
        raise UnsupportedError(f"function {e.op} is not supported")
    return fn(e, chunk)


def evaluate_predicate(e: Expr, chunk: Chunk) -> torch.Tensor:
    """A boolean mask of rows where ``e`` is TRUE (NULL counts as false)."""
    c = evaluate(e, chunk)
    m = c.data if c.valid is None else (c.data & c.valid)
    if m.dim() == 0:
        m = m.expand(chunk.num_rows)
    return m


def evaluate_constant(e: Func) -> Lit:
    c = evaluate(e, Chunk({}, 1))
    return Lit(column_scalar(c), e.type)


def column_scalar(c: Column):
    """Python value of a constant column (None for NULL)."""
    if c.valid is not None and not bool(c.valid.reshape(-1)[0]):
        return None
    v = c.data.reshape(-1)[0].item()
    if c.type.kind == "string":
        return c.dictionary[int(v)].as_py()
    return v


def _device_of(chunk: Chunk) -> torch.device:
    for c in chunk.columns.values():
        return c.data.device
    return _CPU


def literal_column(e: Lit, device: torch.device) -> Column:
    t = e.type
    if e.value is None:
        dt = t.torch_dtype
        return Column(torch.zeros((), dtype=dt, device=device), t,
                      torch.zeros((), dtype=torch.bool, device=device),
                      pa.array([""], pa.string()) if t.kind == "string" else None)
    if t.kind == "string":
        return Column(torch.zeros((), dtype=torch.int32, device=device), t, None,
                      pa.array([e.value], pa.string()))
    return Column(torch.tensor(e.value, dtype=t.torch_dtype, device=device), t)


# ------------------------------------------------------------------ helpers


def _and_valid(*vs):
    out = None
    for v in vs:
        if v is None:
            continue
        out = v if out is None else (out & v)
    return out


_I64_MAX = 2 ** 63 - 1


def _scale_up(x: torch.Tensor, f: int, valid: torch.Tensor | None, what: str) -> torch.Tensor:
    """``x * f`` in int64, refusing values whose product leaves int64."""
    if f == 1:
        return x.long()
    x = x.long()
    bound = _I64_MAX // f
    fail_if((x > bound) | (x < -bound), f"{what} is out of range for 64-bit decimals", valid)
    return x * f


def _to_type(c: Column, t: LType) -> torch.Tensor:
    """The values of numeric column ``c`` as tensor of type ``t`` (decimal scales aligned)."""
    src = c.type
    x = c.data
    if t.kind == "decimal":
        if src.kind == "decimal":
            if src.scale == t.scale:
                return x
            if src.scale < t.scale:
                return _scale_up(x, 10 ** (t.scale - src.scale), c.valid, f"a decimal scaled to {t}")
            return torch.div(x, 10 ** (src.scale - t.scale), rounding_mode="trunc")
        if src.is_float:
            y = torch.round(x.double() * (10 ** t.scale))
            fail_if(~(y.abs() < 2.0 ** 63), f"a floating-point value is out of range for {t}", c.valid)
            return y.long()
        return _scale_up(x, 10 ** t.scale, c.valid, f"an integer converted to {t}")
    if t.is_float:
        if src.kind == "decimal":
            return x.double() / (10 ** src.scale) if t.kind == "float64" else (x.double() / (10 ** src.scale)).float()
        return x.to(t.torch_dtype)
    if src.kind == "decimal":
        return torch.div(x, 10 ** src.scale, rounding_mode="trunc").to(t.torch_dtype)
    return x.to(t.torch_dtype)


def _numeric_pair(a: Column, b: Column, t: LType):
    return _to_type(a, t), _to_type(b, t)


# ------------------------------------------------------------------ arithmetic


def _arith(e: Func, chunk: Chunk) -> Column:
    a, b = (evaluate(x, chunk) for x in e.args)
    t = e.type
    valid = _and_valid(a.valid, b.valid)
    op = e.op
    if t.kind == "timestamp":  # timestamp +- microseconds
        x, y = a.data.to(torch.int64), b.data.to(torch.int64)
        r = x + y if op == "+" else x - y
        bad = _add_overflow(x, y, r, op)
        if bad is not None:
            fail_if(bad, "timestamp out of range", valid)
        return Column(r, t, valid)
    if t.kind == "date" or a.type.kind == "date":
        x = a.data.to(torch.int64)
        y = b.data.to(torch.int64)
        r = x + y if op == "+" else x - y
        if t.kind == "date":
            fail_if((r < -(2 ** 31)) | (r >= 2 ** 31), "date out of range", valid)
        return Column(r.to(t.torch_dtype), t, valid)
    if op == "/":
        # IEEE semantics, as DuckDB: x/0 is +-inf, 0/0 is NaN.
        x = _to_type(a, LType("float64"))
        y = _to_type(b, LType("float64"))
        return Column(x / y, t, valid)
    if op == "*" and t.kind == "decimal":
        # decimal*decimal has scale s1+s2; decimal*int keeps the decimal's scale.
        x, y = a.data.long(), b.data.long()
        r = x * y
        bad = _mul_overflow(x, y, r)
        if bad is not None:
            fail_if(bad, "decimal product overflows 64 bits; CAST an operand to DOUBLE", valid)
        return Column(r, t, valid)
    x, y = _numeric_pair(a, b, t)
    if op in ("+", "-"):
        r = x + y if op == "+" else x - y
        bad = _add_overflow(x, y, r, op) if t.is_integer or t.kind == "decimal" else None
        if bad is not None:
            what = "addition" if op == "+" else "subtraction"
            fail_if(bad, f"overflow in {what} of {t} values (out of range)", valid)
    elif op == "*":
        r = x * y
        bad = _mul_overflow(x, y, r) if t.is_integer else None
        if bad is not None:
            fail_if(bad, f"overflow in multiplication of {t} values (out of range)", valid)
    elif op == "%":
        if t.is_float:
            r = torch.fmod(x, y)
        else:
            zero = y == 0
            fail_if(zero, "division by zero in %", valid)  # as DuckDB (a float % 0 is NaN)
            r = torch.fmod(x, torch.where(zero, torch.ones_like(y), y))
    else:
        raise UnsupportedError(f"operator {op}")
    return Column(r, t, valid)


def _max_abs(x: torch.Tensor) -> int:
    lo, hi = torch.aminmax(x)
    return max(-int(lo), int(hi))


def _add_overflow(x: torch.Tensor, y: torch.Tensor, r: torch.Tensor, op: str) -> torch.Tensor | None:
    """Rows where ``r = x + y`` (or ``x - y``) wrapped around (None: provably none did).

    On the CPU one min/max per operand usually proves it; otherwise, per row, a sum wrapped
    iff its sign differs from both operands' (a difference: iff the operands' signs differ and
    the result's differs from the first's)."""
    if x.device.type == "cpu" and x.numel() and y.numel() and \
            _max_abs(x) + _max_abs(y) < 2 ** (torch.iinfo(r.dtype).bits - 1):
        return None
    if op == "+":
        return ((x ^ r) & (y ^ r)) < 0
    return ((x ^ y) & (x ^ r)) < 0


def _mul_overflow(x: torch.Tensor, y: torch.Tensor, r: torch.Tensor) -> torch.Tensor | None:
    """Rows where the integer product ``r = x * y`` wrapped around (None: provably none did).

    int64: on the CPU one min/max per operand usually proves that no product reaches 2**62;
    otherwise (and always on a GPU, where reading a bound would stall the stream) per row:
    the double product ``p`` has the true sign and a magnitude within 2**-52 of the truth, and
    between 2**62 and 1.5 * 2**63 a product wrapped iff ``r``'s sign differs from ``p``'s."""
    if r.dtype == torch.int64:
        if x.device.type == "cpu" and x.numel() and y.numel() and \
                _max_abs(x) * _max_abs(y) < 2 ** 62:
            return None
        p = x.double() * y.double()
        mag = p.abs()
        return (mag > 1.5 * 2.0 ** 63) | ((mag >= 2.0 ** 62) & ((r < 0) != (p < 0)))
    info = torch.iinfo(r.dtype)
    wide = x.long() * y.long()
    return (wide < info.min) | (wide > info.max)


def _neg(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    if a.type.is_integer or a.type.kind == "decimal":
        fail_if(a.data == torch.iinfo(a.data.dtype).min, f"overflow in negation of {a.type} (out of range)", a.valid)
    return Column(-a.data, a.type, a.valid)


def _abs(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    if a.type.is_integer or a.type.kind == "decimal":
        fail_if(a.data == torch.iinfo(a.data.dtype).min, f"overflow in ABS of {a.type} (out of range)", a.valid)
    return Column(a.data.abs(), a.type, a.valid)


def _round_half_away(x: torch.Tensor, digits: int = 0) -> torch.Tensor:
    """SQL rounding: halves go away from zero (torch.round rounds them to even)."""
    f = 10.0 ** digits
    return torch.sign(x) * torch.floor(x.abs() * f + 0.5) / f


def _round(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    digits = e.params[0] if e.params else 0
    if a.type.is_float:
        return Column(_round_half_away(a.data, digits), a.type, a.valid)
    scale = a.type.scale if a.type.kind == "decimal" else 0
    if (a.type.kind == "decimal" or a.type.is_integer) and digits < scale:
        # Half away from zero on the scaled integers: |x| + f/2, floored to a multiple of f.
        if scale - digits > 18:
            return Column(torch.zeros_like(a.data), a.type, a.valid)
        f = 10 ** (scale - digits)
        x = a.data.long()
        q = torch.div(x.abs() + f // 2, f, rounding_mode="floor")
        fail_if(q > _I64_MAX // f, f"ROUND result out of range for {a.type}", a.valid)
        r = (q * f * torch.sign(x)).to(a.data.dtype)
        if a.type.is_integer:
            info = torch.iinfo(a.data.dtype)
            fail_if((q * f > info.max), f"ROUND result out of range for {a.type}", a.valid)
        return Column(r, a.type, a.valid)
    return a


# ------------------------------------------------------------------ comparison


_CMP = {"=": torch.eq, "<>": torch.ne, "<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge}
_PC_CMP = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
           ">": pc.greater, ">=": pc.greater_equal}


def _compare(e: Func, chunk: Chunk) -> Column:
    a, b = (evaluate(x, chunk) for x in e.args)
    valid = _and_valid(a.valid, b.valid)
    from sluice.types import BOOL
    if a.type.kind == "string":
        return Column(_compare_strings(e.op, a, b), BOOL, valid)
    if a.type.kind in ("date", "timestamp", "bool"):
        x, y = a.data, b.data
    elif a.type.kind == "decimal" and b.type.kind == "decimal" and a.type.scale != b.type.scale:
        return Column(_compare_scaled(e.op, a, b), BOOL, valid)
    else:
        from sluice.types import common_numeric
        t = common_numeric(a.type, b.type)
        x, y = _numeric_pair(a, b, t)
    return Column(_CMP[e.op](x, y), BOOL, valid)


def _compare_scaled(op: str, a: Column, b: Column) -> torch.Tensor:
    """Exact comparison of decimals with different scales, without upscaling (no overflow):
    a (scale sa) vs b (scale sb > sa): with b = q*f + r (f = 10**(sb-sa), 0 <= r < f),
    a < b/f  <=>  a < q or (a == q and r > 0);  a == b/f  <=>  a == q and r == 0."""
    flip = a.type.scale > b.type.scale
    if flip:
        a, b = b, a
        op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
    f = 10 ** (b.type.scale - a.type.scale)
    x = a.data
    q = torch.div(b.data, f, rounding_mode="floor")
    r = b.data - q * f
    frac = r > 0
    lt = (x < q) | ((x == q) & frac)
    eq = (x == q) & ~frac
    if op == "<":
        return lt
    if op == "<=":
        return lt | eq
    if op == "=":
        return eq
    if op == "<>":
        return ~eq
    if op == ">":
        return ~(lt | eq)
    return ~lt


def _compare_strings(op: str, a: Column, b: Column) -> torch.Tensor:
    if b.is_const and b.dictionary is not None and len(b.dictionary) == 1 and not a.is_const:
        lit = b.dictionary[0]
        per_entry = _PC_CMP[op](a.dictionary, lit)
        return _gather_bool(per_entry, a.data)
    if a.is_const and len(a.dictionary) == 1 and not b.is_const:
        flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        return _compare_strings(flip, b, a)
    d, (ca, cb) = unify_dictionaries([a, b])
    if op in ("=", "<>"):
        return _CMP[op](ca, cb)
    rank = _dictionary_rank(d).to(ca.device)
    return _CMP[op](rank[ca.long()], rank[cb.long()])


def _dictionary_rank(d: pa.Array) -> torch.Tensor:
    order = pc.sort_indices(d).to_numpy()
    rank = np.empty(len(d), dtype=np.int64)
    rank[order] = np.arange(len(d))
    return host_tensor(rank)


def _gather_bool(per_entry: pa.Array, codes: torch.Tensor) -> torch.Tensor:
    arr = per_entry.fill_null(False).to_numpy(zero_copy_only=False)
    t = host_tensor(np.ascontiguousarray(arr, dtype=np.bool_)).to(codes.device)
    if codes.dim() == 0:
        return t[codes.long()]
    return t[codes.long()] if len(t) else torch.zeros(codes.shape, dtype=torch.bool, device=codes.device)


# ------------------------------------------------------------------ boolean logic


def _and(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    cols = [evaluate(x, chunk) for x in e.args]
    data = cols[0].data
    for c in cols[1:]:
        data = data & c.data
    if all(c.valid is None for c in cols):
        return Column(data, BOOL)
    # FALSE if any operand is a valid FALSE; else NULL if any operand is NULL; else TRUE.
    any_false = None
    all_valid = None
    for c in cols:
        f = ~c.data if c.valid is None else (c.valid & ~c.data)
        any_false = f if any_false is None else (any_false | f)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    valid = any_false | all_valid
    return Column(data & ~any_false if data.dim() else data, BOOL, valid)


def _or(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    cols = [evaluate(x, chunk) for x in e.args]
    if all(c.valid is None for c in cols):
        data = cols[0].data
        for c in cols[1:]:
            data = data | c.data
        return Column(data, BOOL)
    any_true = None
    all_valid = None
    for c in cols:
        t = c.data if c.valid is None else (c.valid & c.data)
        any_true = t if any_true is None else (any_true | t)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    return Column(any_true, BOOL, any_true | all_valid)


def _not(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    return Column(~a.data, a.type, a.valid)


def _is_null(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    if a.valid is None:
        r = torch.zeros(a.data.shape, dtype=torch.bool, device=a.data.device)
    else:
        r = ~a.valid
    return Column(r if e.op == "is_null" else ~r, BOOL)


# ------------------------------------------------------------------ strings


def _like(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    pattern = e.params[0]
    per_entry = pc.match_like(a.dictionary, pattern, ignore_case=e.op.endswith("ilike"))
    m = _gather_bool(per_entry, a.data)
    if e.op.startswith("not_"):
        m = ~m
    return Column(m, BOOL, a.valid)


def _in(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    values = [v for v in e.params[0] if v is not None]
    if a.type.kind == "string":
        per_entry = pc.is_in(a.dictionary, value_set=pa.array(values, pa.string()))
        m = _gather_bool(per_entry, a.data)
    else:
        # params hold literal values already converted to the column's representation.
        vals = torch.tensor(values, dtype=a.data.dtype, device=a.data.device)
        m = torch.isin(a.data, vals) if a.data.dim() else torch.isin(a.data.reshape(1), vals)[0]
    valid = a.valid
    if any(v is None for v in e.params[0]):
        # x IN (..., NULL) is NULL when not found.
        valid = m if valid is None else (valid & m)
    return Column(m, BOOL, valid)


def _map_dictionary(a: Column, fn) -> Column:
    new = fn(a.dictionary)
    if new.type != pa.string():
        new = new.cast(pa.string())
    return Column(a.data, a.type, a.valid, new)


def substring_slice(start: int, length: int | None) -> tuple[int, int | None]:
    """DuckDB's SUBSTRING(s, start, length) as a Python-style slice ``[begin:stop]``.

    1-based ``start``; a negative start counts from the end; 0 starts one before the first
    character; a negative length takes the characters before ``start``."""
    if start >= 0:  # absolute positions, clamped at 0
        s0 = start - 1
        if length is None:
            return max(s0, 0), None
        if length >= 0:
            return max(s0, 0), max(s0 + length, 0)
        return max(s0 + length, 0), max(s0, 0)
    if length is None:  # counted from the end: Python's negative indices clamp the same way
        return start, None
    if length >= 0:
        return start, (start + length if start + length < 0 else None)
    return start + length, start


def _substring(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    begin, stop = substring_slice(*e.params)
    if stop is None:
        return _map_dictionary(a, lambda d: pc.utf8_slice_codeunits(d, begin))
    return _map_dictionary(a, lambda d: pc.utf8_slice_codeunits(d, begin, stop))


def _upper(e: Func, chunk: Chunk) -> Column:
    fn = {"upper": pc.utf8_upper, "lower": pc.utf8_lower}[e.op]
    return _map_dictionary(evaluate(e.args[0], chunk), fn)


def _trim(e: Func, chunk: Chunk) -> Column:
    """TRIM / LTRIM / RTRIM of the given characters (spaces by default, as in DuckDB)."""
    fn = {"trim": pc.utf8_trim, "ltrim": pc.utf8_ltrim, "rtrim": pc.utf8_rtrim}[e.op]
    chars = e.params[0]
    return _map_dictionary(evaluate(e.args[0], chunk), lambda d: fn(d, characters=chars))


def _length(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    per = host_tensor(pc.utf8_length(a.dictionary).to_numpy(zero_copy_only=False).astype(np.int64))
    return Column(per.to(a.data.device)[a.data.long()], e.type, a.valid)


def _concat(e: Func, chunk: Chunk) -> Column:
    cols = [evaluate(x, chunk) for x in e.args]
    cols = [_as_string_column(c) for c in cols]
    n = chunk.num_rows
    valid = _and_valid(*[c.valid for c in cols])
    if all(c.is_const for c in cols):
        s = "".join(c.dictionary[0].as_py() for c in cols)
        return Column(torch.zeros((), dtype=torch.int32), e.type, valid, pa.array([s]))
    # Materialise the strings of each row (Arrow, vectorised), then re-encode.
    parts = [pa.scalar(c.dictionary[0].as_py()) if c.is_const
             else c.dictionary.take(pa.array(c.data.cpu().numpy())) for c in cols]
    joined = pc.binary_join_element_wise(*parts, "")
    enc = pc.dictionary_encode(joined)
    codes = host_tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32))
    return Column(codes.to(cols[0].data.device if not cols[0].is_const else cols[-1].data.device)[:n],
                  e.type, valid, enc.dictionary)


def _as_string_column(c: Column) -> Column:
    if c.type.kind == "string":
        return c
    raise UnsupportedError(f"concatenation of {c.type} values; CAST them to VARCHAR first")


# ------------------------------------------------------------------ dates


_DAY_US = 86_400_000_000
#: Microseconds in each sub-day unit of DATE_TRUNC / DATE_DIFF / EXTRACT.
_UNIT_US = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000,
            "microsecond": 1}


def _days_and_time(c: Column) -> tuple[torch.Tensor, torch.Tensor]:
    """(days since 1970-01-01, microseconds since midnight) of a date or timestamp column."""
    if c.type.kind == "date":
        return c.data.to(torch.int64), torch.zeros_like(c.data, dtype=torch.int64)
    days = torch.div(c.data, _DAY_US, rounding_mode="floor")
    return days, c.data - days * _DAY_US


def _extract(e: Func, chunk: Chunk) -> Column:
    """EXTRACT / DATE_PART of a date or timestamp, by DuckDB's definitions (SECOND is whole
    seconds, MILLISECOND and MICROSECOND count from the minute, EPOCH is seconds as a double)."""
    a = evaluate(e.args[0], chunk)
    fld = e.params[0]
    if fld == "epoch":
        us = a.data.to(torch.int64) * (_DAY_US if a.type.kind == "date" else 1)
        return Column(us.to(torch.float64) / 1e6, e.type, a.valid)
    days, tod = _days_and_time(a)
    y, m, d = dates.civil_from_days(days)
    out = {"year": y, "month": m, "day": d}.get(fld)
    if out is None:
        if fld == "quarter":
            out = (m - 1) // 3 + 1
        elif fld == "dow":
            out = (days + 4) % 7
        elif fld == "isodow":
            out = (days + 3) % 7 + 1
        elif fld == "doy":
            out = days - dates.days_from_civil(y, torch.ones_like(m), torch.ones_like(m)).to(torch.int64) + 1
        elif fld == "hour":
            out = tod // _UNIT_US["hour"]
        elif fld == "minute":
            out = tod // _UNIT_US["minute"] % 60
        elif fld == "second":
            out = tod // _UNIT_US["second"] % 60
        elif fld == "millisecond":
            out = tod // 1_000 % 60_000
        elif fld == "microsecond":
            out = tod % 60_000_000
        else:
            raise UnsupportedError(f"EXTRACT({fld.upper()} ...)")
    return Column(out.to(torch.int64), e.type, a.valid)


def _string_fn(e: Func, chunk: Chunk) -> Column:
    """A string function of constant parameters, once per dictionary entry (kernels/strings)."""
    from sluice.exec.kernels import strings
    a = evaluate(e.args[0], chunk)
    name, params = e.params[0], e.params[1:]
    res = strings.per_entry(_as_plain_string(a.dictionary), name, params)
    if strings.RESULT[name] == "string":
        return Column(a.data, e.type, a.valid, res.cast(pa.string()))
    values = res.to_numpy(zero_copy_only=False)
    per = host_tensor(values.astype(np.bool_ if strings.RESULT[name] == "bool" else np.int64))
    return Column(per.to(a.data.device)[a.data.long()], e.type, a.valid)


def _as_plain_string(d: pa.Array) -> pa.Array:
    return d if d.type == pa.string() else d.cast(pa.string())


def _date_trunc(e: Func, chunk: Chunk) -> Column:
    """DATE_TRUNC(unit, x): the first day of its year, quarter, month or ISO week, the day; for
    a timestamp also the hour, minute, second or millisecond it falls in."""
    a = evaluate(e.args[0], chunk)
    unit = e.params[0]
    if unit in _UNIT_US:  # a timestamp (the translator casts dates)
        step = _UNIT_US[unit]
        return Column(torch.div(a.data, step, rounding_mode="floor") * step, e.type, a.valid)
    days, _ = _days_and_time(a)
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
    if a.type.kind == "timestamp":
        return Column(out * _DAY_US, e.type, a.valid)
    return Column(out.to(torch.int32), e.type, a.valid)


def _date_diff(e: Func, chunk: Chunk) -> Column:
    """DATE_DIFF(unit, start, end): unit boundaries crossed from start to end, as DuckDB counts
    (on timestamps, day and longer units count the boundaries of their dates)."""
    start, end = evaluate(e.args[0], chunk), evaluate(e.args[1], chunk)
    unit = e.params[0]
    valid = _and_valid(start.valid, end.valid)
    if unit in _UNIT_US:
        us = [c.data.to(torch.int64) * (_DAY_US if c.type.kind == "date" else 1) for c in (start, end)]
        step = _UNIT_US[unit]
        out = torch.div(us[1], step, rounding_mode="floor") - torch.div(us[0], step, rounding_mode="floor")
        return Column(out, e.type, valid)
    d1, _ = _days_and_time(start)
    d2, _ = _days_and_time(end)
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


def _strftime(e: Func, chunk: Chunk) -> Column:
    """STRFTIME(date or timestamp, format): formatted once per distinct value (Arrow), codes by value."""
    a = evaluate(e.args[0], chunk)
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    us = uniq.astype("int64") * (86_400_000_000 if a.type.kind == "date" else 1)
    if "%f" in e.params[0]:
        raise UnsupportedError("STRFTIME with %f")
    # %S is whole seconds, as DuckDB prints it (Arrow would add the fraction of a finer unit)
    stamps = pa.array(np.floor_divide(us, 1_000_000), pa.timestamp("s"))
    text = pc.strftime(stamps, format=e.params[0])
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, e.type, a.valid, text.cast(pa.string()))


def _add_months(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    if a.type.kind == "timestamp":
        days, tod = _days_and_time(a)
        return Column(dates.add_months(days, e.params[0]).to(torch.int64) * _DAY_US + tod, e.type, a.valid)
    return Column(dates.add_months(a.data, e.params[0]), e.type, a.valid)


# ------------------------------------------------------------------ conditional


def _case(e: Func, chunk: Chunk) -> Column:
    args = e.args
    t = e.type
    conds = [evaluate(args[i], chunk) for i in range(0, len(args) - 1, 2)]
    vals = [evaluate(args[i], chunk) for i in range(1, len(args) - 1, 2)]
    vals.append(evaluate(args[-1], chunk))
    return _select_first(t, [(c.data if c.valid is None else c.data & c.valid) for c in conds], vals, chunk.num_rows)


def _coalesce(e: Func, chunk: Chunk) -> Column:
    vals = [evaluate(x, chunk) for x in e.args]
    conds = []
    for v in vals[:-1]:
        conds.append(torch.ones((), dtype=torch.bool, device=v.data.device) if v.valid is None else v.valid)
    return _select_first(e.type, conds, vals, chunk.num_rows)


def _select_first(t: LType, conds: list[torch.Tensor], vals: list[Column], n: int) -> Column:
    """Row-wise: the value of the first branch whose condition holds, else the last value."""
    dictionary = None
    if t.kind == "string":
        dictionary, datas = unify_dictionaries([v for v in vals])
    else:
        datas = [_to_type(v, t) if v.type != t else v.data for v in vals]
    out = datas[-1]
    valid = vals[-1].valid if vals[-1].valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
    any_null = any(v.valid is not None for v in vals)
    for cond, data, v in zip(reversed(conds), reversed(datas[:-1]), reversed(vals[:-1])):
        out = torch.where(cond, data, out)
        if any_null:
            vv = v.valid if v.valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
            valid = torch.where(cond, vv, valid)
    if out.dim() == 0 and n != 1:
        out = out.expand(n)
        valid = valid.expand(n) if any_null else valid
    return Column(out, t, valid if any_null else None, dictionary)


def _cast_numeric(a: Column, t: LType) -> torch.Tensor:
    """Numeric (or boolean) ``a`` as type ``t``, refusing values outside ``t``'s range."""
    src = a.type
    msg = f"a {src} value is out of range for {t}"
    if t.is_integer:
        info = torch.iinfo(t.torch_dtype)
        if src.is_float or src.kind == "decimal":
            # DuckDB: decimals round half away from zero, doubles half to even (nearbyint).
            if src.kind == "decimal":
                f = 10 ** src.scale
                q = torch.div(a.data.abs() + f // 2, f, rounding_mode="floor") * torch.sign(a.data)
                fail_if((q < info.min) | (q > info.max), msg, a.valid)
                return q.to(t.torch_dtype)
            x = torch.round(a.data.double())
            # 2**63 is a double, 2**63 - 1 is not: compare with the power of two, exclusive.
            fail_if(~((x >= float(info.min)) & (x < float(info.max) + 1.0)), msg, a.valid)
            return x.to(t.torch_dtype)
        if src.kind != "bool" and torch.iinfo(a.data.dtype).bits > info.bits:
            fail_if((a.data < info.min) | (a.data > info.max), msg, a.valid)
        return a.data.to(t.torch_dtype)
    if t.kind == "decimal" and src.kind == "decimal" and src.scale > t.scale:
        f = 10 ** (src.scale - t.scale)
        x = a.data
        return torch.div(x.abs() + f // 2, f, rounding_mode="floor") * torch.sign(x)
    return _to_type(a, t)


def _cast(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    t = e.type
    src = a.type
    if src == t:
        return a
    if t.is_numeric and (src.is_numeric or src.kind == "bool"):
        out = _cast_numeric(a, t)
        if t.kind == "decimal" and len(e.params) > 1 and e.params[1] is not None and e.params[1] < 19:
            # DECIMAL(p, s) holds |value| < 10**(p - s): DuckDB refuses the cast beyond that.
            fail_if(out.abs() >= 10 ** e.params[1], f"a value does not fit DECIMAL({e.params[1]},{t.scale})",
                    a.valid)
        return Column(out, t, a.valid)
    if src.kind == "string":
        # Cast each dictionary entry with Arrow, then gather.
        target = {"date": pa.date32(), "decimal": pa.decimal128(38, t.scale), "timestamp": pa.timestamp("us")}.get(t.kind)
        target = target or (pa.bool_() if t.kind == "bool" else getattr(pa, t.kind)())
        from sluice.io.parquet.convert import arrow_to_column
        codes = a.data.long()
        cast = _strings_to_dates if t.kind == "date" else (lambda arr: arr.cast(target))
        try:
            per = cast(a.dictionary)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            # The dictionary may hold entries no row uses (a filtered column): cast only those in use.
            used = torch.unique(codes if a.valid is None else codes[a.valid.expand(codes.shape)])
            try:
                part = cast(a.dictionary.take(pa.array(used.cpu().numpy())))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as ex:
                raise ExecutionError(f"cannot cast string to {t}: {str(ex).splitlines()[0]}") from None
            remap = torch.zeros(len(a.dictionary), dtype=torch.long, device=codes.device)
            remap[used] = torch.arange(len(used), device=codes.device)
            per, codes = part, remap[codes]
        pc_col = arrow_to_column(per, t, a.data.device)
        if pc_col.data.numel() == 0:  # no strings at all: every row is NULL
            return Column(torch.zeros(codes.shape, dtype=pc_col.data.dtype, device=codes.device), t,
                          torch.zeros(codes.shape, dtype=torch.bool, device=codes.device))
        return Column(pc_col.data[codes], t, a.valid)
    if t.kind == "string":
        from sluice.io.parquet.convert import column_to_arrow
        if src.is_float:
            return _float_to_string(a, t)
        if src.kind == "timestamp":
            return _timestamp_to_string(a, t)
        if a.is_const:
            s = column_to_arrow(a.expand(1)).cast(pa.string())
            return Column(torch.zeros((), dtype=torch.int32, device=a.data.device), t, a.valid, s)
        s = column_to_arrow(a).cast(pa.string())
        enc = pc.dictionary_encode(s)
        if len(enc.dictionary) == 0:  # all NULL
            enc = pc.dictionary_encode(s.fill_null(""))
        codes = host_tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32))
        return Column(codes.to(a.data.device), t, a.valid, enc.dictionary)
    if t.kind == "date" and src.kind == "timestamp":
        return Column(torch.div(a.data, 86_400_000_000, rounding_mode="floor").to(torch.int32), t, a.valid)
    if t.kind == "timestamp" and src.kind == "date":
        return Column(a.data.long() * 86_400_000_000, t, a.valid)
    raise UnsupportedError(f"CAST from {src} to {t}")


def _timestamp_to_string(a: Column, t) -> Column:
    """Timestamps as DuckDB prints them: ``YYYY-MM-DD HH:MM:SS`` and a fraction only when there
    is one, without trailing zeros. Formatted once per distinct value."""
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    text = pa.array(uniq.astype("int64"), pa.timestamp("us")).cast(pa.string())
    text = pc.replace_substring_regex(text, pattern=r"\.0+$", replacement="")
    text = pc.replace_substring_regex(text, pattern=r"(\.[0-9]*[1-9])0+$", replacement=r"\1")
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, t, a.valid, text)


def _strings_to_dates(arr: pa.Array) -> pa.Array:
    """Strings as dates, as DuckDB reads them: ISO ``YYYY-MM-DD``, and also one-digit months
    and days (``1999-2-01``, which TPC-DS queries write); anything else raises ArrowInvalid."""
    try:
        return arr.cast(pa.date32())
    except pa.ArrowInvalid:
        parts = pc.extract_regex(arr, r"^\s*(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\s*$")
        if parts.null_count > arr.null_count:
            raise
        y, m, d = (parts.field(k) for k in ("y", "m", "d"))
        iso = pc.binary_join_element_wise(y, pc.utf8_lpad(m, 2, "0"), pc.utf8_lpad(d, 2, "0"), "-")
        return iso.cast(pa.date32())


def _float_to_string(a: Column, t: LType) -> Column:
    """Floats as DuckDB prints them: the shortest repr that reads back (``1.0``, ``1e+16``),
    which is Python's ``repr`` (numpy's for float32). Formatted once per distinct value."""
    x = np.ascontiguousarray(a.data.reshape(-1).cpu().numpy())
    bits = x.view(np.int64 if x.dtype == np.float64 else np.int32)  # keeps -0.0 apart from 0.0
    ubits, inverse = np.unique(bits, return_inverse=True)
    uniq = ubits.view(x.dtype)
    if x.dtype == np.float64:
        text = pa.array([repr(v) for v in uniq.tolist()], pa.string())
    else:
        text = pa.array([str(v) for v in uniq], pa.string())
    codes = host_tensor(inverse.astype(np.int32)).to(a.data.device)
    return Column(codes.reshape(a.data.shape), t, a.valid, text)


_OPS = {
    "+": _arith, "-": _arith, "*": _arith, "/": _arith, "%": _arith,
    "neg": _neg, "abs": _abs, "round": _round,
    "=": _compare, "<>": _compare, "<": _compare, "<=": _compare, ">": _compare, ">=": _compare,
    "and": _and, "or": _or, "not": _not, "is_null": _is_null, "is_not_null": _is_null,
    "like": _like, "not_like": _like, "ilike": _like, "not_ilike": _like, "in": _in,
    "substring": _substring, "upper": _upper, "lower": _upper, "trim": _trim, "ltrim": _trim, "rtrim": _trim,
    "cast_null": lambda e, chunk: literal_column(Lit(None, e.type), _device_of(chunk)),
    "length": _length, "concat": _concat,
    "extract": _extract, "add_months": _add_months, "string_fn": _string_fn,
    "date_trunc": _date_trunc, "date_diff": _date_diff, "strftime": _strftime,
    "case": _case, "coalesce": _coalesce, "cast": _cast,
}
