"""The fetch stage of a scan: byte ranges of a file into host, pinned or device buffers.

One reader for every caller: (offset, length) ranges (:mod:`sluice.io.parquet.ranges` says which)
read with POSIX ``preadv``, or with KvikIO where it is installed and the target is pinned host
memory or a device tensor (:mod:`sluice.io.kvikio_read` says whether it is). One short-read rule:
a read that returns less than asked is retried for the rest (``preadv`` may legally stop short,
e.g. at 2 GiB on Linux), and a read that returns nothing before the range ends is the file
being shorter than its footer says -- one line, :func:`short_read`.

- :func:`read_ranges`: the measured storage stage (``measure_reads``) before pyarrow decodes:
  the ranges into a reused per-thread scratch buffer, bytes counted, nothing kept.
- :func:`fetch_chunks`: the column chunks kept, per column and row group, for the device decoder.
- :func:`read_ranges_into`: ranges into consecutive slices of a uint8 tensor (host, pinned or
  device); :func:`read_bytes`: into a new host buffer (``sluice inspect``'s page layouts).
"""

from __future__ import annotations

import bisect
import os
import threading

from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from sluice.errors import DataError
from sluice.io.parquet.ranges import chunk_span, merge_spans

if TYPE_CHECKING:
    import torch

# torch and KvikIO are imported where a tensor is read into: ``sluice inspect`` and ``doctor``
# read page layouts here without loading torch.


def short_read(path: str, off: int, done: int, ln: int) -> DataError:
    """The one error of a range the file does not hold."""
    return DataError(f"cannot read {path}: short read at {off}: {done} of {ln} bytes "
                     f"(the file is shorter than its footer says: truncated or corrupt)")


def _pread(fd: int, view: memoryview, off: int, path: str) -> int:
    """Fill ``view`` from ``off``: partial reads retried for the rest; returns its length."""
    ln = len(view)
    done = 0
    while done < ln:
        got = os.preadv(fd, [view[done:]], off + done)
        if got <= 0:
            raise short_read(path, off, done, ln)
        done += got
    return ln


def _read_posix(path: str, ranges, view: memoryview) -> int:
    """Each range into consecutive slices of ``view``; returns the bytes read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        at = 0
        for off, ln in ranges:
            at += _pread(fd, view[at:at + ln], off, path)
        return at
    finally:
        os.close(fd)


def read_bytes(path: str, ranges: list[tuple[int, int]]) -> bytearray:
    """The ranges of ``path``, one after another, in a new buffer."""
    buf = bytearray(sum(ln for _, ln in ranges))
    _read_posix(path, ranges, memoryview(buf))
    return buf


_scratch = threading.local()


def read_ranges(path: str, ranges: list[tuple[int, int]]) -> int:
    """Read the ranges from storage into a reused per-thread scratch buffer; returns bytes
    read. This is the measured storage stage: the pages it brings in are then decoded by
    pyarrow from the page cache (a memcpy), so no file-sized buffer is ever allocated."""
    need = max((ln for _, ln in ranges), default=0)
    buf = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < need:
        buf = _scratch.buf = bytearray(max(need, 1 << 20))
    view = memoryview(buf)
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in ranges:
            total += _pread(fd, view[:ln], off, path)
    finally:
        os.close(fd)
    return total


def fetch_chunks(path: str, md: pq.FileMetaData, row_groups: list[int], columns: list[str], pinned: bool = False
                 ) -> tuple[dict[str, list[tuple[memoryview, str, int]]], int]:
    """Read the column chunks of ``columns`` in ``row_groups`` and keep their bytes, for a
    decoder of our own (the device decoder): per column, (bytes as stored, codec, value count
    the footer gives) per row group in order, and the bytes read. Close ranges are read with
    one request (:func:`sluice.io.parquet.ranges.merge_spans`)."""
    names = md.schema.names
    want = []
    for rg in row_groups:
        r = md.row_group(rg)
        for c in columns:
            cc = r.column(names.index(c))
            want.append((c, *chunk_span(cc), cc.compression, cc.num_values))
    # A chunk of no values holds no page worth reading (pyarrow writes an empty row group's
    # data page offset as 0: its "span" would be the file's first bytes).
    merged = merge_spans({(s, ln) for _, s, ln, _, nv in want if nv})
    blocks = []
    total = 0
    if pinned:
        # Into one page-locked buffer (KvikIO reads there when installed, else plain reads):
        # what the device decompression stages from.
        import torch  # deferred: keeps doctor and inspect (footers and page headers only) free of torch
        buf = torch.empty(max(1, sum(ln for _, ln in merged)), dtype=torch.uint8,
                          pin_memory=torch.cuda.is_available())
        total = read_ranges_into(path, merged, buf)
        arr = buf.numpy()  # keeps the tensor alive as long as a view of it lives
        at = 0
        for off, ln in merged:
            blocks.append((off, memoryview(arr[at:at + ln])))
            at += ln
        return _by_column(want, blocks, columns), total
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in merged:
            b = bytearray(ln)
            total += _pread(fd, memoryview(b), off, path)
            blocks.append((off, memoryview(b)))
    finally:
        os.close(fd)
    return _by_column(want, blocks, columns), total


def _by_column(want, blocks, columns) -> dict[str, list[tuple[memoryview, str, int]]]:
    out: dict[str, list[tuple[memoryview, str, int]]] = {c: [] for c in columns}
    starts = [o for o, _ in blocks]
    for c, s, ln, codec, nv in want:
        if not nv:
            out[c].append((memoryview(b""), codec, nv))
            continue
        off, mv = blocks[bisect.bisect_right(starts, s) - 1]
        out[c].append((mv[s - off:s - off + ln], codec, nv))
    return out


def _check(ranges, out: torch.Tensor) -> int:
    import torch  # deferred: keeps doctor and inspect (footers and page headers only) free of torch
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
    of the file is a short read (:func:`short_read`)."""
    import torch  # deferred: keeps doctor and inspect (footers and page headers only) free of torch

    from sluice.io import kvikio_read  # deferred: keeps doctor and inspect (footers and page headers only) free of torch
    total = _check(ranges, out)
    if not total:
        return 0
    if (out.is_cuda or out.is_pinned()) and kvikio_read.available():
        _read_kvikio(path, ranges, out)
    elif out.is_cuda:
        host = torch.empty(total, dtype=torch.uint8, pin_memory=True)
        _read_posix(path, ranges, memoryview(host.numpy()))
        out[:total].copy_(host, non_blocking=True)
    else:
        _read_posix(path, ranges, memoryview(out.numpy()))
    return total


def _read_kvikio(path: str, ranges, out: torch.Tensor) -> None:
    """Issue every range's read with KvikIO, then wait for all (each read is split into
    parallel tasks); a range it read short is read again for the rest, by POSIX reads."""
    import kvikio  # deferred: optional GPU package (kvikio)
    import torch  # deferred: keeps doctor and inspect (footers and page headers only) free of torch
    if out.is_cuda:
        # KvikIO writes from its own threads and streams: kernels still queued on torch's stream
        # may use this memory (the caching allocator reuses blocks in stream order) until done.
        torch.cuda.current_stream(out.device).synchronize()
    target = out if out.is_cuda else out.numpy()
    pending, failure, short = [], None, []
    with kvikio.CuFile(path, "r") as f:
        at = 0
        for off, ln in ranges:
            if ln:
                buf = target[at:at + ln]
                pending.append((off, ln, at, f.pread(buf, ln, off)))
            at += ln
        for off, ln, at, fut in pending:  # every read is waited for, even after a failure
            try:
                got = fut.get()
            except (RuntimeError, OSError) as e:
                failure = failure or DataError(f"cannot read {path} at {off}: {str(e).splitlines()[0]}")
                continue
            if got != ln:
                short.append((off + got, ln - got, at + got))
    if failure is not None:
        raise failure
    for off, ln, at in short:  # the one short-read rule: the rest again, then a short file
        if out.is_cuda:
            host = torch.empty(ln, dtype=torch.uint8, pin_memory=True)
            _read_posix(path, [(off, ln)], memoryview(host.numpy()))
            out[at:at + ln].copy_(host)
        else:
            _read_posix(path, [(off, ln)], memoryview(target[at:at + ln]))
