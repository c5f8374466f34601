"""LIST_HAS_ANY / LIST_HAS_ALL (``&&``, ``@>``, ``<@``): whether two lists share an element, and
whether the first holds every element of the second, with DuckDB's rules -- NULL elements take
no part (``list_has_any([NULL], [NULL])`` is false, ``list_has_all([1], [NULL])`` true), a NULL
list gives NULL, an empty second list is held by any list, and the elements meet at their common
type (``list_has_any([1.0], [1])`` is true).

Whole columns at once: each valid element becomes a (row, value key) pair (both lists' elements
keyed together, :func:`sluice.kernels.keys.sortable`), each side's pairs deduplicated, and the
pairs found on both sides counted per row -- sorts over the elements, never a loop over rows."""

from __future__ import annotations

import torch

from sluice.chunk import Column, concat_columns, entry_rows, row_values
from sluice.errors import PlanError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.nested import typed_alike
from sluice.expr.functions.registry import register
from sluice.expr.nodes import Lit
from sluice.kernels.keys import sortable
from sluice.types import BOOL, INT32, list_of, supertype


def _bind_sets(name: str):
    def bind(args, params):
        if len(args) != 2:
            raise PlanError(f"no function {name} with {len(args)} arguments")
        lists = [a.type for a in args if a.type.kind == "list"]
        args = [Lit(None, lists[0] if lists else list_of(INT32)) if a.type.kind == "null" else a
                for a in args]  # a bare NULL: a NULL list
        for a in args:
            if a.type.kind != "list":
                raise PlanError(f"{name} needs two lists, got {a.type}")
        a, b = typed_alike(list(args), name)  # [] and [NULL] take the other list's type
        ta, tb = a.type.element, b.type.element
        t = ta if ta == tb else supertype([ta, tb], f"{name} elements")
        if t.kind == "null":  # two lists of NULLs only: no element takes part
            t = INT32
        return [x if x.type.element == t else cast_expr(x, list_of(t)) for x in (a, b)], BOOL
    return bind


def _pairs(rows: torch.Tensor, key: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    """The distinct (row, key) pairs of the valid elements, as an (m, 2) int64 tensor."""
    if valid is not None:
        rows, key = rows[valid], key[valid]
    if not rows.numel():
        return torch.zeros((0, 2), dtype=torch.int64, device=rows.device)
    return torch.unique(torch.stack([rows.to(torch.int64), key.to(torch.int64)], 1), dim=0)


def _common(e, args, chunk) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(rows' count of distinct values in both lists, of distinct values of the second, validity)."""
    n = chunk.num_rows
    a, b = (x.expand(n) for x in args)
    ra, rb = row_values(a), row_values(b)
    ca, cb = ra.children[0], rb.children[0]
    device = ra.offsets.device
    both = torch.zeros(n, dtype=torch.int64, device=device)
    second = torch.zeros(n, dtype=torch.int64, device=device)
    if len(ca) and len(cb):
        key = sortable(concat_columns([ca, cb]))
        pa_ = _pairs(entry_rows(ra.offsets), key[:len(ca)], ca.valid)
        pb_ = _pairs(entry_rows(rb.offsets), key[len(ca):], cb.valid)
        pairs, counts = torch.unique(torch.cat([pa_, pb_]), dim=0, return_counts=True)
        hit = pairs[counts > 1, 0]
        both.index_add_(0, hit, torch.ones_like(hit))
        second.index_add_(0, pb_[:, 0], torch.ones_like(pb_[:, 0]))
    elif len(cb):
        r = entry_rows(rb.offsets)
        r = r if cb.valid is None else r[cb.valid]
        second.index_add_(0, r, torch.ones_like(r))
    valid = a.valid if b.valid is None else b.valid if a.valid is None else a.valid & b.valid
    return both, second, valid


@register("list_has_any", bind=_bind_sets("LIST_HAS_ANY"))
def list_has_any(e, args, chunk) -> Column:
    """Whether the lists share a non-NULL element; NULL where either list is NULL."""
    both, _, valid = _common(e, args, chunk)
    return Column(both > 0, BOOL, valid)


@register("list_has_all", bind=_bind_sets("LIST_HAS_ALL"))
def list_has_all(e, args, chunk) -> Column:
    """Whether every non-NULL element of the second list is in the first; NULL where either
    list is NULL."""
    both, second, valid = _common(e, args, chunk)
    return Column(both == second, BOOL, valid)
