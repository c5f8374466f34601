"""PRINTF's placeholders with flags, width, precision and the x / X / o / f conversions
(``%5d``, ``%-5s``, ``%.2f``, ``%08.3f``, ``%x``, ``%#x``): each distinct value formatted once
by NumPy's ``%`` (C's printf rules, which DuckDB's formatter follows), the result a string
column of codes into those texts -- never a loop over rows. Integers format as DuckDB's 64-bit
ones (``%x`` of -1 is sixteen f's), decimals as doubles (DuckDB formats them as such).
The translation (:meth:`sluice.sql.expressions.Expressions._formatted`) checks the types."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.chunk import Column, host_tensor, to_device
from sluice.errors import UnsupportedError
from sluice.expr.functions.common import to_type
from sluice.expr.functions.registry import register
from sluice.types import FLOAT64, STRING


def _bind(args, params):
    return list(args), STRING


_FLAGGED = re.compile(r"%([-+ #0]*)(\d*)(\.\d*)?([diouxXeEfFgG])")


def numeric_spec(spec: str) -> str:
    """``spec`` as DuckDB's formatter reads it for a number: with the ``0`` flag zeros pad even
    a left-justified value (``%-08.2f`` of 1.5 is ``00001.50``, C's ``1.50    ``), and an
    integer's precision is ignored (``%0.2i`` of 2 is ``2``, ``%08.3d`` of 5 is ``00000005``,
    where C pads the digits to the precision)."""
    m = _FLAGGED.fullmatch(spec)
    if m is None or "0" not in m.group(1):
        return spec
    precision = "" if m.group(4) in "di" else (m.group(3) or "")
    return f"%{m.group(1).replace('-', '')}{m.group(2)}{precision}{m.group(4)}"


@register("printf_spec", bind=_bind)
def printf_spec(e, args, chunk) -> Column:
    a, = args
    spec = e.params[0]
    if a.type.kind == "string":
        d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
        if any(ch.isdigit() for ch in spec) and len(d) and \
                pc.any(pc.match_substring_regex(d, "[\\x{1100}-\\x{10FFFF}]")).as_py():
            # (fmt pads by display width: two columns for wide characters, from U+1100 on)
            raise UnsupportedError(f"PRINTF width {spec!r} over wide characters")
        texts = np.char.mod(spec, np.asarray(d.fill_null("").to_numpy(zero_copy_only=False), dtype=str))
        return Column(a.data, STRING, a.valid, pa.array(texts, pa.string()))
    if a.type.kind == "decimal" or a.type.is_float:
        values = to_type(a, FLOAT64).double()
    else:
        values = a.data.long()
    spec = numeric_spec(spec)
    flat = values.reshape(-1).cpu().numpy()
    if spec[-1] in "xXo":
        flat = flat.view(np.uint64)  # two's complement, as C's unsigned conversions
    uniq, inverse = np.unique(flat, return_inverse=True)
    texts = np.char.mod(spec, uniq) if uniq.size else np.array([], dtype=str)
    if "#" in spec and uniq.size:  # C writes 0 as 0 under %#x, Python as 0x0
        texts = np.where(uniq == 0, np.char.mod(spec.replace("#", ""), uniq), texts)
    codes = to_device(host_tensor(inverse.astype(np.int32).reshape(values.shape)), a.data.device)
    return Column(codes, STRING, a.valid, pa.array(texts, pa.string()))
