"""A string column's dictionary pages, read on the host into one Arrow string array: the codes
the kernels write index it (strings stay host dictionaries; only codes live on the device).

A dictionary page is PLAIN byte arrays, each a 4-byte length then its bytes, so where an entry
starts depends on every entry before it. With numpy, without a loop over entries: at every byte
position, where an entry starting there would end; then the chain from the page's first byte is
followed by pointer doubling (log2 of the entry count steps, each a gather over the page)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def entries(page: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(start of each entry's bytes, its length) of the ``count`` entries in ``page`` (uint8)."""
    B = len(page)
    if count == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    if B < 4 * count:
        raise ValueError(f"corrupt page: a dictionary page of {B} bytes cannot hold {count} values")
    padded = np.concatenate([page, np.zeros(4, np.uint8)])
    ln = padded[:B].astype(np.int64) | (padded[1:B + 1].astype(np.int64) << 8) | \
        (padded[2:B + 2].astype(np.int64) << 16) | (padded[3:B + 3].astype(np.int64) << 24)
    nxt = np.minimum(np.arange(B, dtype=np.int64) + 4 + ln, B)  # B: past the page
    jump = np.append(nxt, B)                                     # the end maps to itself
    pos = np.zeros(1, dtype=np.int64)
    while len(pos) < count:
        pos = np.concatenate([pos, jump[pos]])
        jump = jump[jump]
    pos = pos[:count]
    if (pos >= B).any():
        raise ValueError("corrupt page: a dictionary page holds fewer values than its header says")
    lengths = ln[pos]
    if (pos + 4 + lengths > B).any():
        raise ValueError("corrupt page: a byte array runs past its page")
    return pos + 4, lengths


def dictionary(pages: list[tuple[np.ndarray, int]]) -> pa.Array:
    """The entries of every dictionary page (bytes, entry count), in order, as one string array."""
    data, lens = [], []
    for page, count in pages:  # one per column chunk of the task
        st, ln = entries(page, count)
        total = int(ln.sum())
        if total:
            first = np.cumsum(ln) - ln
            src = np.arange(total, dtype=np.int64) + np.repeat(st - first, ln)
            data.append(page[src])
        lens.append(ln)
    ln = np.concatenate(lens) if lens else np.zeros(0, np.int64)
    if int(ln.sum()) >= 2**31:
        raise ValueError("string values over 2 GiB in one read task")
    offsets = np.zeros(len(ln) + 1, dtype=np.int32)
    np.cumsum(ln, out=offsets[1:])
    body = np.concatenate(data) if data else np.zeros(0, np.uint8)
    arr = pa.Array.from_buffers(pa.string(), len(ln), [None, pa.py_buffer(offsets), pa.py_buffer(body)])
    arr.validate(full=True)  # UTF-8, as pyarrow checks when it reads strings
    return arr
