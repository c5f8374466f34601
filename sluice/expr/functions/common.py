"""Helpers the function families share: validity of combined columns, numeric conversion
between SQL types (decimal scales aligned, overflow refused), per-dictionary-entry results."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, host_tensor, lookup, to_device
from sluice.kernels.values import I64_MAX, dictionary_rank, scale_up, to_type  # noqa: F401 - re-exported
from sluice.types import LType
from sluice.errors import SluiceError
from sluice.expr.constants import column_scalar, literal_column
from sluice.expr.nodes import Lit



def and_valid(*vs):
    """The validity of a row-wise result: valid where every input is (None: all valid)."""
    out = None
    for v in vs:
        if v is None:
            continue
        out = v if out is None else (out & v)
    return out




def fold_literal(e, t: LType):
    """A numeric constant an operation will convert to ``t`` (:func:`numeric_pair`: the type
    it meets a column of another type at), converted once, while binding, not per chunk:
    ``l_quantity >= 1`` scaled its 1 to 1.00 on every chunk, with an overflow check (TPC-H
    q19's twelve constants: a fifth of its consumer's torch calls, each a kernel launch on a
    GPU). The conversion is the one evaluation would make; a constant it would refuse (past
    18 digits) stays as it is, so the refusal still comes only where rows meet it."""
    if not isinstance(e, Lit) or e.value is None or e.type == t or not e.type.is_numeric:
        return e
    try:
        value = column_scalar(Column(to_type(literal_column(e, torch.device("cpu")), t).reshape(()), t))
    except SluiceError:
        return e
    return Lit(value, t)


def numeric_pair(a: Column, b: Column, t: LType):
    return to_type(a, t), to_type(b, t)



def gather_bool(per_entry: pa.Array, codes: torch.Tensor) -> torch.Tensor:
    """A boolean per row from a boolean per dictionary entry (NULL is false)."""
    arr = per_entry.fill_null(False).to_numpy(zero_copy_only=False)
    t = to_device(host_tensor(np.ascontiguousarray(arr, dtype=np.bool_)), codes.device)
    if codes.dim() == 0:
        return t[codes.long()]
    if not len(t):
        return torch.zeros(codes.shape, dtype=torch.bool, device=codes.device)
    hits = np.flatnonzero(arr)
    if len(hits) == 1 and codes.dim() == 1:  # one entry (a string equality): compare the codes
        return codes == int(hits[0])
    return lookup(t, codes)
