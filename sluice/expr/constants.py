"""Constants between the plan and the columns: a literal as a one-value column, a one-value
column as a Python value (constant folding, casts of constants while binding)."""

from __future__ import annotations

import pyarrow as pa
import torch

from sluice.chunk import Column, NestedValues, empty_values
from sluice.expr.nodes import Lit
from sluice.errors import InternalError


def column_scalar(c: Column):
    """Python value of a constant column (None for NULL)."""
    if c.valid is not None and not bool(c.valid.reshape(-1)[0]):
        return None
    v = c.data.reshape(-1)[0].item()
    if c.type.kind == "string":
        return c.dictionary[int(v)].as_py()
    return v


def literal_column(e: Lit, device: torch.device) -> Column:
    t = e.type
    if t.is_nested:
        if e.value is not None:
            raise InternalError("a nested constant")
        return Column(torch.zeros((), dtype=torch.int64, device=device), t,
                      torch.zeros((), dtype=torch.bool, device=device), _null_values(t, device))
    if e.value is None:
        dt = t.torch_dtype
        return Column(torch.zeros((), dtype=dt, device=device), t,
                      torch.zeros((), dtype=torch.bool, device=device),
                      pa.array([""], pa.string()) if t.kind == "string" else None)
    if t.kind == "string":
        return Column(torch.zeros((), dtype=torch.int32, device=device), t, None,
                      pa.array([e.value], pa.string()))
    # torch.full, not torch.tensor: on a GPU a fill kernel, where torch.tensor copies the value
    # from pageable host memory and waits for it (151 waits in TPC-H q01 on an H200)
    return Column(torch.full((), e.value, dtype=t.torch_dtype, device=device), t)


def _null_values(t, device: torch.device) -> NestedValues:
    """One entry of nested values behind a NULL of type ``t``: an empty list or map, a struct
    of NULL fields."""
    if t.kind == "struct":
        kids = tuple(literal_column(Lit(None, u), device).expand(1) for _, u in t.args)
        return NestedValues(kids, None, 1)
    return NestedValues(empty_values(t, device).children, torch.zeros(2, dtype=torch.int64, device=device), 1)
