"""Upper bounds on the magnitude of a tensor's values, remembered per tensor (CPU only).

The overflow checks of integer and decimal arithmetic and of exact sums ask, per chunk, for
max |v| of their operands -- one min/max pass each, often over the same column (TPC-H q01 asks
for l_extendedprice's four times a chunk: 83 passes, 27 ms a query). A bound is remembered for
the tensor it was computed on (until the tensor changes or dies), and a result whose operands
were bounded gets its bound without a pass (|x * y| <= max|x| * max|y|). A bound may exceed the
true maximum; checks only need it to be safe. On a GPU no bound is read (it would wait for the
device): the checks there go per row. Columns are never written in place (every kernel makes
new tensors), which is what makes a remembered bound stay true; where torch tracks versions
(outside inference mode) a changed tensor is measured again all the same.
"""

from __future__ import annotations

import weakref

import torch

_CACHE: dict[int, tuple] = {}  # id(tensor) -> (weak reference, version, bound)


def max_abs(t: torch.Tensor) -> int:
    """max |t| (or a safe bound remembered for ``t``); ``t`` non-empty."""
    hit = _CACHE.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == _version(t):
        return hit[2]
    if t.dim() == 1 and t.stride(0) == 0:  # a constant broadcast to the chunk
        b = abs(int(t[0]))
    else:
        lo, hi = torch.aminmax(t)
        b = max(-int(lo), int(hi))
    remember(t, b)
    return b


def remember(t: torch.Tensor, bound: int) -> None:
    """``bound`` is a safe upper bound on max |t|."""
    key = id(t)
    _CACHE[key] = (weakref.ref(t, lambda _r, k=key: _CACHE.pop(k, None)), _version(t), bound)


def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # an inference-mode tensor: no version counter
        return None
