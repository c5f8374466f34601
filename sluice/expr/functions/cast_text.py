"""CAST to VARCHAR: every type printed as DuckDB prints it -- floats in their shortest form,
decimals with every digit of their scale, dates and timestamps (BC years, infinities), intervals,
and LIST / STRUCT / MAP values as DuckDB's text of them -- each formatted once per distinct
value, the column's codes pointing at the texts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.arrow import column_to_arrow
from sluice.chunk import Column, host_tensor
from sluice.expr.functions.cast_nested import cast_nested
from sluice.expr.functions.time_format import date_text, timestamp_text
from sluice.kernels.infinite import infinity_of
from sluice.render import float_text, interval_text, nested_text
from sluice.types import STRING, LType, list_of, map_of, struct_of


def to_strings(a: Column, t: LType, cast_column) -> Column:
    """``a`` as VARCHAR ``t`` as DuckDB prints it; ``cast_column(c, type, lenient)`` casts the
    leaves of a nested value first (the scalar casts)."""
    if a.type.is_nested:
        return _nested_to_string(a, t, cast_column)
    if a.type.is_float:
        return _float_to_string(a, t)
    if a.type.is_temporal:
        return _timestamp_to_string(a, t)
    if a.type.kind == "interval":
        return _interval_to_string(a, t)
    if a.type.kind == "decimal":
        return _decimal_to_string(a, t)
    if a.is_const:
        s = column_to_arrow(a.expand(1)).cast(pa.string())
        return Column(torch.zeros((), dtype=torch.int32, device=a.data.device), t, a.valid, s)
    s = column_to_arrow(a).cast(pa.string())
    enc = pc.dictionary_encode(s)
    if len(enc.dictionary) == 0:  # all NULL
        enc = pc.dictionary_encode(s.fill_null(""))
    codes = host_tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32))
    return Column(codes.to(a.data.device), t, a.valid, enc.dictionary)


def _as_text_type(t: LType) -> LType:
    """``t`` with every leaf a VARCHAR (the shape kept)."""
    if t.kind == "struct":
        return struct_of((n, _as_text_type(u)) for n, u in t.args)
    if t.kind == "list":
        return list_of(_as_text_type(t.element))
    if t.kind == "map":
        return map_of(_as_text_type(t.args[0]), _as_text_type(t.args[1]))
    return STRING


def _nested_to_string(a: Column, t: LType, cast_column) -> Column:
    """A LIST / STRUCT / MAP as DuckDB's VARCHAR of it (its shell's text: ``[1.5, NULL]``,
    ``{'a': 'x,y'}``, ``{k=1}``): the leaves first cast to VARCHAR by the scalar casts (DuckDB's
    text of each: ``1e-07``, ``.5000``), then written by the result printer's column-wise
    writer, which quotes a leaf's text where DuckDB does (``['2020-01-01 10:00:00']``)."""
    text_type = _as_text_type(a.type)
    if text_type != a.type:
        a = cast_nested(a, text_type, False, cast_column)
    col = a.expand(1) if a.is_const else a
    text = nested_text(column_to_arrow(col))
    enc = pc.dictionary_encode(text.fill_null(""))
    codes = host_tensor(enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)).to(a.data.device)
    return Column(codes.reshape(()) if a.is_const else codes, t, a.valid, enc.dictionary)


def _decimal_to_string(a: Column, t) -> Column:
    """Decimals as DuckDB prints them: every digit of the scale (``0.0000000000``, not Arrow's
    ``0E-10``), a minus sign only on values below zero, no integer digit where the precision
    leaves none (``.500``). Formatted once per distinct value."""
    values = a.data.reshape(-1).cpu().numpy().astype(np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    s = a.type.scale
    mag = pa.array(np.abs(uniq).astype(np.uint64))  # |INT64_MIN| fits uint64
    if s == 0:
        text = mag.cast(pa.string())
    else:
        f = pa.scalar(10 ** s, pa.uint64())
        whole = pc.divide(mag, f).cast(pa.string())
        if 0 < a.type.precision <= s:  # DuckDB prints a DECIMAL(3,3) without the 0: .500
            whole = pa.array([""] * len(uniq), pa.string())
        frac = pc.utf8_lpad(pc.subtract(mag, pc.multiply(pc.divide(mag, f), f)).cast(pa.string()), s, "0")
        text = pc.binary_join_element_wise(whole, frac, ".")
    text = pc.if_else(pa.array(uniq < 0), pc.binary_join_element_wise(pa.scalar("-"), text, ""), text)
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, t, a.valid, text)


def _timestamp_to_string(a: Column, t) -> Column:
    """Dates and timestamps as DuckDB prints them (sluice.expr.functions.time_format): years before 1
    with `` (BC)``, a fraction only when there is one. Formatted once per distinct value."""
    values = a.data.reshape(-1).cpu().numpy().astype(np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    is_date = a.type.kind == "date"
    big = infinity_of(is_date)
    finite = np.where(np.abs(uniq) == big, 0, uniq)
    text = date_text(finite) if is_date else timestamp_text(finite, a.type.kind == "timestamptz")
    text = pc.if_else(pa.array(uniq == big), pa.scalar("infinity"),
                      pc.if_else(pa.array(uniq == -big), pa.scalar("-infinity"), text))
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, t, a.valid, text)


def _float_to_string(a: Column, t: LType) -> Column:
    """Floats as DuckDB prints them: the shortest repr that reads back (``1.0``, ``1e+16``),
    Python's ``repr`` (its layout with a REAL's own shortest digits). Formatted once per
    distinct value."""
    x = np.ascontiguousarray(a.data.reshape(-1).cpu().numpy())
    text, inverse = float_text(x)
    codes = host_tensor(inverse.astype(np.int32)).to(a.data.device)
    return Column(codes.reshape(a.data.shape), t, a.valid, text)


def _interval_to_string(a: Column, t) -> Column:
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, t, a.valid, interval_text(uniq))
