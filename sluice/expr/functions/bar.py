"""BAR(x, min, max[, width]): DuckDB's band of block characters, ``width`` wide at ``max``, in
eighths of a character, padded with spaces to the whole width. The eighths of each row are
computed as DuckDB computes them (doubles, truncated); each distinct count is drawn once, the
result a string column of codes into those drawings."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column
from sluice.expr.functions.common import to_type
from sluice.expr.functions.registry import register
from sluice.kernels.checks import fail_if
from sluice.types import FLOAT64, STRING

FULL = "\u2588"
PARTIAL = ["", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589"]


def _bind(args, params):
    return list(args), STRING


@register("bar", bind=_bind)
def bar(e, args, chunk) -> Column:
    a, = args
    lo, hi, width = e.params
    x = to_type(a, FLOAT64).double()
    if math.isnan(lo) or math.isnan(hi):  # DuckDB: a NaN bound draws an empty bar
        x = torch.full_like(x, math.nan)
    w = torch.where(torch.isnan(x) | (x <= lo), torch.zeros_like(x),
                    torch.where(x >= hi, torch.full_like(x, width), width * (x - lo) / (hi - lo)))
    fail_if(~torch.isfinite(w), "Bar width must not be NaN or infinity", a.valid)
    eighths = torch.where(torch.isfinite(w), w * len(PARTIAL), torch.zeros_like(w)).to(torch.int32)
    uniq, codes = torch.unique(eighths, return_inverse=True)
    pad = int(width)
    texts = [(FULL * (k // 8) + PARTIAL[k % 8]).ljust(pad) for k in uniq.cpu().tolist()]  # distinct counts only
    return Column(codes.to(torch.int32), STRING, a.valid, pa.array(np.array(texts, dtype=object), pa.string()))
