"""MAP constructors and MAP_ENTRIES with DuckDB's rules: ``map(keys, values)`` pairs two lists
position by position, ``map {'k': v, ...}`` is that of two constant-key lists,
``map_from_entries(list of (key, value) structs)``; a NULL list gives a NULL map, and keys that
are NULL, repeated within a map, or more or fewer than the values are DuckDB's errors.
``map_entries(m)`` is the list of ``{'key': k, 'value': v}`` structs.

A map shares Arrow's layout with a list of entries (offsets into a keys and a values child),
so every constructor is the lists' own offsets and children, rearranged without a copy per map;
the checks are whole-column (repeated keys: one grouping of (row, key) pairs)."""

from __future__ import annotations

import torch

from sluice.chunk import Column, NestedValues, entry_rows, nested_column, row_values
from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.expr.functions.registry import register
from sluice.kernels.checks import fail_if
from sluice.kernels.keys import group_ids
from sluice.types import INT64, list_of, map_of, struct_of


def _valid(*cols: Column) -> torch.Tensor | None:
    out = None
    for c in cols:
        if c.valid is not None:
            out = c.valid if out is None else out & c.valid
    return out


def _check_keys(keys: Column, rows: torch.Tensor) -> None:
    """DuckDB's errors: a NULL key, a key twice in one map."""
    if keys.valid is not None and bool((~keys.valid).any()):
        raise ExecutionError("Map keys can not be NULL.")
    m = len(keys)
    if m > 1:
        _, g = group_ids([Column(rows, INT64), keys], m, determining=False)
        if g < m:
            raise ExecutionError("Map keys must be unique.")


def _bind_from_lists(args, params):
    k, v = args
    for a, what in ((k, "keys"), (v, "values")):
        if a.type.kind != "list":
            raise PlanError(f"MAP needs a list of {what}, got {a.type}")
    if k.type.element.is_nested:
        raise UnsupportedError(f"MAP with {k.type.element} keys")
    if k.type.element.kind == "null":
        raise UnsupportedError("MAP with keys of no type (an empty list [] of keys)")
    return list(args), map_of(k.type.element, v.type.element)


@register("map_from_lists", bind=_bind_from_lists)
def map_from_lists(e, args, chunk) -> Column:
    """``map(keys, values)``: entry i of each map is (keys[i], values[i])."""
    n = chunk.num_rows
    k, v = args[0].expand(n), args[1].expand(n)
    valid = _valid(k, v)
    if valid is not None:  # a NULL list on either side: a NULL map, whose entries are none
        k = Column(k.data, k.type, valid, k.dictionary)
        v = Column(v.data, v.type, valid, v.dictionary)
    rk, rv = row_values(k), row_values(v)
    fail_if(((rk.offsets[1:] - rk.offsets[:-1]) != (rv.offsets[1:] - rv.offsets[:-1])).any(),
            "The map key list does not align with the map value list.")
    keys = rk.children[0]
    _check_keys(keys, entry_rows(rk.offsets))
    return nested_column(e.type, NestedValues((keys, rv.children[0]), rk.offsets, n), valid)


def _bind_from_entries(args, params):
    (lst,) = args
    if lst.type.kind != "list" or lst.type.element.kind != "struct" or len(lst.type.element.args) != 2:
        raise PlanError(f"MAP_FROM_ENTRIES needs a list of (key, value) structs, got {lst.type}")
    (_, kt), (_, vt) = lst.type.element.args
    if kt.is_nested:
        raise UnsupportedError(f"MAP with {kt} keys")
    return list(args), map_of(kt, vt)


@register("map_from_entries", bind=_bind_from_entries)
def map_from_entries(e, args, chunk) -> Column:
    """``map_from_entries([(k, v), ...])``: each struct's first field the key, its second the
    value (a NULL entry is a NULL key: DuckDB's error)."""
    n = chunk.num_rows
    lst = args[0].expand(n)
    rl = row_values(lst)
    entries = rl.children[0]
    keys, values = row_values(entries).children
    if entries.valid is not None:
        keys = Column(keys.data, keys.type, entries.valid if keys.valid is None else keys.valid & entries.valid,
                      keys.dictionary)
    _check_keys(keys, entry_rows(rl.offsets))
    return nested_column(e.type, NestedValues((keys, values), rl.offsets, n), lst.valid)


def _bind_entries(args, params):
    (m,) = args
    if m.type.kind != "map":
        raise PlanError(f"MAP_ENTRIES needs a MAP, got {m.type}")
    kt, vt = m.type.args
    return list(args), list_of(struct_of((("key", kt), ("value", vt))))


@register("map_entries", bind=_bind_entries)
def map_entries(e, args, chunk) -> Column:
    """The map's entries as a list of ``{'key', 'value'}`` structs: its own offsets and children."""
    m = args[0]
    v = m.dictionary
    entry = nested_column(e.type.element, NestedValues(v.children, None, len(v.children[0])), None)
    return Column(m.data, e.type, m.valid, NestedValues((entry,), v.offsets, v.size))
