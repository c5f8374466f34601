"""CAST between nested types, as DuckDB casts them: a LIST to a LIST and a MAP to a MAP cast
their elements (keys, values); a STRUCT to a STRUCT with the same field names casts each field;
a named STRUCT to a MAP makes one entry per field, its name the key (cast to the key type) and
its value cast to the value type (``{'a': 1, 'b': 2}::MAP(VARCHAR, INT)`` is ``{a=1, b=2}``).

The values are first gathered into row order (:func:`sluice.chunk.row_values`: only the entries
rows use, so a value no row holds never fails a cast), then whole child columns are cast by the
scalar cast (``cast_child``): no loop over rows."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import torch

from sluice.chunk import Column, NestedValues, concat_columns, row_values
from sluice.errors import ExecutionError, UnsupportedError
from sluice.types import STRING, LType

ChildCast = Callable[[Column, LType, bool], Column]


def cast_nested(a: Column, t: LType, lenient: bool, cast_child: ChildCast) -> Column:
    """``a`` (LIST / STRUCT / MAP) as the nested type ``t``; ``lenient``: TRY_CAST (a child value
    that does not cast is NULL)."""
    src = a.type
    col = a.expand(1) if a.is_const else a
    v = _declared(row_values(col), src)
    n = v.size
    dev = col.data.device
    if src.kind == t.kind == "list":
        values = NestedValues((cast_child(v.children[0], t.element, lenient),), v.offsets, n)
    elif src.kind == t.kind == "map":
        values = NestedValues((cast_child(v.children[0], t.args[0], lenient),
                               cast_child(v.children[1], t.args[1], lenient)), v.offsets, n)
    elif src.kind == t.kind == "struct":
        if [x for x, _ in src.args] != [x for x, _ in t.args]:
            raise UnsupportedError(f"CAST from {src} to {t} (structs with other field names)")
        values = NestedValues(tuple(cast_child(c, u, lenient) for c, (_, u) in zip(v.children, t.args)), None, n)
    elif src.kind == "struct" and t.kind == "map":
        values = _struct_to_map(v, src, t, lenient, cast_child, dev)
    else:
        raise UnsupportedError(f"CAST from {src} to {t}")
    codes = torch.arange(n, dtype=torch.int64, device=dev)
    valid = None if col.valid is None else col.valid.reshape(-1).expand(n)
    if a.is_const:
        codes = codes.reshape(())
        valid = None if valid is None else valid.reshape(())
    return Column(codes, t, valid, values)


def _declared(v: NestedValues, t: LType) -> NestedValues:
    """``v`` with each child typed as ``t`` declares it: a child built from its first value
    (``[x::DECIMAL(4,4), -0.5]``) may carry another DECIMAL precision, which a decimal's text
    depends on (``.5000`` / ``0.5000``)."""
    kids = [u for _, u in t.args] if t.kind == "struct" else [t.element] if t.kind == "list" else list(t.args)
    return NestedValues(tuple(c if c.type is u else Column(c.data, u, c.valid, c.dictionary, c.wide)
                              for c, u in zip(v.children, kids)), v.offsets, v.size)


def _struct_to_map(v: NestedValues, src: LType, t: LType, lenient: bool, cast_child: ChildCast,
                   dev: torch.device) -> NestedValues:
    """Each struct's fields as its map's entries, in field order: the keys are the field names
    cast to the key type, the values each field cast to the value type."""
    names = [x for x, _ in src.args]
    k, n = len(names), v.size
    key_text = Column(torch.arange(k, dtype=torch.int32, device=dev), STRING, None, pa.array(names, pa.string()))
    keys = cast_child(key_text, t.args[0], False)
    if keys.valid is not None and not bool(keys.valid.all()):
        raise ExecutionError(f"a field name of {src} is NULL as a {t.args[0]} map key")
    if not keys.type.is_nested and keys.type.kind != "string" and len(set(keys.data.tolist())) != k:
        raise ExecutionError(f"map keys must be unique (the field names of {src} as {t.args[0]})")
    fields = [cast_child(c, t.args[1], lenient) for c in v.children]
    pos = torch.arange(n, dtype=torch.int64, device=dev).reshape(n, 1)
    field = torch.arange(k, dtype=torch.int64, device=dev).reshape(1, k)
    values = concat_columns(fields).take((field * n + pos).reshape(-1))
    key_col = keys.take(field.expand(n, k).reshape(-1))
    offsets = torch.arange(n + 1, dtype=torch.int64, device=dev) * k
    return NestedValues((key_col, values), offsets, n)
