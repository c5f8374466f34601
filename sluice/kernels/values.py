"""Numeric values between types (decimal scales aligned, overflow refused) and the sort rank
of string dictionaries: tensor functions the kernels and the scalar functions share."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor
from sluice.errors import UnsupportedError
from sluice.kernels.checks import fail_if
from sluice.types import LType

I64_MAX = 2 ** 63 - 1


def scale_up(x: torch.Tensor, f: int, valid: torch.Tensor | None, what: str) -> torch.Tensor:
    """``x * f`` in int64, refusing values whose product leaves int64."""
    if f == 1:
        return x.long()
    x = x.long()
    bound = I64_MAX // f
    fail_if((x > bound) | (x < -bound), f"{what}: beyond 18 digits (sluice's decimals are 64-bit; "
            "DuckDB's reach 38)", valid, UnsupportedError)
    return x * f


def to_type(c: Column, t: LType) -> torch.Tensor:
    """The values of numeric column ``c`` as tensor of type ``t`` (decimal scales aligned)."""
    src = c.type
    x = c.data
    if t.kind == "decimal":
        if src.kind == "decimal":
            if src.scale == t.scale:
                return x
            if src.scale < t.scale:
                return scale_up(x, 10 ** (t.scale - src.scale), c.valid, f"a decimal scaled to {t}")
            return torch.div(x, 10 ** (src.scale - t.scale), rounding_mode="trunc")
        if src.is_float:
            # DuckDB: round(x * 10^s), halves away from zero on that double (1.45 -> 14.5 -> 1.5)
            y = x.double() * (10 ** t.scale)
            whole = torch.trunc(y)
            y = whole + torch.sign(y) * ((y - whole).abs() >= 0.5).double()
            fail_if(~(y.abs() < 2.0 ** 63), f"a floating-point value is out of range for {t}", c.valid)
            return y.long()
        return scale_up(x, 10 ** t.scale, c.valid, f"an integer converted to {t}")
    if t.is_float:
        if src.kind == "decimal":
            return x.double() / (10 ** src.scale) if t.kind == "float64" else (x.double() / (10 ** src.scale)).float()
        return x.to(t.torch_dtype)
    if src.kind == "decimal":
        return torch.div(x, 10 ** src.scale, rounding_mode="trunc").to(t.torch_dtype)
    return x.to(t.torch_dtype)


def dictionary_rank(d: pa.Array) -> torch.Tensor:
    """The sort rank of each dictionary entry (codes compare by it as the strings do)."""
    order = pc.sort_indices(d).to_numpy()
    rank = np.empty(len(d), dtype=np.int64)
    rank[order] = np.arange(len(d))
    return host_tensor(rank)
