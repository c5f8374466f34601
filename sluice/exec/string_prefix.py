"""String MIN / MAX and string sorting by prefix keys: a string's first 8 bytes as an int64 whose
order is the strings' byte order as far as the prefix goes, cached per dictionary, and the
first-byte pass that leaves only the rows that can still win a group's MIN or MAX (the
accumulators in ``exec/aggregates.py`` and the sort in ``exec/sort.py`` compare these keys).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import DictionaryCache, host_tensor, string_buffers, to_device
from sluice.kernels.buffers import lookup, positions

_PREFIXES = DictionaryCache()


def string_prefix_keys(d: pa.Array) -> torch.Tensor:
    """Per string, its first 8 bytes as a big-endian number shifted into int64's signed range,
    so that comparing keys compares the prefixes byte by byte (like the strings, as far as
    the prefix goes). Cached per dictionary."""
    return _PREFIXES.get(d, _prefix_keys)


#: The first-byte pass pays where a dictionary is about as long as the rows (plain strings:
#: no key is shared) and the rows fall into few groups (most rows lose on their first byte).
#: (Module settings so that tests and the fuzzer can force the pass onto small chunks.)
FIRST_BYTE_MIN_ROWS = 4096
FIRST_BYTE_ROWS_PER_GROUP = 16
FIRST_BYTE_MAX_GROUPS = 1024  # a count per group and byte value: 257 per group
FIRST_BYTE_MIN_ENTRIES_PER_ROW = 0.5


def _first_byte_pays(entries: int, rows: int, groups: int) -> bool:
    return (rows >= max(1, FIRST_BYTE_MIN_ROWS) and entries >= FIRST_BYTE_MIN_ENTRIES_PER_ROW * rows
            and groups <= FIRST_BYTE_MAX_GROUPS and groups * FIRST_BYTE_ROWS_PER_GROUP <= rows)


def _first_byte_rows(d: pa.Array, ids: torch.Tensor, codes: torch.Tensor, g: int, mx: bool
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The rows (ids, codes) that can still win MAX (``mx``) or MIN of their group, and their
    prefix keys. Plain strings (a dictionary entry per row), many rows per group: a row can
    win only where its first byte is its group's best (a count of each group's first bytes
    finds those), and the 8-byte keys are built for those rows alone (SF 10 MAX(l_comment) by
    two flags: 1 row in 2,500)."""
    dev = ids.device
    bufs = string_buffers(d, widen=False)  # once for both passes (a sliced dictionary is copied)
    fb = lookup(to_device(_first_bytes(*bufs), dev), codes)
    slot = ids.long() * 257
    slot += fb
    hist = torch.bincount(slot, minlength=g * 257).reshape(g, 257) > 0
    have = hist.any(1)
    pos = torch.arange(257, device=dev).expand(g, 257)
    best = torch.where(hist, pos, -1 if mx else 257)
    best = best.amax(1) if mx else best.amin(1)
    # First against the weakest group's best (no gather), then each against its own.
    edge = int((best[have].min() if mx else best[have].max()).item())
    keep = positions((fb >= edge) if mx else (fb <= edge))
    if 2 * keep.numel() < fb.numel():
        ids, codes, fb = ids[keep], codes[keep], fb[keep]
    if g > 1:  # one group: its best is the edge
        b = best[ids]
        keep = positions((fb >= b) if mx else (fb <= b))
        ids, codes = ids[keep], codes[keep]
    return ids, codes, to_device(_prefix_keys(d, codes.cpu().numpy(), bufs=bufs), dev)


def string_first_bytes(d: pa.Array) -> torch.Tensor:
    """Per string, 1 + its first byte (1-256) as int64, 0 for the empty string: ordered as the
    strings are by their first byte ("" before every other string)."""
    bufs = string_buffers(d, widen=False)
    return torch.zeros(0, dtype=torch.int64) if bufs is None else _first_bytes(*bufs)


def _first_bytes(offsets: np.ndarray, data: np.ndarray) -> torch.Tensor:
    """:func:`string_first_bytes` from the buffers. int64: the counts by group and byte add it
    to int64 slots, and mixed-type arithmetic took 5x as long."""
    starts = offsets[:-1]
    n, nd = len(starts), len(data)
    k = int(np.searchsorted(starts, nd, side="left"))  # offsets never decrease: the rest are "" at the end
    out = np.empty(n, dtype=np.int64)
    out[:k] = data[starts[:k]]
    out[:k] += 1
    out[k:] = 0
    out[np.flatnonzero(offsets[1:k + 1] == starts[:k])] = 0
    return host_tensor(out)


def _prefix_keys(d: pa.Array, at: np.ndarray | None = None, bufs=None) -> torch.Tensor:
    """The keys of every entry of ``d``, or of the entries ``at`` (in that order); ``bufs``:
    its :func:`string_buffers` where the caller has them."""
    if bufs is None:
        bufs = string_buffers(d, widen=at is None)
    if bufs is None:
        return torch.zeros(0, dtype=torch.int64)
    offsets, data = bufs
    if at is not None:
        return _words(offsets[at].astype(np.int64), offsets[at + 1].astype(np.int64), data)
    return _words(offsets[:-1], offsets[1:], data)


def _words(starts: np.ndarray, ends: np.ndarray, data: np.ndarray) -> torch.Tensor:
    """Big-endian 8-byte keys of the strings data[starts[i]:ends[i]]; starts need not be sorted."""
    n = len(starts)
    # Every byte offset as the start of a big-endian 8-byte word, over the buffer itself (no
    # copy); the few strings starting in the last 7 bytes read from a padded copy of the tail.
    # Written into one array, and only strings of under 8 bytes masked: each pass over 60 M
    # strings (SF 10 l_comment) is a fresh temporary and its page faults.
    nd = len(data)
    w = np.empty(n, dtype=np.uint64)
    if nd >= 8:
        words = np.ndarray(shape=(nd - 7,), dtype=">u8", buffer=data, strides=(1,))
        w[:] = words[np.minimum(starts, nd - 8)]
    near = np.flatnonzero(starts > nd - 8)
    if len(near):
        tail = np.zeros(16, dtype=np.uint8)
        lo = max(0, nd - 8)
        tail[:nd - lo] = data[lo:]
        tw = np.ndarray(shape=(9,), dtype=">u8", buffer=tail, strides=(1,))
        w[near] = tw[starts[near] - lo]
    lengths = ends - starts
    short = np.flatnonzero(lengths < 8)
    if len(short):
        w[short] &= _high_mask(lengths[short])
    w ^= np.uint64(1 << 63)
    return host_tensor(w.view(np.int64))


def _high_mask(lengths: np.ndarray) -> np.ndarray:
    """Masks keeping the first ``lengths`` bytes of a big-endian word (all 8 for >= 8)."""
    table = np.array([0] + [((1 << (8 * k)) - 1) << (8 * (8 - k)) for k in range(1, 9)], dtype=np.uint64)
    return table[lengths.astype(np.int64)]
