"""Null extension: rows of one side of an outer join with every column of the other side
NULL (unmatched probe rows of a left join, unmatched build rows of a right or full join)."""

from __future__ import annotations

import pyarrow as pa
import torch

from sluice.chunk import Chunk, Column, empty_column
from sluice.expr.constants import literal_column
from sluice.expr.nodes import Lit
from sluice.types import LType


def null_column(t: LType, n: int, device: torch.device, dictionary=None) -> Column:
    """``n`` NULLs of type ``t`` (a string or nested column keeps ``dictionary`` so pages
    concatenate)."""
    d = dictionary if (dictionary is not None and len(dictionary)) else \
        (pa.array([""], pa.string()) if t.kind == "string" else None)
    if t.is_nested and d is None:  # (no values seen on that side: the codes index a NULL's one entry)
        d = literal_column(Lit(None, t), device).dictionary
    return Column(torch.zeros(n, dtype=t.torch_dtype, device=device), t,
                  torch.zeros(n, dtype=torch.bool, device=device), d)


def null_extended(rows: Chunk, other: dict[str, LType], device: torch.device,
                  dictionaries: dict | None = None, seq: int = 0) -> Chunk:
    """``rows`` with the ``other`` side's columns added, all NULL."""
    cols = dict(rows.columns)
    for k, t in other.items():
        cols[k] = null_column(t, rows.num_rows, device, (dictionaries or {}).get(k))
    return Chunk(cols, rows.num_rows, seq, device)


def empty_chunk(schema: dict[str, LType], device: torch.device) -> Chunk:
    """No rows, with ``schema``'s columns."""
    return Chunk({k: empty_column(t, device) for k, t in schema.items()}, 0, home=device)
