"""BIT_AND / BIT_OR / BIT_XOR as aggregates over integers and BIT values: the bitwise AND, OR or
XOR of each group's non-NULL values, in the argument's type (DuckDB's), NULL for a group with
none. (BIT values: :class:`BitStringAcc`.)

torch has no bitwise scatter-reduction, so a group's result is built one bit position at a
time: per position, the count of the group's values with that bit set (one ``scatter_add``
over the rows) says the bit of the result -- set in every value (AND), in some (OR), in an odd
number (XOR). That is a loop over the type's 8 to 64 bit positions, never over rows, and runs
alike on a CPU and a GPU. A state is the group's partial result and its count of values, and
partial results combine by the same operation, so chunks, spills and ranks merge alike.
"""

from __future__ import annotations

import numpy as np
import torch

from sluice.chunk import Column, host_tensor, to_device
from sluice.errors import ExecutionError
from sluice.exec.aggregates import Accumulator, StringStateAcc, _sum_by, count_by
from sluice.kernels import bits as B
from sluice.types import INT64, LType

#: Bits of each integer type.
_WIDTH = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def bitwise_by_group(v: torch.Tensor, ids: torch.Tensor, g: int, valid: torch.Tensor | None,
                     n: torch.Tensor, op: str, width: int) -> torch.Tensor:
    """Per group the ``op`` ("and", "or", "xor") of the values ``v`` where ``valid`` (``n``:
    how many per group), as int64 (0 for a group with none)."""
    v = v.to(torch.int64)
    if valid is not None:
        v = torch.where(valid, v, torch.zeros_like(v))  # a NULL's bits are set in no count
    out = torch.zeros(g, dtype=torch.int64, device=v.device)
    for k in range(width):
        bit = (v >> k) & 1
        ones = _sum_by(ids, g, bit)
        if op == "and":
            flag = (ones == n) & (n > 0)
        elif op == "or":
            flag = ones > 0
        else:
            flag = (ones & 1) == 1
        out |= flag.to(torch.int64) << k  # (bit 63: int64's sign bit, as the value's own)
    return out


class BitwiseAcc(Accumulator):
    """BIT_AND / BIT_OR / BIT_XOR over an integer argument (see the module docstring)."""

    def __init__(self, prefix: str, arg_type: LType | None, op: str) -> None:
        super().__init__(prefix, arg_type)
        self.op = op
        self.width = _WIDTH[arg_type.kind]

    def _state(self, v: torch.Tensor, n: torch.Tensor) -> dict[str, Column]:
        return {self.name("v"): Column(v, INT64), self.name("n"): Column(n, INT64)}

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        n = rows if valid is None else count_by(ids, g, valid)
        return self._state(bitwise_by_group(arg.data.expand(ids.shape), ids, g, valid, n, self.op, self.width), n)

    def merge(self, state, ids, g):
        n_in = self._n(state)
        n = _sum_by(ids, g, n_in)
        # a state of no values (n 0) takes no part: its 0 is no AND's identity
        v = bitwise_by_group(state[self.name("v")].data, ids, g, n_in > 0, count_by(ids, g, n_in > 0),
                             self.op, self.width)
        return self._state(v, n)

    def identity(self, g, dev):
        zeros = torch.zeros(g, dtype=torch.int64, device=dev)
        return self._state(zeros, zeros.clone())

    def finalize(self, state, out_type):
        n = self._n(state)
        valid = None if bool((n > 0).all()) else n > 0
        return Column(state[self.name("v")].data.to(out_type.torch_dtype), out_type, valid)


class BitStringAcc(StringStateAcc):
    """BIT_AND / BIT_OR / BIT_XOR over BIT values (text of '0' / '1', :mod:`sluice.kernels.bits`):
    per group the bitwise result of its strings, which must all be as long (DuckDB's error
    otherwise). The dictionary's entries become a 0/1 matrix once, the rows gather theirs, and
    each character position is reduced by group in one scatter (min: AND, max: OR, sum's
    parity: XOR). The state is the group's result string, so states merge alike."""

    def __init__(self, prefix: str, arg_type: LType | None, op: str) -> None:
        super().__init__(prefix, arg_type)
        self.op = op

    def _reduce(self, col: Column, ids: torch.Tensor, g: int, valid: torch.Tensor | None) -> Column:
        dev = ids.device
        d, ids, codes = self._valid_codes(col, ids, valid)
        chars, offs = B._chars(d.fill_null("") if d.null_count else d)
        lens = np.diff(offs)
        width = int(lens.max()) if len(lens) else 0
        entries = np.zeros((len(lens), width), dtype=np.int64)
        if len(chars):
            entry = np.repeat(np.arange(len(lens)), lens)
            entries[entry, np.arange(len(chars)) - offs[entry]] = chars.astype(np.int64) - 48
        bits = to_device(host_tensor(entries), dev)[codes]
        length = to_device(host_tensor(lens.astype(np.int64)), dev)[codes]
        zeros = torch.zeros(g, dtype=torch.int64, device=dev)
        shortest = zeros.clone().scatter_reduce_(0, ids, length, reduce="amin", include_self=False)
        longest = zeros.clone().scatter_reduce_(0, ids, length, reduce="amax", include_self=False)
        if bool((shortest != longest).any()):
            raise ExecutionError(f"Cannot {self.op.upper()} bit strings of different sizes")
        out = torch.zeros((g, width), dtype=torch.int64, device=dev)
        where = ids.unsqueeze(1).expand(-1, width)
        if self.op == "xor":
            out = out.scatter_add_(0, where, bits) & 1
        else:
            out = out.scatter_reduce_(0, where, bits, reduce="amin" if self.op == "and" else "amax",
                                      include_self=False)
        keep = torch.arange(width, device=dev).unsqueeze(0) < longest.unsqueeze(1)
        text = (out[keep] + 48).to(torch.uint8).cpu().numpy()
        text_offs = np.zeros(g + 1, dtype=np.int64)
        np.cumsum(longest.cpu().numpy(), out=text_offs[1:])
        return Column(torch.arange(g, dtype=torch.int32, device=dev), self.arg_type, None, B._strings(text, text_offs))

    _combine = _reduce
