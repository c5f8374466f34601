"""DuckDB's order of two LISTs of numbers (or dates, times, booleans, decimals), row by row,
without order keys: element by element, a NULL element above every value (and equal to a NULL),
a list that is a prefix of the other first -- the order the keys of
:mod:`sluice.kernels.nested_keys` encode, computed here straight from the elements.

Why: ``scores < [500]`` keyed every row's list into bytes and compared the strings (40x
DuckDB at a million events). Here the rows meet position by position (:data:`POSITIONS` at
most): the first elements of every row are gathered and compared, the rows they decide drop
out, the next position is compared for the rest -- a few vector operations over the rows per
position, and a comparison with a short constant is decided in one or two (a loop over list
positions, never over rows). Rows whose lists agree on more positions than that go to a
scatter-min over all their elements, where each element of one side meets the element at its
position on the other side once and the first difference per row decides. (That scatter-min
over every element was the only path: at a million events it built four tensors the size of
all the elements to decide ``scores < [500]`` from the first one, 7-8x DuckDB.)
Strings, nested elements and intervals keep the keys."""

from __future__ import annotations

import torch

from sluice.chunk import Column, entry_rows, row_values
from sluice.kernels.values import float_order_key

_FAST = frozenset({"bool", "int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz",
                   "float32", "float64"})

#: Positions compared row-wise before the rows still undecided go to the all-elements kernel.
POSITIONS = 4


def _fits(c: Column) -> bool:
    return c.type.kind == "list" and c.type.element.kind in _FAST and c.wide is None


def list_order_sign(a: Column, b: Column) -> torch.Tensor | None:
    """Per row -1, 0 or 1 (int8) as ``a`` sorts below, equal to or above ``b`` in DuckDB's order
    (a NULL row's sign is any: the caller's validity masks it); None where this kernel does not
    apply (then the order keys do): not both LISTs of numbers, or both constants."""
    if not (_fits(a) and _fits(b)) or (a.is_const and b.is_const):
        return None
    if a.is_const:
        s = list_order_sign(b, a)
        return None if s is None else -s
    if a.dictionary.children[0].wide is not None or b.dictionary.children[0].wide is not None:
        return None  # 128-bit decimals: the keys refuse them
    n = len(a)
    start_a, size_a = _spans(a, n)
    start_b, size_b = _spans(b, n)
    elem_a, elem_b = a.dictionary.children[0], b.dictionary.children[0]
    sign, live = None, None  # the rows not decided yet (None: every row)
    for k in range(POSITIONS):
        sa, sb = (size_a, size_b) if live is None else (size_a[live], size_b[live])
        ha, hb = sa > k, sb > k
        ended = ha.to(torch.int8) - hb.to(torch.int8)  # one list ended here: the shorter first (both: 0)
        if live is None:  # (an undecided row's sign is 0)
            sign, live = ended, (ha & hb).nonzero().squeeze(1)
        else:
            sign[live] = ended
            live = live[ha & hb]
        if not live.numel():
            return sign
        ka, na = _keys(elem_a, start_a[live] + k)
        # a constant's element is one value for every row (broadcast, never gathered)
        kb, nb = _keys(elem_b, start_b[:1] + k if b.is_const else start_b[live] + k)
        cmp = _order(ka, na, kb, nb)
        sign[live] = cmp
        live = live[cmp == 0]
        if not live.numel():
            return sign
    sign[live] = _all_elements_sign(a.take(live), b.expand(n).take(live) if b.is_const else b.take(live)).to(torch.int8)
    return sign


def _order(ka: torch.Tensor, na: torch.Tensor | None, kb: torch.Tensor, nb: torch.Tensor | None) -> torch.Tensor:
    """-1, 0 or 1 (int8) per pair of element keys, a NULL element above every value and equal
    to a NULL (``na`` / ``nb``: NULL flags, None where there are none)."""
    cmp = (ka > kb).to(torch.int8) - (ka < kb).to(torch.int8)
    if na is None and nb is None:
        return cmp
    false = torch.zeros((), dtype=torch.bool, device=ka.device)
    na, nb = false if na is None else na, false if nb is None else nb
    return torch.where(na | nb, na.to(torch.int8) - nb.to(torch.int8), cmp)


def _spans(c: Column, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's list as (its first element's position in the child, its length); a NULL
    row's length is 0 (its sign is masked by the caller); a constant's one list is every row's."""
    v = c.dictionary
    if c.is_const:
        code = c.data.reshape(1)
        start = v.offsets[code].expand(n)
        size = v.sizes(code).expand(n)
        return start, size
    codes = c.data.reshape(-1)
    o = v.offsets
    if codes.numel() == v.size and torch.equal(codes, torch.arange(n, dtype=codes.dtype, device=codes.device)):
        return o[:-1], o[1:] - o[:-1]  # a column as read: its rows are its entries
    return o.index_select(0, codes), o.index_select(0, codes + 1) - o.index_select(0, codes)


def _keys(child: Column, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The int64 keys (floats in DuckDB's total order) of the child's elements at ``idx`` and
    whether each is NULL (None: the child has no NULLs)."""
    v = child.data.reshape(-1).index_select(0, idx)
    keys = float_order_key(v) if v.is_floating_point() else v.to(torch.int64)
    if child.valid is None:
        return keys, None
    return keys, ~child.valid.reshape(-1).index_select(0, idx)


def _all_elements_sign(a: Column, b: Column) -> torch.Tensor:
    """The sign of every row by a scatter-min over all elements: each element of ``a`` meets
    the element at its position in ``b``, the first difference per row decides, else the
    lengths do."""
    n = len(a)
    rva, rvb = row_values(a), row_values(b)
    keys_a, nulls_a = _elements(rva.children[0])
    keys_b, nulls_b = _elements(rvb.children[0])
    sizes_a = rva.offsets[1:] - rva.offsets[:-1]
    starts_b, sizes_b = rvb.offsets[:-1], rvb.offsets[1:] - rvb.offsets[:-1]
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


def _elements(child: Column):
    """Each element's int64 key (floats in DuckDB's total order) and whether it is NULL."""
    m = len(child)
    v = child.data.reshape(-1).expand(m)
    keys = float_order_key(v) if v.is_floating_point() else v.to(torch.int64)
    nulls = torch.zeros(m, dtype=torch.bool, device=v.device) if child.valid is None else \
        ~child.valid.reshape(-1).expand(m)
    return keys, nulls
