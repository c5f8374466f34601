"""CASE and COALESCE: the row-wise value of the first branch that holds. Branches of
different numeric types meet at their common type; a NULL branch takes the result's type (a
CASE without ELSE over strings is a string)."""

from __future__ import annotations

import torch

from sluice.chunk import Column, concat_columns, unify_dictionaries
from sluice.expr.functions.cast import coerce
from sluice.expr.functions.registry import register
from sluice.expr.functions.common import to_type
from sluice.types import LType, BOOL
from sluice.expr.nodes import common_type, Lit
from sluice.errors import InternalError, PlanError, UnsupportedError
from sluice.kernels.checks import fail_if


def _bind_branches(value_positions):
    def bind(args, params):
        vals = value_positions(len(args))
        t = common_type([args[i] for i in sorted(vals)])
        return [coerce(a, t) if i in vals else a for i, a in enumerate(args)], t
    return bind


def _bind_case(args, params):
    """CASE's conditions are booleans (a NULL one never holds); its values meet at one type."""
    args = list(args)
    for i in range(0, len(args) - 1, 2):
        if isinstance(args[i], Lit) and args[i].value is None:
            args[i] = Lit(None, BOOL)
        elif args[i].type.kind != "bool":
            raise PlanError(f"CASE WHEN needs a boolean condition, got {args[i].type}")
    return _bind_branches(lambda n: set(range(1, n - 1, 2)) | {n - 1})(args, params)


# case: cond1, val1, cond2, val2, ..., else
@register("try", result=lambda args, params: args[0].type)
def try_kernel(e, args, chunk) -> Column:
    """TRY(x) is evaluated by the evaluator (it must see x's checks before they fail); this
    kernel only names the function and its type."""
    raise InternalError("TRY reached its kernel: the evaluator evaluates it")


@register("case", bind=_bind_case)
def case(e, cols, chunk) -> Column:
    if len(cols) == 3 and isinstance(e.args[2], Lit) and e.args[2].value is None:
        # CASE WHEN c THEN v [ELSE NULL] END (TPC-DS q02's seven per-weekday sums): v where c
        # holds, else NULL -- v's values under the NULLs are never read, so the value needs no
        # select, only the validity one AND (q02: two passes a row and branch saved).
        c, v = cols[0], cols[1]
        if c.data.dim() == 1 and v.data.dim() == 1 and v.wide is None and v.type == e.type:
            holds = c.data if c.valid is None else c.data & c.valid
            return Column(v.data, e.type, holds if v.valid is None else holds & v.valid, v.dictionary)
    conds = [cols[i] for i in range(0, len(cols) - 1, 2)]
    vals = [cols[i] for i in range(1, len(cols) - 1, 2)] + [cols[-1]]
    return select_first(e.type, [(c.data if c.valid is None else c.data & c.valid) for c in conds],
                        vals, chunk.num_rows)


@register("coalesce", bind=_bind_branches(lambda n: set(range(n))))
def coalesce(e, vals, chunk) -> Column:
    conds = [torch.ones((), dtype=torch.bool, device=v.data.device) if v.valid is None else v.valid
             for v in vals[:-1]]
    return select_first(e.type, conds, vals, chunk.num_rows)


def select_first(t: LType, conds: list[torch.Tensor], vals: list[Column], n: int) -> Column:
    """Row-wise: the value of the first branch whose condition holds, else the last value."""
    if t.is_nested:  # the branches' values end to end, each row taking its branch's
        return _select_nested(t, conds, vals, n)
    dictionary = None
    if t.kind == "string":
        dictionary, datas = unify_dictionaries(list(vals))
    else:
        datas = [to_type(v, t) if v.type != t else v.data for v in vals]
    out = datas[-1]
    valid = vals[-1].valid if vals[-1].valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
    any_null = any(v.valid is not None for v in vals)
    for cond, data, v in zip(reversed(conds), reversed(datas[:-1]), reversed(vals[:-1])):
        out = torch.where(cond, data, out)
        if any_null:
            vv = v.valid if v.valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
            valid = torch.where(cond, vv, valid)
    if out.dim() == 0 and n != 1:
        out = out.expand(n)
        valid = valid.expand(n) if any_null else valid
    return Column(out, t, valid if any_null else None, dictionary)


def _select_nested(t: LType, conds: list[torch.Tensor], vals: list[Column], n: int) -> Column:
    if any(v.type != t for v in vals):
        raise UnsupportedError(f"CASE / COALESCE over {t.kind.upper()} values of different types")
    merged = concat_columns([v.expand(n) for v in vals])
    device = merged.data.device
    choice = torch.full((n,), len(vals) - 1, dtype=torch.int64, device=device)
    for j in range(len(conds) - 1, -1, -1):
        choice = torch.where(conds[j].expand(n) if conds[j].dim() == 0 else conds[j], j, choice)
    return merged.take(choice * n + torch.arange(n, device=device))


@register("single_row", result=lambda args, params: args[0].type)
def single_row(e, cols, chunk) -> Column:
    """A correlated scalar subquery's value with its row count: more than one row for an
    outer value raises, as in DuckDB (sluice.sql.dependent)."""
    v, n = cols
    fail_if(n.data > 1, "More than one row returned by a subquery used as an expression - scalar subqueries "
                        "can only return a single row", n.valid)
    return v
