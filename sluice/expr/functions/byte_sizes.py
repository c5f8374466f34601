"""FORMAT_BYTES / PG_SIZE_PRETTY / FORMATREADABLESIZE (powers of 1024: KiB, MiB, ...) and
FORMATREADABLEDECIMALSIZE (powers of 1000: kB, MB, ...): a byte count as DuckDB writes it --
the largest unit with a non-zero count up to PiB / PB, one truncated decimal (``1023.9 KiB``
for 1024 * 1024 - 1), ``1 byte`` / ``N bytes`` below the first unit, a minus sign before the
magnitude of a negative count (INT64_MIN is ``-8192.0 PiB``).

Why columnwise: the digits come from integer division of the magnitudes as unsigned 64-bit
NumPy values and the text is joined by Arrow's string kernels over the distinct counts, the
rows taking codes into them (no loop over rows)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.registry import register
from sluice.types import INT64, STRING

UNITS = {1024: ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"], 1000: ["bytes", "kB", "MB", "GB", "TB", "PB"]}


def format_bytes_text(values: np.ndarray, multiplier: int) -> pa.Array:
    """DuckDB's BytesToHumanReadableString of int64 ``values`` (with the sign in front)."""
    v = values.astype(np.int64)
    neg = v < 0
    mag = np.where(neg, (~v.view(np.uint64)) + np.uint64(1), v.view(np.uint64)).astype(np.uint64)  # |v|, 2**63 too
    m = np.uint64(multiplier)
    digits = [mag]
    for _ in range(5):
        digits.append(digits[-1] // m)
    unit = np.zeros(len(v), np.int64)
    for i in range(1, 6):
        unit = np.where(digits[i] != 0, i, unit)
    stack = np.stack(digits)  # row k: mag // m**k
    rows = np.arange(len(v))
    whole = stack[unit, rows]
    whole = np.where(unit < 5, whole % m, whole)
    frac = (stack[np.maximum(unit - 1, 0), rows] % m) * np.uint64(10) // m
    names = pa.array(UNITS[multiplier]).take(pa.array(unit))
    sign = pa.array(np.where(neg, "-", ""))
    number = pc.binary_join_element_wise(pa.array(whole).cast(pa.string()), pa.array(frac).cast(pa.string()), ".")
    scaled = pc.binary_join_element_wise(sign, number, pa.scalar(" "), names, "")
    small = pc.binary_join_element_wise(sign, pa.array(mag).cast(pa.string()),
                                        pa.array(np.where(mag == 1, " byte", " bytes")), "")
    return pc.if_else(pa.array(unit > 0), scaled, small)


def _bind(args, params):
    a, = args
    if a.type.kind == "null":
        return [cast_expr(a, INT64)], STRING
    if not a.type.is_integer:
        raise PlanError(f"FORMAT_BYTES needs an integer, got {a.type}")
    return [cast_expr(a, INT64) if a.type != INT64 else a], STRING


@register("format_bytes", bind=_bind)
def format_bytes(e, args, chunk) -> Column:
    """The byte counts as text (params: the multiplier, 1024 or 1000), per distinct count."""
    a, = args
    multiplier, = e.params
    uniq, codes = torch.unique(a.data.reshape(-1), return_inverse=True)
    text = format_bytes_text(uniq.cpu().numpy(), multiplier)
    data = codes.to(torch.int32).reshape(a.data.shape)
    return Column(data, STRING, a.valid, text.cast(pa.string()))

