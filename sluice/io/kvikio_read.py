"""Whether KvikIO can read for the fetch stage (:mod:`sluice.io.parquet.fetch`, which reads
byte ranges into a torch tensor with KvikIO where it is installed, else with ``os.preadv``).

Why: the torch decoder wants a task's column-chunk bytes on the GPU. KvikIO reads a file into
device memory directly -- by GPUDirect Storage (DMA from NVMe to the GPU, no host copy) where the
system has it, otherwise in its "compat mode" (POSIX reads into its own pinned bounce buffers in
a thread pool, then copies to the device) -- and splits every read into tasks run in parallel,
so all ranges of a task are in flight at once. Without KvikIO the ranges are read into one pinned
host buffer and cross in one copy.

The ranges are the scan's: (file offset, length) pairs as :func:`sluice.io.parquet.ranges.
column_chunk_ranges` and ``merge_spans`` give them, read into consecutive slices of the target.
API facts (kvikio-cu13 26.10): ``kvikio.CuFile(path, "r").pread(buf, size, file_offset)`` returns
an ``IOFuture`` whose ``get()`` waits and gives the bytes read; ``buf`` is anything with
``__cuda_array_interface__`` or the buffer protocol; even host reads need libcuda.
``kvikio.defaults.is_compat_mode_preferred()`` says whether compat mode is in effect (the
``compat_mode`` setting is ``CompatMode.ON/OFF/AUTO``; AUTO falls back to compat mode when GDS is
missing); versions before 24.12 had ``kvikio.defaults.compat_mode() -> bool`` instead.
"""

from __future__ import annotations

import functools

import torch


@functools.cache
def available() -> bool:
    """Whether KvikIO imports and torch sees a CUDA device (KvikIO needs libcuda for any read).
    Never raises."""
    try:
        if not torch.cuda.is_available():
            return False
        import kvikio  # noqa: F401 -- deferred: optional GPU package (kvikio)
        return True
    except Exception:  # ImportError, OSError (libkvikio, libcufile): all mean "no"
        return False


def compat_mode() -> bool | None:
    """Whether KvikIO reads without GPUDirect Storage (through host bounce buffers); None when
    KvikIO is not available."""
    if not available():
        return None
    try:
        import kvikio.defaults as d  # deferred: optional GPU package (kvikio)
        if hasattr(d, "is_compat_mode_preferred"):
            return bool(d.is_compat_mode_preferred())
        return bool(d.compat_mode())
    except Exception:
        return None


def reads_label(compat: bool | None, into_device: bool) -> str:
    """What ``--analyze`` says about a scan's KvikIO reads: where the bytes land and how.

    GPUDirect Storage (DMA from storage to the GPU) can only happen for a read into device
    memory with KvikIO out of compat mode; sluice's torch decoder reads a task's column chunks
    into one pinned *host* buffer (:func:`sluice.io.parquet.fetch`), which KvikIO fills with
    POSIX reads on its own threads whatever its mode, so those reads never use GDS."""
    mode = {True: "compat mode", False: "not in compat mode", None: "mode unknown"}[compat]
    if not into_device:
        return f"kvikio into pinned host memory (POSIX reads by KvikIO's threads, {mode}; no GPUDirect Storage)"
    if compat is False:
        return "kvikio into device memory (not in compat mode: cuFile, GPUDirect Storage where the file system allows it)"
    return f"kvikio into device memory ({mode}: POSIX reads through host bounce buffers, no GPUDirect Storage)"
