"""Constants between the plan and the columns: a literal as a one-value column, a one-value
column as a Python value (constant folding, casts of constants while binding)."""

from __future__ import annotations

import pyarrow as pa
import torch

from sluice.chunk import Column
from sluice.expr.nodes import Lit


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
