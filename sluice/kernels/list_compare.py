"""DuckDB's order of two LISTs of numbers (or dates, times, booleans, decimals), row by row,
without order keys: element by element, a NULL element above every value (and equal to a NULL),
a list that is a prefix of the other first -- the order the keys of
:mod:`sluice.kernels.nested_keys` encode, computed here straight from the elements.

Why: ``scores < [500]`` keyed every row's list into bytes and compared the strings (40x
DuckDB at a million events); here each element of one side meets the element at its position
on the other side once, and the first difference per row decides (a scatter-min over the
elements, never a loop over rows). Strings, nested elements and intervals keep the keys."""

from __future__ import annotations

import torch

from sluice.chunk import Column, entry_rows, row_values
from sluice.kernels.values import float_order_key

_FAST = frozenset({"bool", "int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz",
                   "float32", "float64"})


def _fits(c: Column) -> bool:
    return c.type.kind == "list" and c.type.element.kind in _FAST and c.wide is None


def list_order_sign(a: Column, b: Column) -> torch.Tensor | None:
    """Per row -1, 0 or 1 (int64) as ``a`` sorts below, equal to or above ``b`` in DuckDB's order
    (a NULL row's sign is any: the caller's validity masks it); None where this kernel does not
    apply (then the order keys do): not both LISTs of numbers, or both constants."""
    if not (_fits(a) and _fits(b)) or (a.is_const and b.is_const):
        return None
    if a.is_const:
        s = list_order_sign(b, a)
        return None if s is None else -s
    n = len(a)
    rva = row_values(a)
    side = _side(b, n)
    if rva.children[0].wide is not None or side is None:  # 128-bit decimals: the keys refuse them
        return None
    starts_b, sizes_b, keys_b, nulls_b = side
    keys_a, nulls_a = _elements(rva.children[0])
    sizes_a = rva.offsets[1:] - rva.offsets[:-1]
    rows = entry_rows(rva.offsets)
    k = torch.arange(rows.numel(), device=rows.device) - rva.offsets[:-1][rows]
    both = (k < sizes_b[rows]).nonzero().squeeze(1)  # a's elements that have a partner in b
    rows, k = rows[both], k[both]
    q = starts_b[rows] + k
    na, nb = nulls_a[both], nulls_b[q]
    ka, kb = keys_a[both], keys_b[q]
    cmp = torch.where(na | nb, na.to(torch.int64) - nb.to(torch.int64),
                      (ka > kb).to(torch.int64) - (ka < kb).to(torch.int64))
    sign = (sizes_a > sizes_b).to(torch.int64) - (sizes_a < sizes_b).to(torch.int64)
    differ = cmp != 0
    if bool(differ.any()):
        rows, k, cmp = rows[differ], k[differ], cmp[differ]
        first = torch.full((n,), torch.iinfo(torch.int64).max, dtype=torch.int64, device=rows.device)
        first.scatter_reduce_(0, rows, k, "amin")
        at = k == first[rows]  # one element per row: its first difference
        sign[rows[at]] = cmp[at]
    return sign


def _side(c: Column, n: int):
    """(start, size of each row's list in the child, the child's element keys and NULL flags); a
    constant's one list is every row's. None for 128-bit elements."""
    if c.is_const:
        rv = row_values(c.expand(1))
        starts = torch.zeros(n, dtype=torch.int64, device=rv.offsets.device)
        sizes = rv.offsets[1:].expand(n)
    else:
        rv = row_values(c)
        starts, sizes = rv.offsets[:-1], rv.offsets[1:] - rv.offsets[:-1]
    if rv.children[0].wide is not None:
        return None
    return (starts, sizes) + _elements(rv.children[0])


def _elements(child: Column):
    """Each element's int64 key (floats in DuckDB's total order) and whether it is NULL."""
    m = len(child)
    v = child.data.reshape(-1).expand(m)
    keys = float_order_key(v) if v.is_floating_point() else v.to(torch.int64)
    nulls = torch.zeros(m, dtype=torch.bool, device=v.device) if child.valid is None else \
        ~child.valid.reshape(-1).expand(m)
    return keys, nulls
