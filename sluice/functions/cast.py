"""CAST between SQL types, with DuckDB's rounding and range checks: numbers to numbers
(decimals round half away from zero, doubles half to even), strings to anything through
Arrow once per dictionary entry, anything to strings printed as DuckDB prints it, dates to
timestamps and back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor
from sluice.errors import ExecutionError, UnsupportedError
from sluice.exec.checks import fail_if
from sluice.functions import register
from sluice.functions.common import to_type
from sluice.render import interval_text
from sluice.types import LType

_DAY_US = 86_400_000_000


@register("cast", result=lambda args, params: params[0])
def cast(e, args, chunk) -> Column:
    a, = args
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
        return _from_strings(a, t)
    if t.kind == "string":
        return _to_strings(a, t)
    if t.kind == "date" and src.is_timestamp:
        return Column(torch.div(a.data, _DAY_US, rounding_mode="floor").to(torch.int32), t, a.valid)
    if t.is_timestamp and src.kind == "date":
        return Column(a.data.long() * _DAY_US, t, a.valid)
    if t.is_timestamp and src.is_timestamp:  # the session time zone is UTC: the same microseconds
        return Column(a.data, t, a.valid)
    raise UnsupportedError(f"CAST from {src} to {t}")


def _interval_to_string(a: Column, t) -> Column:
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    codes = host_tensor(inverse.astype(np.int32).reshape(a.data.shape)).to(a.data.device)
    return Column(codes, t, a.valid, interval_text(uniq))


@register("cast_null", result=lambda args, params: args[0].type)
def cast_null(e, args, chunk) -> Column:
    """An untyped NULL given the type of the column it stands in (a UNION branch's NULL)."""
    from sluice.exec.evaluate import literal_column
    from sluice.plan.expr import Lit
    return literal_column(Lit(None, e.type), args[0].data.device)


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
    return to_type(a, t)


def _from_strings(a: Column, t: LType) -> Column:
    """Each dictionary entry cast with Arrow, then gathered by code."""
    from sluice.io.parquet.convert import arrow_to_column
    target = {"date": pa.date32(), "decimal": pa.decimal128(38, t.scale), "timestamp": pa.timestamp("us"),
              "timestamptz": pa.timestamp("us", tz="UTC")}.get(t.kind)
    target = target or (pa.bool_() if t.kind == "bool" else getattr(pa, t.kind)())
    codes = a.data.long()
    convert = {"date": _strings_to_dates, "timestamptz": _strings_to_instants}.get(t.kind, lambda arr: arr.cast(target))
    try:
        per = convert(a.dictionary)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # The dictionary may hold entries no row uses (a filtered column): cast only those in use.
        used = torch.unique(codes if a.valid is None else codes[a.valid.expand(codes.shape)])
        try:
            part = convert(a.dictionary.take(pa.array(used.cpu().numpy())))
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


def _to_strings(a: Column, t: LType) -> Column:
    from sluice.io.parquet.convert import column_to_arrow
    if a.type.is_float:
        return _float_to_string(a, t)
    if a.type.is_timestamp:
        return _timestamp_to_string(a, t)
    if a.type.kind == "interval":
        return _interval_to_string(a, t)
    if a.is_const:
        s = column_to_arrow(a.expand(1)).cast(pa.string())
        return Column(torch.zeros((), dtype=torch.int32, device=a.data.device), t, a.valid, s)
    s = column_to_arrow(a).cast(pa.string())
    enc = pc.dictionary_encode(s)
    if len(enc.dictionary) == 0:  # all NULL
        enc = pc.dictionary_encode(s.fill_null(""))
    codes = host_tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32))
    return Column(codes.to(a.data.device), t, a.valid, enc.dictionary)


def _timestamp_to_string(a: Column, t) -> Column:
    """Timestamps as DuckDB prints them: ``YYYY-MM-DD HH:MM:SS`` and a fraction only when there
    is one, without trailing zeros. Formatted once per distinct value."""
    values = a.data.reshape(-1).cpu().numpy()
    uniq, inverse = np.unique(values, return_inverse=True)
    text = pa.array(uniq.astype("int64"), pa.timestamp("us")).cast(pa.string())
    text = pc.replace_substring_regex(text, pattern=r"\.0+$", replacement="")
    text = pc.replace_substring_regex(text, pattern=r"(\.[0-9]*[1-9])0+$", replacement=r"\1")
    if a.type.kind == "timestamptz":  # DuckDB prints the offset of its time zone: UTC here
        text = pc.binary_join_element_wise(text, "+00", "")
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


def _strings_to_instants(arr: pa.Array) -> pa.Array:
    """Strings as TIMESTAMP WITH TIME ZONE: with an offset (``+02``, ``Z``) they name an instant;
    without one they are a time in the session time zone, UTC (as DuckDB with TimeZone UTC)."""
    try:
        return arr.cast(pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr.cast(pa.timestamp("us")).cast(pa.int64()).cast(pa.timestamp("us", tz="UTC"))


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
