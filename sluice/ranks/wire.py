"""Rows on the wire: a chunk as bytes and back, for the exchange's ``all_to_all_single``.

A chunk travels as one Arrow IPC stream (schema + one record batch) -- the spill page format
(:func:`sluice.arrow.page_to_batch`): every type crosses intact (decimals as scaled
int64, dates as int32 days, validity as Arrow validity). A string column whose dictionary is
small beside the rows (a flag, a ship mode, a nation name) travels as that dictionary and int32
codes (Arrow's dictionary array, in the same stream); others by value, as offsets + bytes: most
exchanged keys and names are near-unique per chunk, and a page never ships a big dictionary
for a few of its entries.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Chunk
from sluice.arrow import batch_to_page, page_to_batch


FRAME = 8  # each stream is preceded by its length (little-endian uint64)


def chunk_to_bytes(chunk: Chunk, dictionaries: bool = True) -> np.ndarray:
    """One chunk as a uint8 array: its length, then an Arrow IPC stream (low-cardinality
    strings as dictionary + codes with ``dictionaries``)."""
    return framed(page_to_batch(chunk, dictionaries))


def framed(batch: pa.RecordBatch, codec: tuple[str, int | None] = ("none", None)) -> np.ndarray:
    """``batch`` as a uint8 array: its length, then an Arrow IPC stream of it, its buffers
    compressed with ``codec`` (a level of :data:`sluice.adapt.spill_codec.LEVELS`: the stream
    says so, and any reader decompresses)."""
    sink = pa.BufferOutputStream()
    sink.write(b"\0" * FRAME)
    name, level = codec
    opts = pa.ipc.IpcWriteOptions(compression=None if name == "none" else pa.Codec(name, level))
    with pa.ipc.new_stream(sink, batch.schema, options=opts) as w:
        w.write_batch(batch)
    out = np.frombuffer(sink.getvalue(), dtype=np.uint8).copy()
    out[:FRAME] = np.frombuffer(np.uint64(out.size - FRAME).tobytes(), dtype=np.uint8)
    return out


def bytes_to_chunks(data: torch.Tensor, device: torch.device) -> list[Chunk]:
    """The chunks in ``data``: framed IPC streams, one after another, from any senders."""
    out = []
    if not data.numel():
        return out
    raw = data.numpy()
    buf = pa.py_buffer(raw)
    pos, end = 0, raw.size
    while pos < end:
        n = int(raw[pos:pos + FRAME].view(np.uint64)[0])
        pos += FRAME
        for batch in pa.ipc.open_stream(buf.slice(pos, n)):
            if batch.num_rows:
                out.append(batch_to_page(batch, device))
        pos += n
    return out
