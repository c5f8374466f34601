"""Rows on the wire as tensors: the exchange's path for a data group that moves device memory
(NCCL on CUDA), also run over gloo on the CPU (``exchange_wire=tensor``).

A chunk splits in two:

- its fixed-width columns (integers, floats, decimals as scaled int64, dates, timestamps, bools)
  and their validity masks: raw bytes of the tensors, each piece padded to 8 bytes so that the
  receiver views them back as their dtype (no parse; one device copy each, so that a page does
  not pin the round's buffer), concatenated into one uint8 buffer on the chunk's device -- on
  CUDA they never touch the host;
- everything that lives on the host: string columns (their dictionaries are host Arrow arrays,
  so a string column costs one device-to-host copy of its codes, and travels as values or as
  dictionary + codes exactly as :mod:`sluice.ranks.wire` sends it), SUMs beyond 64 bits, and the
  layout of the device bytes (each column's name, type and whether it has a validity mask), as
  one framed Arrow IPC stream per chunk.

Every size is known on the host from the row count and the types, so packing and unpacking the
device bytes need no host synchronisation.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import torch

from sluice.arrow import batch_to_page, page_to_batch
from sluice.ranks.wire import FRAME, framed
from sluice.chunk import Chunk, Column
from sluice.types import LType
from sluice.errors import InternalError

_ALIGN = 8  # every device piece starts at a multiple of 8 bytes: any dtype views it in place
_LAYOUT = b"sluice.device_columns"


class Packed(NamedTuple):
    """One chunk on the wire: its host bytes and the device pieces, in order."""

    host: np.ndarray  # uint8: a framed Arrow IPC stream
    pieces: list  # uint8 tensors on the chunk's device, each a multiple of 8 bytes
    device_bytes: int  # their total size


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


_ZEROS: dict = {}


def _padded(t: torch.Tensor, out: list) -> int:
    """Append ``t``'s bytes (and zero padding up to 8) to ``out``; return the bytes added."""
    t = t.reshape(-1)
    if t.stride(0) != 1:  # an expanded constant (a 1-row one counts as contiguous in torch)
        t = t.clone(memory_format=torch.contiguous_format)
    raw = t.view(torch.uint8)
    out.append(raw)
    pad = _aligned(raw.numel()) - raw.numel()
    if pad:
        z = _ZEROS.get(raw.device)
        if z is None:
            z = _ZEROS[raw.device] = torch.zeros(_ALIGN, dtype=torch.uint8, device=raw.device)
        out.append(z[:pad])
    return raw.numel() + pad


def pack(chunk: Chunk, dictionaries: bool = True) -> Packed:
    """``chunk`` as host bytes and device pieces (see the module docstring)."""
    n = chunk.num_rows
    host_cols, layout, pieces, size = {}, [], [], 0
    for name, c in chunk.columns.items():
        c = c.expand(n)
        if c.wide is not None or c.type.kind == "string" or c.type.is_nested:  # nested: Arrow by value
            host_cols[name] = c
            layout.append([name])
            continue
        size += _padded(c.data, pieces)
        if c.valid is not None:
            size += _padded(c.valid, pieces)
        layout.append([name, c.type.kind, c.type.scale, c.type.precision, c.valid is not None])
    batch = page_to_batch(Chunk(host_cols, n, home=chunk.device), dictionaries)
    batch = batch.replace_schema_metadata({_LAYOUT: json.dumps(layout)})
    return Packed(framed(batch), pieces, size)


def unpack(host: torch.Tensor, dev: torch.Tensor, device: torch.device) -> list[Chunk]:
    """The chunks one sender packed: ``host`` its framed streams, ``dev`` its device bytes (copied
    out column by column, so ``dev`` can go once they are)."""
    out: list[Chunk] = []
    if not host.numel():
        return out
    raw = host.numpy()
    buf = pa.py_buffer(raw)
    pos, dpos, end = 0, 0, raw.size
    while pos < end:
        n = int(raw[pos:pos + FRAME].view(np.uint64)[0])
        pos += FRAME
        for batch in pa.ipc.open_stream(buf.slice(pos, n)):
            rows = batch.num_rows
            layout = json.loads(batch.schema.metadata[_LAYOUT])
            on_host = batch_to_page(batch, device)
            cols = {}
            for entry in layout:
                if len(entry) == 1:
                    cols[entry[0]] = on_host.columns[entry[0]]
                    continue
                name, kind, scale, precision, has_valid = entry
                t = LType(kind, scale, precision)
                nbytes = rows * t.torch_dtype.itemsize
                # copies, not views: a page held (or spilled) on its own must not keep the
                # whole round's receive buffer alive beyond what the budget counts
                data = dev[dpos:dpos + nbytes].view(t.torch_dtype).clone()
                dpos += _aligned(nbytes)
                valid = None
                if has_valid:
                    valid = dev[dpos:dpos + rows].view(torch.bool).clone()
                    dpos += _aligned(rows)
                cols[name] = Column(data, t, valid)
            if rows:
                out.append(Chunk(cols, rows, home=device))
        pos += n
    if dpos != dev.numel():
        raise InternalError(f"exchange: {dev.numel()} device bytes received, {dpos} described")
    return out
