"""Slices of strings by per-row positions: ``s[a:b]``, ARRAY_SLICE / LIST_SLICE of a string and
SUBSTRING(s, start[, length]) where the positions are columns (constant positions run per
dictionary entry in :mod:`sluice.expr.functions.strings`).

Why a kernel of its own: Arrow's ``utf8_slice_codeunits`` takes one start and stop for the
whole array. Here each row's character bounds become byte bounds through one prefix count of
UTF-8 lead bytes over the strings' data, and the result's bytes are gathered in one NumPy take
(no loop over rows). Positions count code points, as DuckDB's do. Where both positions are
constants the strings are the column's dictionary (each distinct string sliced once); otherwise
the rows' strings are materialised first.

DuckDB's rules: a slice ``s[a:b]`` is 1-based and inclusive, a negative bound counts from the
end, bounds are clamped to the string (its ``ClampSlice``, the same as a list's); SUBSTRING's
(:func:`substring_bounds`) is that of :func:`sluice.expr.functions.strings.substring_slice`, its
offset and length limited to [-2**32, 2**32 - 1] on rows with a value. A NULL position is a
NULL result."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, host_tensor, to_device
from sluice.errors import PlanError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.common import and_valid
from sluice.expr.functions.registry import register
from sluice.expr.functions.string_limits import POSITION_MAX, POSITION_MIN
from sluice.kernels.buffers import string_buffers
from sluice.kernels.checks import fail_if
from sluice.types import INT64, STRING
import pyarrow.compute as pc


def char_slice(d: pa.Array, begin: np.ndarray, stop: np.ndarray) -> pa.Array:
    """Characters ``[begin, stop)`` (0-based, already clamped: 0 <= begin <= stop <= length)
    of each string of ``d`` (NULLs as empty strings)."""
    bufs = string_buffers(d)
    n = len(d)
    if bufs is None:
        return pa.array([], pa.string())
    offsets, data = bufs
    lead = (data & 0xC0) != 0x80
    before = np.concatenate([[0], np.cumsum(lead, dtype=np.int64)])  # characters before a byte
    lead_at = np.append(np.flatnonzero(lead), len(data))  # the byte of the k-th character overall
    first = before[offsets[:-1]]
    chars = before[offsets[1:]] - first

    def byte_of(k: np.ndarray) -> np.ndarray:
        return np.where(k < chars, lead_at[np.minimum(first + k, len(lead_at) - 1)], offsets[1:])

    b0, b1 = byte_of(begin), byte_of(stop)
    sizes = b1 - b0
    out_off = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=out_off[1:])
    total = int(out_off[-1])
    take = np.repeat(b0 - out_off[:-1], sizes) + np.arange(total, dtype=np.int64)
    body = data[take] if total else np.zeros(0, np.uint8)
    kind = pa.large_string() if total >= 2 ** 31 else pa.string()
    off = out_off if kind == pa.large_string() else out_off.astype(np.int32)
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(off), pa.py_buffer(body)]).cast(pa.string())


def char_lengths(d: pa.Array) -> np.ndarray:
    return pc.utf8_length(d).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)


def list_slice_bounds(length: np.ndarray, lo: np.ndarray | None, hi: np.ndarray | None):
    """DuckDB's ClampSlice: 1-based inclusive bounds (negative from the end; None: the
    string's start or end) as 0-based ``[begin, stop)`` within ``length``."""
    lo = np.ones_like(length) if lo is None else lo
    hi = length if hi is None else hi
    lo = np.maximum(np.where(lo < 0, length + lo + 1, lo), 1)
    hi = np.minimum(np.where(hi < 0, length + hi + 1, hi), length)
    begin = np.minimum(lo - 1, length)
    return begin, np.maximum(hi, begin)


def substring_bounds(length: np.ndarray, start: np.ndarray, count: np.ndarray | None = None):
    """SUBSTRING(s, start[, count]) (positions within DuckDB's range) as 0-based ``[begin,
    stop)``: :func:`~sluice.expr.functions.strings.substring_slice` per row, its Python-style
    slice then clamped to the string; no count is 2**32 - 1, as in DuckDB."""
    if count is None:  # DuckDB's default length: 2**32 - 1 (from -2**32 it stops before the last character)
        count = np.full_like(start, POSITION_MAX)
    s0 = start - 1
    pos = start >= 0
    neg = count < 0
    lo = np.where(pos, np.where(neg, np.maximum(s0 + count, 0), np.maximum(s0, 0)),
                  np.where(neg, start + count, start))
    hi = np.where(pos, np.where(neg, np.maximum(s0, 0), np.maximum(s0 + count, 0)),
                  np.where(neg, start, start + count))
    open_end = ~pos & ~neg & (start + count >= 0)
    begin = np.where(lo < 0, np.maximum(length + lo, 0), np.minimum(lo, length))
    stop = np.where(open_end, length, np.where(hi < 0, np.maximum(length + hi, 0), np.minimum(hi, length)))
    return begin, np.maximum(stop, begin)


def _numbers(c: Column | None, n: int) -> np.ndarray | None:
    if c is None:
        return None
    return c.expand(n).data.cpu().numpy().astype(np.int64)


def _sliced(s: Column, bounds, positions: list[Column], n: int, e) -> Column:
    """Apply ``bounds(lengths, *position arrays)`` to the strings of ``s``: per dictionary
    entry when every position is constant, else per row."""
    valid = and_valid(*(c.expand(n).valid if c.valid is not None else None for c in [s] + positions))
    d = s.dictionary if s.dictionary.type == pa.string() else s.dictionary.cast(pa.string())
    if all(c.is_const for c in positions):
        nums = [np.full(len(d), int(c.data), np.int64) for c in positions]
        sliced = char_slice(d, *bounds(char_lengths(d), *nums))
        if all(c.valid is None or bool(c.valid) for c in positions):
            return Column(s.data, e.type, s.valid, sliced)
        return Column(s.expand(n).data, e.type, torch.zeros(n, dtype=torch.bool, device=s.data.device), sliced)
    codes = s.expand(n).data.cpu().numpy()
    rows = d.take(pa.array(codes.astype(np.int64)))
    begin, stop = bounds(char_lengths(rows), *(_numbers(c, n) for c in positions))
    if valid is not None:  # a NULL position's row: nothing to slice
        keep = valid.cpu().numpy()
        begin, stop = np.where(keep, begin, 0), np.where(keep, stop, 0)
    data = to_device(host_tensor(np.arange(n, dtype=np.int32)), s.data.device)
    return Column(data, e.type, valid, char_slice(rows, begin, stop))


def _bind(what: str):
    def bind(args, params):
        s, *positions = args
        if s.type.kind != "string":
            raise PlanError(f"{what} needs a string, got {s.type}")
        out = [s]
        for p in positions:
            if not (p.type.is_integer or p.type.kind == "null"):
                raise PlanError(f"{what} positions must be integers, got {p.type}")
            out.append(cast_expr(p, INT64) if p.type != INT64 else p)
        return out, STRING
    return bind


@register("string_slice", bind=_bind("a string slice"))
def string_slice(e, args, chunk) -> Column:
    """``s[a:b]``, ARRAY_SLICE(s, a, b) (params: which bounds are given)."""
    has_lo, has_hi = e.params
    s, *rest = args
    lo = rest.pop(0) if has_lo else None
    hi = rest.pop(0) if has_hi else None
    given = [c for c in (lo, hi) if c is not None]

    def bounds(length, *nums):
        it = iter(nums)
        return list_slice_bounds(length, next(it) if has_lo else None, next(it) if has_hi else None)
    return _sliced(s, bounds, given, chunk.num_rows, e)


@register("substring_rows", bind=_bind("SUBSTRING"))
def substring_rows(e, args, chunk) -> Column:
    """SUBSTRING(s, start[, length]) with positions that are columns."""
    n = chunk.num_rows
    s, *positions = args
    has = s.expand(n).valid
    has = torch.ones(n, dtype=torch.bool, device=s.data.device) if has is None else has
    for c, what in zip(positions, ("offset", "length")):
        v = c.expand(n)
        ok = has if v.valid is None else has & v.valid
        fail_if(v.data < POSITION_MIN, f"Substring {what} outside of supported range (< {POSITION_MIN})", ok)
        fail_if(v.data > POSITION_MAX, f"Substring {what} outside of supported range (> {POSITION_MAX})", ok)
    clamped = [Column(c.data.clamp(POSITION_MIN, POSITION_MAX), c.type, c.valid) for c in positions]
    return _sliced(s, substring_bounds, clamped, n, e)
