"""Byte ranges of a file read straight into a torch tensor: with KvikIO where it is installed,
else with plain ``os.preadv``.

Why: the torch decoder wants a task's column-chunk bytes on the GPU. KvikIO reads a file into
device memory directly -- by GPUDirect Storage (DMA from NVMe to the GPU, no host copy) where the
system has it, otherwise in its "compat mode" (POSIX reads into its own pinned bounce buffers in
a thread pool, then copies to the device) -- and splits every read into tasks run in parallel,
so all ranges of a task are in flight at once. Without KvikIO the ranges are read into one pinned
host buffer and cross in one copy. The torch decoder today always passes a pinned *host* buffer
(``io/parquet/ranges.fetch_chunks``: the device decompression stages from it), which KvikIO fills
with POSIX reads on its threads: no GPUDirect Storage there, whatever KvikIO's mode
(:func:`reads_label` says so in ``--analyze``).

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
import os

import torch


@functools.cache
def available() -> bool:
    """Whether KvikIO imports and torch sees a CUDA device (KvikIO needs libcuda for any read).
    Never raises."""
    try:
        if not torch.cuda.is_available():
            return False
        import kvikio  # noqa: F401
        return True
    except Exception:  # ImportError, OSError (libkvikio, libcufile): all mean "no"
        return False


def compat_mode() -> bool | None:
    """Whether KvikIO reads without GPUDirect Storage (through host bounce buffers); None when
    KvikIO is not available."""
    if not available():
        return None
    try:
        import kvikio.defaults as d
        if hasattr(d, "is_compat_mode_preferred"):
            return bool(d.is_compat_mode_preferred())
        return bool(d.compat_mode())
    except Exception:
        return None


def reads_label(compat: bool | None, into_device: bool) -> str:
    """What ``--analyze`` says about a scan's KvikIO reads: where the bytes land and how.

    GPUDirect Storage (DMA from storage to the GPU) can only happen for a read into device
    memory with KvikIO out of compat mode; sluice's torch decoder reads a task's column chunks
    into one pinned *host* buffer (``io/parquet/ranges.py``), which KvikIO fills with POSIX
    reads on its own threads whatever its mode, so those reads never use GDS."""
    mode = {True: "compat mode", False: "not in compat mode", None: "mode unknown"}[compat]
    if not into_device:
        return f"kvikio into pinned host memory (POSIX reads by KvikIO's threads, {mode}; no GPUDirect Storage)"
    if compat is False:
        return "kvikio into device memory (not in compat mode: cuFile, GPUDirect Storage where the file system allows it)"
    return f"kvikio into device memory ({mode}: POSIX reads through host bounce buffers, no GPUDirect Storage)"


def _check(ranges, out: torch.Tensor) -> int:
    total = sum(ln for _, ln in ranges)
    if out.dtype != torch.uint8 or out.dim() != 1 or not out.is_contiguous():
        raise ValueError("the target must be a contiguous 1-d uint8 tensor")
    if out.numel() < total:
        raise ValueError(f"the ranges hold {total} bytes, the target {out.numel()}")
    if any(off < 0 or ln < 0 for off, ln in ranges):
        raise ValueError("a range with a negative offset or length")
    return total


def read_ranges_into(path: str, ranges: list[tuple[int, int]], out: torch.Tensor) -> int:
    """Read each (offset, length) range of ``path`` into ``out`` (a uint8 tensor on a device or
    the host), one after another from its start; returns the bytes read. A range past the end
    of the file is an ``OSError``, as a short read."""
    total = _check(ranges, out)
    if not total:
        return 0
    if (out.is_cuda or out.is_pinned()) and available():
        _read_kvikio(path, ranges, out)
    elif out.is_cuda:
        host = torch.empty(total, dtype=torch.uint8, pin_memory=True)
        _read_posix(path, ranges, memoryview(host.numpy()))
        out[:total].copy_(host, non_blocking=True)
    else:
        _read_posix(path, ranges, memoryview(out.numpy()))
    return total


def _read_posix(path: str, ranges, view: memoryview) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        at = 0
        for off, ln in ranges:
            done = 0
            while done < ln:  # preadv may return less than asked of a long read
                got = os.preadv(fd, [view[at + done:at + ln]], off + done)
                if got <= 0:
                    raise OSError(f"short read at {off}: {done} of {ln} bytes")
                done += got
            at += ln
    finally:
        os.close(fd)


def _read_kvikio(path: str, ranges, out: torch.Tensor) -> None:
    """Issue every range's read, then wait for all (each read is split into parallel tasks)."""
    import kvikio
    if out.is_cuda:
        # KvikIO writes from its own threads and streams: kernels still queued on torch's stream
        # may use this memory (the caching allocator reuses blocks in stream order) until done.
        torch.cuda.current_stream(out.device).synchronize()
    target = out if out.is_cuda else out.numpy()
    pending, failure = [], None
    with kvikio.CuFile(path, "r") as f:
        at = 0
        for off, ln in ranges:
            if ln:
                buf = target[at:at + ln]
                pending.append((off, ln, buf, f.pread(buf, ln, off)))
            at += ln
        for off, ln, _buf, fut in pending:  # every read is waited for, even after a failure
            try:
                got = fut.get()
            except (RuntimeError, OSError) as e:
                failure = failure or OSError(f"cannot read {path} at {off}: {str(e).splitlines()[0]}")
                continue
            if got != ln:
                failure = failure or OSError(f"short read at {off}: {got} of {ln} bytes")
    if failure is not None:
        raise failure
