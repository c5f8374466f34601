"""One pool of compute threads for Arrow kernels, and per-slice maps over large arrays.

pyarrow's compute kernels run on one thread per call (and release the GIL). A string function
over a large dictionary -- TPC-H Q13's ``NOT LIKE '%special%requests%'`` over 15 M distinct
comments at SF 10: 1.2 s on one core while an H200 machine's 15 others idled -- is cut into
slices of at least ``MIN_SLICE`` entries mapped on the pool, as many as torch's compute threads
(the ``threads`` setting) -- on the consumer's thread only: an I/O thread filtering a slice in
pushdown is one of several already running in parallel, so slicing there would only add
threads. The pool only ever runs Arrow kernels, never a task that waits on another, so it
cannot deadlock."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import pyarrow as pa
import torch

MIN_SLICE = 1 << 17  # entries: below two of these, one call is as fast
IO_THREAD_PREFIX = "sluice-io"  # the connection's I/O pool's thread names (sluice.engine)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def compute_pool() -> ThreadPoolExecutor:
    """The process's pool for Arrow kernels (created on first use, torch's thread count)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, torch.get_num_threads()), thread_name_prefix="sluice-compute")
        return _pool


def map_slices(fn: Callable[[pa.Array], pa.Array], arr: pa.Array) -> pa.Array:
    """``fn(arr)`` for an element-wise ``fn``, computed slice by slice on the pool when ``arr``
    is large (the slices' results concatenated in order)."""
    n = len(arr)
    k = min(torch.get_num_threads(), n // MIN_SLICE)
    if k < 2 or threading.current_thread().name.startswith(IO_THREAD_PREFIX):
        return fn(arr)
    step = -(-n // k)
    parts = list(compute_pool().map(lambda i: fn(arr.slice(i, step)), range(0, n, step)))
    return pa.concat_arrays([p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p for p in parts])
