"""A STRUCT sort key as sort keys of its fields, in DuckDB's order of structs: field by field,
a NULL field above every value (so last ascending, first descending: the order reverses whole),
a NULL struct where the key's NULLS FIRST / LAST puts it -- and structs within structs the same.

Why: sorting on a struct sorted on its order key (:mod:`sluice.kernels.nested_keys`), one byte
string per row, then encoded and ranked (``order by user.address`` at a million events: the
order keys and their ranking were 60% of the query). Each field sorts as a column of its own
instead: a string field by its dictionary's rank, a number as it is; a field that is a LIST or
MAP keeps its order key."""

from __future__ import annotations

import torch

from sluice.chunk import Column
from sluice.types import INT64


def struct_sort_keys(col: Column, ascending: bool, nulls_first: bool) -> list[tuple[Column, bool, bool]]:
    """``col`` as (column, ascending, nulls_first) sort keys, most significant first: ``col``
    itself unless it is a STRUCT; a STRUCT's NULL flag (its rows tie otherwise), then each
    field's keys, a NULL struct's fields all NULL so that its rows tie on them too."""
    if col.type.kind != "struct":
        return [(col, ascending, nulls_first)]
    n = len(col)
    codes = col.data.reshape(-1).expand(n)
    valid = None if col.valid is None else col.valid.reshape(-1).expand(n)
    out = []
    if valid is not None:
        out.append((Column(torch.zeros(n, dtype=torch.int64, device=codes.device), INT64, valid), ascending, nulls_first))
    for child in col.dictionary.children:
        field = child.take(codes) if not child.is_const else child.expand(n)
        if valid is not None:
            fv = valid if field.valid is None else field.valid.reshape(-1).expand(n) & valid
            field = Column(field.data, field.type, fv, field.dictionary, field.wide)
        out.extend(struct_sort_keys(field, ascending, not ascending))  # a NULL field: above every value
    return out
