"""ORDER BY a LIST LIMIT k without every row's order key: a chunk is first cut to the rows whose
list can still be among the k best by its *first element*, and only those rows' whole lists are
keyed and sorted (``exec/sort.py``'s top-k).

Why it is exact: DuckDB orders lists element by element, a prefix before a longer list, a NULL
element above every value (``kernels/nested_keys.py``). So each non-NULL list falls in one of
three classes by its head -- empty, first element a value (then by that value), first element
NULL -- in that order (reversed for DESC), and a list whose head class and value come strictly
after the k-th best head comes after at least k whole lists too: it cannot be among the k best.
Ties on the head are kept (a string head compares by its 8-byte prefix, a coarser order
still). Measured on 1 M events (`order by tags, event_id limit 10`, 2
threads): keying every row's list was 0.25 s of the query's 0.41 s."""

from __future__ import annotations

import torch

from sluice.chunk import Column, _compacted, to_device
from sluice.exec.string_prefix import string_prefix_keys
from sluice.kernels.keys import sortable

#: Element kinds whose ``sortable`` values order as the nested order key orders them.
HEAD_KINDS = frozenset({"bool", "int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz",
                        "float32", "float64", "string"})

EMPTY, VALUE, NULL_HEAD = 0, 1, 2


def list_candidates_mask(col: Column, keep: int, ascending: bool, nulls_first: bool) -> torch.Tensor | None:
    """The rows of the LIST column ``col`` (``len(col)`` rows, expanded) that can be among the
    ``keep`` best in the given order: a superset, ties on the first element kept. None where
    the cut cannot leave anything out (fewer than ``keep`` non-NULL lists) or does not apply."""
    if col.type.kind != "list" or col.type.element.kind not in HEAD_KINDS or col.dictionary is None:
        return None
    n = len(col)
    values = col.dictionary
    codes = col.data.reshape(-1).to(torch.int64)
    sizes = values.sizes(codes)
    child = values.children[0]
    has = sizes > 0
    if len(child) == 0:
        head_ok = torch.zeros(n, dtype=torch.bool, device=codes.device)
        v = torch.zeros(n, dtype=torch.int64, device=codes.device)
    else:
        head = child.take(values.offsets[codes].clamp(0, len(child) - 1))
        head_ok = has if head.valid is None else has & head.valid
        v = _head_values(head)
    cls = torch.where(has, torch.where(head_ok, VALUE, NULL_HEAD), EMPTY)
    row_ok = torch.ones(n, dtype=torch.bool, device=codes.device) if col.valid is None else col.valid.reshape(-1)
    first = EMPTY if ascending else NULL_HEAD  # the head class that comes first in this order
    in_first = (cls == first) & row_ok
    ahead = int(in_first.sum())
    if ahead >= keep:
        mask = in_first
    else:
        valued = (cls == VALUE) & row_ok
        pool = v[valued]
        need = keep - ahead
        if pool.numel() < need:  # the best come from the last head class too: no cut
            return None
        kth = torch.topk(pool, need, largest=not ascending, sorted=True).values[-1]
        mask = in_first | (valued & ((v <= kth) if ascending else (v >= kth)))
    if nulls_first and col.valid is not None:
        mask = mask | ~row_ok
    return mask


def _head_values(head: Column) -> torch.Tensor:
    """Values whose order is the heads' (ties allowed where they differ later): a string's
    8-byte prefix (``exec/string_prefix.py``: no sort of the element dictionary, which holds
    every element of the chunk's lists), else ``sortable``."""
    if head.type.kind == "string" and head.dictionary is not None:
        d, codes = _compacted(head)
        pre = to_device(string_prefix_keys(d), codes.device)
        if pre.numel() == 0:
            return torch.zeros(len(head), dtype=torch.int64, device=codes.device)
        return pre.index_select(0, codes.long().reshape(-1))
    v = sortable(head)
    return v.to(torch.int8) if v.dtype == torch.bool else v
