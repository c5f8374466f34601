"""DuckDB's BIT type: casts to and from it, BIT_COUNT, BIT_LENGTH, OCTET_LENGTH, GET_BIT, SET_BIT,
BIT_POSITION, BITSTRING, the bitwise operators ``&`` ``|`` ``xor`` ``~`` ``<<`` ``>>``, and the
bit strings BITSTRING_AGG builds from a group's list of values.

A BIT column is a string column of its '0' / '1' text (:data:`sluice.types.BIT`, why in
:mod:`sluice.kernels.bits`); each function here works on the rows' text with Arrow kernels and
numpy over the concatenated characters -- never a loop over rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.arrow import arrow_to_column, column_to_arrow
from sluice.chunk import Column
from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.expr.functions.registry import register
from sluice.kernels import bits as B
from sluice.types import BIT, INT32, INT64, STRING, LType, is_bit

#: Bits of each type a BIT casts to or from (DuckDB: a type's width; BOOLEAN is a byte).
WIDTH = {"bool": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32, "float64": 64}


def _rows(c: Column) -> pa.Array:
    """The rows' text (NULL where NULL)."""
    return column_to_arrow(c.expand(1) if c.is_const else c)


def _out(arr: pa.Array, t: LType, like: Column) -> Column:
    """An Arrow result per row as a column of ``t`` (0-d again where ``like`` is a constant)."""
    col = arrow_to_column(arr, STRING if is_bit(t) else t, like.data.device)
    col = Column(col.data, t, col.valid, col.dictionary)
    if like.is_const:
        return Column(col.data.reshape(()), t, None if col.valid is None else col.valid.reshape(()), col.dictionary)
    return col


# ------------------------------------------------------------------ casts (called by cast.py)

def cast_to_bit(a: Column, lenient: bool) -> Column:
    """VARCHAR, integers, BOOLEAN, FLOAT / DOUBLE (their bits) as BIT; TRY_CAST (``lenient``)
    gives NULL for text that is no bit string."""
    src = a.type
    if src.kind == "string":
        rows = _rows(a)
        if is_bit(src):
            return Column(a.data, BIT, a.valid, a.dictionary)
        bad = pc.fill_null(pc.match_substring_regex(rows, "[^01]"), False)
        if pc.any(bad).as_py():
            if not lenient:
                ch = B.invalid_bit_text(rows)
                raise ExecutionError(f"Invalid character encountered in string -> bit conversion: '{ch}'")
            rows = pc.if_else(bad, pa.scalar(None, pa.string()), rows)
        return _out(B.text_to_bits(rows), BIT, a)
    if src.kind not in WIDTH:
        raise UnsupportedError(f"CAST from {src} to BIT")
    v = a.data.reshape(-1).cpu()
    if src.is_float:
        v = v.view(torch.int32 if src.kind == "float32" else torch.int64)
    values = v.to(torch.int64).numpy()
    text = B.integers_to_bits(values, WIDTH[src.kind])
    valid = None if a.valid is None else pa.array(a.valid.reshape(-1).cpu().numpy())
    if valid is not None:
        text = pc.if_else(valid, text, pa.scalar(None, pa.string()))
    return _out(text, BIT, a)


def cast_from_bit(a: Column, t: LType, lenient: bool) -> Column:
    """BIT as VARCHAR (its text), or as an integer / BOOLEAN / FLOAT / DOUBLE of its bits (DuckDB:
    a bit string longer than the type's width does not fit)."""
    if t.kind == "string":
        return Column(a.data, STRING, a.valid, a.dictionary)
    if t.kind not in WIDTH:
        raise UnsupportedError(f"CAST from BIT to {t}")
    rows = _rows(a)
    width = WIDTH[t.kind]
    values, too_long = B.bits_to_unsigned(rows, width)
    valid_rows = rows.is_valid().to_numpy(zero_copy_only=False)
    if (too_long & valid_rows).any() and not lenient:
        name = {"bool": "UINT8", "float32": "FLOAT", "float64": "DOUBLE"}.get(t.kind, t.kind.upper())
        raise ExecutionError(f"Bitstring doesn't fit inside of {name}")
    if t.kind == "bool":
        data = torch.from_numpy(values != 0)
    elif t.is_float:
        data = torch.from_numpy(values.astype(np.uint32).view(np.float32) if width == 32 else values.view(np.float64))
        data = data.to(t.torch_dtype)
    else:  # the width's two's complement (a value of exactly width bits may be negative)
        data = torch.from_numpy(values.astype({8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[width]).copy())
    valid = torch.from_numpy(valid_rows & ~too_long)
    data = data.to(a.data.device)
    valid = valid.to(a.data.device)
    if a.is_const:
        return Column(data.reshape(()), t, valid.reshape(()))
    return Column(data, t, valid)


# ------------------------------------------------------------------ functions

def _bits(args, what: str, n: int = 1) -> list:
    for a in args[:n]:
        if not is_bit(a.type):
            raise PlanError(f"{what} takes a BIT, not {a.type}")
    return list(args)


def _bind_bits(what: str, result: LType, n: int = 1):
    """The first ``n`` arguments BITs (the translation casts string constants to BIT)."""
    def bind(args, params):
        return _bits(args, what, n), result
    return bind


@register("bit_count", bind=_bind_bits("BIT_COUNT", INT64))
def bit_count(e, args, chunk) -> Column:
    return _out(B.bit_counts(_rows(args[0])).cast(pa.int64()), INT64, args[0])


@register("bit_length", bind=lambda args, params: (list(args), INT64))
@register("octet_length", bind=_bind_bits("OCTET_LENGTH", INT64))
def bit_length(e, args, chunk) -> Column:
    """A BIT's bits (OCTET_LENGTH: its bytes); BIT_LENGTH of a VARCHAR: its UTF-8 bytes times 8."""
    if not is_bit(args[0].type):
        return _out(pc.multiply(pc.binary_length(_rows(args[0])).cast(pa.int64()), 8), INT64, args[0])
    n = pc.utf8_length(_rows(args[0])).cast(pa.int64())
    if e.op == "octet_length":
        n = pc.divide(pc.add(n, 7), 8)
    return _out(n, INT64, args[0])


def _int_rows(c: Column, n: int) -> tuple[np.ndarray, np.ndarray]:
    """An integer argument's values per row (n rows) and their validity."""
    v = c.data.expand(n) if c.is_const else c.data
    ok = torch.ones(n, dtype=torch.bool) if c.valid is None else (c.valid.expand(n) if c.is_const else c.valid)
    return v.cpu().to(torch.int64).numpy(), ok.cpu().numpy()


def _row_count(args) -> int:
    return max((len(a) for a in args if not a.is_const), default=1)


def _check_index(rows, i, ok) -> None:
    """DuckDB's error for a bit index outside its row's bits (0 .. length - 1)."""
    length = pc.utf8_length(rows.fill_null("")).to_numpy(zero_copy_only=False).astype(np.int64)
    out_of = ok & ((i < 0) | (i >= length))
    if out_of.any():
        k = int(np.flatnonzero(out_of)[0])
        raise ExecutionError(f"bit index {i[k]} out of valid range (0..{length[k] - 1})")


@register("get_bit", bind=_bind_bits("GET_BIT", INT32))
def get_bit(e, args, chunk) -> Column:
    n = _row_count(args)
    b = args[0] if not args[0].is_const or n == 1 else args[0].expand(n)
    rows = _rows(b)
    i, ok = _int_rows(args[1], n)
    ok = ok & rows.is_valid().to_numpy(zero_copy_only=False)
    _check_index(rows, i, ok)
    chars, offs = B._chars(rows.fill_null(""))
    pos = np.where(ok, offs[:-1] + i, 0)
    bit = (chars[pos] - ord("0")).astype(np.int32) if len(chars) else np.zeros(n, np.int32)
    out = pa.array(bit, pa.int32(), mask=~ok)
    return _out(out, INT32, args[0] if all(a.is_const for a in args) else Column(torch.zeros(n, dtype=torch.int32), INT32))


@register("set_bit", bind=_bind_bits("SET_BIT", BIT))
def set_bit(e, args, chunk) -> Column:
    n = _row_count(args)
    rows = _rows(args[0] if not args[0].is_const or n == 1 else args[0].expand(n))
    i, ok_i = _int_rows(args[1], n)
    v, ok_v = _int_rows(args[2], n)
    ok = ok_i & ok_v & rows.is_valid().to_numpy(zero_copy_only=False)
    if (ok & (v != 0) & (v != 1)).any():
        raise ExecutionError("The new bit must be 1 or 0")
    _check_index(rows, i, ok)
    chars, offs = B._chars(rows.fill_null(""))
    chars = chars.copy()
    hit = np.flatnonzero(ok)
    chars[offs[hit] + i[hit]] = v[hit] + ord("0")
    out = pc.if_else(pa.array(ok), B._strings(chars, offs), pa.scalar(None, pa.string()))
    return _out(out, BIT, args[0] if all(a.is_const for a in args) else Column(torch.zeros(n, dtype=torch.int32), STRING))


@register("bit_position", bind=lambda args, params: (_bits(args, "BIT_POSITION", 0), INT32))
def bit_position(e, args, chunk) -> Column:
    pattern, = e.params
    return _out(B.bit_positions(_rows(args[0]), pattern).cast(pa.int32()), INT32, args[0])


@register("bitstring", bind=lambda args, params: (list(args), BIT))
def bitstring(e, args, chunk) -> Column:
    width, = e.params
    rows = _rows(cast_to_bit(args[0], False))
    if pc.any(pc.greater(pc.utf8_length(rows), width)).as_py():
        raise ExecutionError("Length must be equal or larger than input string")
    return _out(pc.utf8_lpad(rows, width, "0"), BIT, args[0])


def _bind_bitwise(args, params):
    if not all(is_bit(a.type) for a in args):
        raise UnsupportedError("bitwise operators on " + " and ".join(str(a.type) for a in args)
                               + " (sluice has them for BIT values)")
    return list(args), BIT


@register("bit_and", "bit_or", "bit_xor", "bit_not", bind=_bind_bitwise)
def bitwise(e, args, chunk) -> Column:
    op = {"bit_and": "&", "bit_or": "|", "bit_xor": "xor", "bit_not": "~"}[e.op]
    n = _row_count(args)
    rows = [_rows(a if not a.is_const or n == 1 else a.expand(n)) for a in args]
    valid = rows[0].is_valid() if len(rows) == 1 else pc.and_(rows[0].is_valid(), rows[1].is_valid())
    out, mismatch = B.bitwise(rows[0], rows[1] if len(rows) > 1 else None, op)
    if mismatch:
        what = {"&": "AND", "|": "OR", "xor": "XOR"}[op]
        raise ExecutionError(f"Cannot {what} bit strings of different sizes")
    out = pc.if_else(valid, out, pa.scalar(None, pa.string()))
    return _out(out, BIT, args[0] if all(a.is_const for a in args) else Column(torch.zeros(n, dtype=torch.int32), STRING))


@register("bit_shift", bind=lambda args, params: (_bits(args, "<< / >>"), BIT))
def bit_shift(e, args, chunk) -> Column:
    n, left = e.params
    rows = _rows(args[0])
    if n < 0:
        raise UnsupportedError("shifting a BIT by a negative count")
    return _out(B.shifted(rows, n, left), BIT, args[0])

