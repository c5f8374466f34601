"""Host -> device transfer of decoded columns (CUDA only; a no-op on CPU).

With ``pinned_memory`` the host tensors are staged in page-locked buffers from PyTorch's
caching host allocator (reused across chunks, no cudaHostAlloc per chunk); with
``copy_stream`` the copies run ``non_blocking`` on a dedicated stream of each I/O thread and
completion is an event. The I/O thread waits on the event (it has nothing else to do), the
consumer's stream only ``wait_event``s: no host synchronisation on the compute path.
"""

from __future__ import annotations

import threading
import time

import torch

from sluice.chunk import Column

_local = threading.local()


def _stream(device: torch.device, kind: str = "copy"):
    """This thread's ``kind`` stream (copy, decode) for ``device``, made once per thread
    (``device`` is indexed, see ``devices.normalize_device``, so it compares equal to the
    stream's)."""
    s = getattr(_local, kind, None)
    if s is None or s.device != device:
        s = torch.cuda.Stream(device=device)
        setattr(_local, kind, s)
    return s


def decode_stream(device: torch.device):
    """The I/O thread's own stream for the device decoder's kernels on ``device`` (None on a
    CPU): decodes of different threads overlap each other and the consumer's kernels. Tensors
    made on it reach the consumer through :func:`handed_over` (an event, then ``wait_for``)."""
    return _stream(device, "decode") if device.type == "cuda" else None


def handed_over(cols: dict[str, Column]):
    """An event the consumer waits on before using ``cols`` (made on this thread's streams):
    recorded on this thread's current stream after its decode stream, or None where every
    column is on the host."""
    if not any(c.data.device.type == "cuda" for c in cols.values()):
        return None
    dev = next(c.data.device for c in cols.values() if c.data.device.type == "cuda")
    # Recorded on the decode stream itself: a wait_stream of the (shared) default stream would
    # make the consumer's later kernels wait for every I/O thread's decodes.
    event = torch.cuda.Event()
    event.record(_stream(dev, "decode"))
    return event


def columns_nbytes(cols: dict[str, Column]) -> int:
    """Bytes of the columns' tensors (``Column.nbytes``): what decoding made and a copy moves."""
    return sum(c.nbytes for c in cols.values())


def to_device(cols: dict[str, Column], device: torch.device, *, pinned: bool, copy_stream: bool,
              record=None) -> tuple[dict[str, Column], object]:
    """Move columns to ``device``; returns (columns, event to wait on or None)."""
    if device.type != "cuda":
        return cols, None
    t0 = time.perf_counter()
    stream = _stream(device) if copy_stream else torch.cuda.current_stream(device)
    out = {}
    with torch.cuda.stream(stream):
        for k, c in cols.items():
            data = c.data.pin_memory() if pinned else c.data
            valid = None
            if c.valid is not None:
                valid = (c.valid.pin_memory() if pinned else c.valid).to(device, non_blocking=pinned)
            d = c.dictionary.to(device) if c.type.is_nested else c.dictionary  # offsets and children too
            out[k] = Column(data.to(device, non_blocking=pinned), c.type, valid, d, c.wide)
        event = torch.cuda.Event()
        event.record(stream)
    if copy_stream:
        # Tensors made on the copy stream are used on the consumer's stream.
        event.synchronize()  # waits in this I/O thread only
    if record is not None:
        record("h2d", t0, time.perf_counter(), columns_nbytes(cols))
    return out, (event if copy_stream else None)


def wait_for(event, cols: dict[str, Column] | None = None) -> None:
    """Make the consumer's current stream wait for a transfer (no host sync) and hand it the
    transferred tensors.

    They were allocated on the copy stream: without ``record_stream`` the caching allocator
    gives their memory back to the copy stream as soon as the consumer drops them, and the
    next copy can overwrite it while kernels queued on the consumer's stream still read it
    (a silent wrong answer). Recorded, the block waits for the consumer's queued work."""
    if event is None:
        return
    stream = None
    for c in (cols or {}).values():
        if stream is None and c.data.device.type == "cuda":
            stream = torch.cuda.current_stream(c.data.device)
        if stream is not None:
            adopt(c, stream)
    (stream or torch.cuda.current_stream()).wait_event(event)


def adopt(col: Column, stream) -> None:
    """Mark ``col``'s device tensors as used on ``stream`` (see :func:`wait_for`)."""
    for t in (col.data, col.valid):
        if t is not None and t.device.type == "cuda":
            t.record_stream(stream)
