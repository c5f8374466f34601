"""Functions over DuckDB's 'infinity' / '-infinity' dates and timestamps, as DuckDB answers them.

The infinities are the extremes of the integer range (:mod:`sluice.kernels.infinite`); a kernel
that computes on a date's value would read them as far-off real dates (``year`` 5881580). So the
evaluator runs every function with a DATE or TIMESTAMP argument through :func:`call_over_infinities`,
which decides per function, in one place, what DuckDB does:

- functions that only compare or move values (``=``, ``<``, IN, CASE, COALESCE, lists ...) and
  those that know the infinities themselves (CAST, ISINF / ISFINITE, STRFTIME) run as they are;
- the calendar's parts and names (``extract`` / ``year`` ..., ``dayname``, ``last_day``,
  ``date_diff``) are NULL on an infinity;
- adding to or subtracting from one (a number of days, an interval, months), ``date_trunc`` and ``time_bucket``
  leave it as it is;
- subtracting two timestamps where one is infinite raises DuckDB's error;
- any other function over an infinity is refused in one line (never a value computed from the
  integer).

A chunk with no infinity (one min / max pass over each such argument on the host) runs the kernel
unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from sluice.chunk import Column
from sluice.errors import ExecutionError, UnsupportedError
from sluice.kernels.checks import fail_if
from sluice.kernels.infinite import infinite_mask, infinity_of, maybe_infinite

#: Functions that compare or move values, or handle the infinities in their kernel.
AS_THEY_ARE = frozenset({
    "=", "<>", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "case", "coalesce", "single_row",
    "cast", "try_cast", "cast_null", "isinf", "isfinite", "isnan", "strftime",
    "list_value", "struct_pack", "struct_extract", "list_len", "list_extract", "list_slice", "list_contains",
    "list_min", "list_max", "list_sort", "list_distinct", "list_concat", "map_from_lists", "map_from_entries",
    "map_entries", "map_extract", "map_extract_value", "map_keys", "map_values",
})
#: Functions that are NULL where an argument is infinite (DuckDB).
NULL_ON_INFINITY = frozenset({"extract", "dayname", "monthname", "last_day", "date_diff"})
#: Functions whose (first, temporal) argument's infinity is their result (DuckDB).
KEEP_INFINITY = frozenset({"+", "-", "add_months", "date_trunc", "time_bucket"})


def call_over_infinities(e, kernel, args: list[Column], chunk) -> Column:
    """``kernel(e, args, chunk)`` with DuckDB's answers where a DATE / TIMESTAMP argument holds
    'infinity' or '-infinity'."""
    if e.op in AS_THEY_ARE:
        return kernel(e, args, chunk)
    masks = {i: infinite_mask(a.data, a.type.kind == "date") for i, a in enumerate(args)
             if a.type.is_temporal and maybe_infinite(a.data, a.type.kind == "date")}
    if not masks:
        return kernel(e, args, chunk)
    temporal = [i for i, a in enumerate(args) if a.type.is_temporal]
    if e.op in NULL_ON_INFINITY:
        out = kernel(e, _finite(args, masks), chunk)
        keep = ~torch.broadcast_to(_any(masks.values()), out.data.shape)
        valid = keep if out.valid is None else out.valid & keep
        return replace(out, valid=valid)
    if e.op == "-" and len(temporal) == 2 and e.type.kind == "interval":  # DuckDB's error
        fail_if(_any(masks.values()), "Cannot subtract infinite timestamps", _valid_of(args), ExecutionError)
        return kernel(e, args, chunk)
    if e.op in KEEP_INFINITY and e.type.is_temporal and len(temporal) == 1:
        src = temporal[0]
        if src not in masks:
            return kernel(e, args, chunk)
        out = kernel(e, _finite(args, masks), chunk)
        a = args[src]
        big_in, big_out = infinity_of(a.type.kind == "date"), infinity_of(e.type.kind == "date")
        data = torch.where(a.data == big_in, torch.tensor(big_out, dtype=out.data.dtype, device=out.data.device),
                           out.data)
        data = torch.where(a.data == -big_in, torch.tensor(-big_out, dtype=out.data.dtype, device=out.data.device),
                           data)
        return replace(out, data=data)
    _refuse(e, masks, args)
    return kernel(e, args, chunk)


def _refuse(e, masks: dict, args: list[Column]) -> None:
    for i, m in masks.items():
        fail_if(m, f"{e.op.upper()} of the {args[i].type} values 'infinity' / '-infinity' is not supported",
                args[i].valid, UnsupportedError)


def _finite(args: list[Column], masks: dict) -> list[Column]:
    """The arguments with each infinity replaced by the epoch (its result is overwritten)."""
    out = list(args)
    for i, m in masks.items():
        a = args[i]
        out[i] = replace(a, data=torch.where(m, torch.zeros((), dtype=a.data.dtype, device=a.data.device), a.data))
    return out


def _any(masks) -> torch.Tensor:
    it = iter(masks)
    acc = next(it)
    for m in it:
        acc = acc | m
    return acc


def _valid_of(args: list[Column]) -> torch.Tensor | None:
    acc = None
    for a in args:
        if a.valid is not None:
            acc = a.valid if acc is None else acc & a.valid
    return acc
