"""Host tensors over numpy and Arrow buffers, without copies (the lowest layer: every other
module may use these)."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import torch

_READONLY_WARNED = False


def string_buffers(d: pa.Array, widen: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """(offsets, uint8 bytes) of a string array, as numpy views of its Arrow buffers (NULLs as
    empty strings); None when it is empty. The offsets are int64, or with ``widen=False`` as
    stored (int32 for ``string``: no copy of them)."""
    if d.type != pa.string() and d.type != pa.large_string():
        d = d.cast(pa.large_string())
    if d.offset or d.null_count:
        d = pa.concat_arrays([d.fill_null("")])
    n = len(d)
    if n == 0:
        return None
    bufs = d.buffers()
    off_dtype = np.int64 if d.type == pa.large_string() else np.int32
    offsets = np.frombuffer(bufs[1], dtype=off_dtype, count=n + 1)
    if widen:
        offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def host_tensor(arr: np.ndarray) -> torch.Tensor:
    """Zero-copy CPU tensor over a numpy array, also a read-only Arrow-backed one: sluice never
    writes into such columns in place, so torch's non-writable warning is silenced here only.
    torch warns once per process, so the (costly) silencing is needed only the first time."""
    global _READONLY_WARNED
    if arr.flags.writeable or _READONLY_WARNED:
        return torch.from_numpy(arr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = torch.from_numpy(arr)
    _READONLY_WARNED = True
    return out


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on ``device`` without the host waiting for the GPU: a copy from pageable
    memory first waits for every kernel queued on the stream (syncs counted on an H200: two a
    chunk in TPC-H q01, the dictionaries' code maps), so on CUDA the bytes are staged in pinned
    memory from torch's caching host allocator (which keeps the block until the copy is done)
    and copied ``non_blocking``. Elsewhere, and for tensors over ``PINNED_STAGE_MAX`` bytes
    (torch's host allocator keeps its pinned blocks, outside the host budget; a large copy's
    wait is a small share of its time), ``t.to(device)``."""
    if device.type != "cuda" or t.device.type != "cpu" or t.numel() * t.element_size() > PINNED_STAGE_MAX:
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


PINNED_STAGE_MAX = 4 << 20


def positions(mask: torch.Tensor) -> torch.Tensor:
    """The int64 positions where the 1-d boolean ``mask`` is true, in order.

    On the host through numpy: torch's CPU ``nonzero`` is 4.6 ms per million rows at half
    selectivity on one thread, numpy's ``flatnonzero`` 0.35 (13x; 4x at 1 % or 99 %). Filters
    compact every chunk through here (TPC-H q03: a sixth of its thread time was ``nonzero``)."""
    if mask.device.type == "cpu" and mask.dtype == torch.bool:
        return torch.from_numpy(np.flatnonzero(mask.reshape(-1).numpy()))
    return torch.nonzero(mask.reshape(-1)).reshape(-1)


def lookup(table: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """``table[codes]`` for a 1-d ``table`` (one value per dictionary entry) and integer
    ``codes`` of any shape: a gather by ``index_select``, which takes int32 codes as they are.
    Advanced indexing needed them as int64 first: 1.5 ms per million rows on one thread against
    0.5 (string comparisons, IN lists and LIKE gather their per-entry results this way)."""
    if codes.dim() != 1:
        return table[codes.long()]
    if codes.dtype not in (torch.int32, torch.int64):
        codes = codes.long()
    return table.index_select(0, codes)


def count_true(mask: torch.Tensor) -> int:
    """How many entries of the boolean ``mask`` are true; on the host through numpy
    (``count_nonzero``: 0.03 ms per million against torch's ``sum`` 0.23 on one thread)."""
    if mask.device.type == "cpu" and mask.dtype == torch.bool:
        return int(np.count_nonzero(mask.numpy()))
    return int(mask.sum())


#: The most string bytes Arrow's ``string`` (32-bit offsets) holds; a test lowers it to force
#: the ``large_string`` path on small data.
STRING_BYTES_MAX = 2 ** 31 - 1


def _string_bytes(a: pa.Array) -> int:
    if len(a) == 0:
        return 0
    if a.type == pa.string() or a.type == pa.large_string():
        bufs = a.buffers()
        dt = np.int64 if a.type == pa.large_string() else np.int32
        off = np.frombuffer(bufs[1], dtype=dt, count=a.offset + len(a) + 1)
        return int(off[-1]) - int(off[a.offset])
    return a.nbytes


def concat_strings(arrs: list[pa.Array]) -> pa.Array:
    """The string arrays one after another: ``string`` while the bytes fit its 32-bit offsets,
    else ``large_string`` (every piece widened). A dictionary of more than 2 GiB of distinct
    strings (DISTINCT over 100 M md5 digests) stopped a query with Arrow's "offset overflow"."""
    if len(arrs) == 1 and arrs[0].type in (pa.string(), pa.large_string()) \
            and _string_bytes(arrs[0]) <= STRING_BYTES_MAX:
        return arrs[0]
    large = any(a.type == pa.large_string() for a in arrs) or \
        sum(_string_bytes(a) for a in arrs) > STRING_BYTES_MAX
    kind = pa.large_string() if large else pa.string()
    return pa.concat_arrays([a if a.type == kind else a.cast(kind) for a in arrs])


def as_string(d: pa.Array) -> pa.Array:
    """``d`` as ``string`` or (when it is one already) ``large_string``: the two types a
    dictionary of sluice's strings has."""
    return d if d.type == pa.string() or d.type == pa.large_string() else d.cast(pa.string())
