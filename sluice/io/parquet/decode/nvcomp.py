"""Parquet pages decompressed on the GPU with nvCOMP, every page of a read task in one batch per codec.

Why: decompressing on the host (pyarrow's codecs, :func:`kernel_column.decompress_on_host`) costs host
cores and sends the *decompressed* pages over PCIe. Here only the bytes as stored cross, in one
pinned buffer and one copy, and nvCOMP's batched decoders write each page straight to its place
in the task's page buffer (the layout is known from the page headers before anything is
decompressed), so the decoder's tensors start on the device without another copy.

nvCOMP's ``BitstreamKind.RAW`` decoders take the bare codec streams, so :func:`frame` first turns
each page as Parquet stores it into those: Snappy, Zstd and LZ4_RAW pages are already bare; the
deprecated Hadoop-framed LZ4 is split into its blocks; a GZIP page loses its gzip header and
trailer and goes to nvCOMP's Deflate. Brotli has no nvCOMP decoder: :class:`NotOnDevice`, and the
caller decompresses that task on the host, counted, as it would any column it leaves to pyarrow.

Every decoded size is checked against the page header's (a mismatch is a ``ValueError``, which
the reader reports as corrupt data). nvCOMP's own device allocations go through torch's caching
allocator (``nvcomp.set_device_allocator``) so they count where every other tensor of the scan
does. API facts (nvidia-nvcomp-cu13 6.0.0.12): ``Codec(algorithm=, device_id=, cuda_stream=,
bitstream_kind=)``, one per thread (the Codec is not thread-safe); ``as_arrays(buffer, offsets,
sizes, cuda_stream)`` carves one contiguous buffer into a batch; ``Codec.decode(batch, out=batch)``
writes into given buffers of fixed capacity (ValueError when one is too small) and
``BatchArray.buffer_sizes`` waits for the batch and gives its sizes. The library's decompression
alignment (``nvcompBatched*DecompressGetRequiredAlignments``, default options) is 1 byte for
every output and 4 bytes for Deflate's inputs: payloads are staged 16-byte aligned, outputs are
written in place at the layout's offsets.

Nothing here imports nvCOMP until :func:`available` is asked, so the module loads on any host.
"""

from __future__ import annotations

import functools
import threading
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from sluice.io.parquet.decode.framing import hadoop_lz4_blocks

from sluice.io.parquet.decode.column import PAD
from sluice.kernels.buffers import to_device
from sluice.errors import UnsupportedError

#: Parquet codec names -> nvCOMP algorithm names (GZIP pages are unwrapped to raw deflate).
ALGORITHMS = {"SNAPPY": "Snappy", "ZSTD": "Zstd", "LZ4_RAW": "LZ4", "LZ4": "LZ4", "GZIP": "Deflate"}
#: Staged compressed payloads start at multiples of this (Deflate needs 4; more reads faster).
STAGE_ALIGN = 16
#: Bytes of decompressed output per nvCOMP algorithm an output buffer must be aligned to. 1 for
#: all, as the library reports; raised to the codec's own figure if nvCOMP ever refuses an
#: output for its alignment (those batches are then decoded aside and copied into place).
_out_align: dict[str, int] = {}
#: More separate stretches than this are copied with one gather rather than a copy each.
GATHER_RUNS = 32
GATHER_BYTES_MAX = 8 << 20


class NotOnDevice(Exception):
    """These pages cannot be decompressed with nvCOMP (the reason says why): decompress them on
    the host instead."""


# --- availability -----------------------------------------------------------------------------

@functools.cache
def available() -> bool:
    """Whether nvCOMP can decompress here: the package imports, torch sees a CUDA device and a
    codec can be made on it (a CUDA 13 nvCOMP needs a CUDA 13 driver). Never raises."""
    try:
        if not torch.cuda.is_available():
            return False
        nvc = _nvcomp()
        _use_torch_allocator()
        nvc.Codec(algorithm="Snappy", device_id=torch.cuda.current_device(), bitstream_kind=nvc.BitstreamKind.RAW)
        return True
    except Exception:  # ImportError, OSError (libnvcomp), RuntimeError (driver): all mean "no"
        return False


def _nvcomp():
    from nvidia import nvcomp  # deferred: optional GPU package (nvidia)
    return nvcomp


class _TorchBlock:
    """Device memory nvCOMP asked for, held as a torch tensor (freed with it)."""

    __slots__ = ("tensor", "ptr")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor
        self.ptr = tensor.data_ptr()


def _torch_allocation(nbytes: int, stream) -> object:
    """nvCOMP's device allocator: torch's caching allocator, ordered on nvCOMP's stream."""
    from nvidia.nvcomp.external_memory import ExternalMemory  # deferred: optional GPU package (nvidia)
    dev = torch.device("cuda", stream.device)
    ts = torch.cuda.ExternalStream(stream.ptr, device=dev) if stream.ptr else torch.cuda.default_stream(dev)
    with torch.cuda.stream(ts):
        block = _TorchBlock(torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device=dev))
    return ExternalMemory(block, stream)


@functools.cache
def _use_torch_allocator() -> None:
    _nvcomp().set_device_allocator(_torch_allocation)


# --- framing: Parquet pages as stored -> bare codec streams -------------------------------------

def _view(raw) -> memoryview:
    mv = memoryview(raw)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def frame(codec: str, raw, size: int | None = None) -> list[tuple[memoryview, int | None]]:
    """The bare streams nvCOMP's RAW decoders take for one page as Parquet stores it, each with
    its decompressed size where the framing gives it (None: the page's own size). ``size`` (the
    page header's) decides between Hadoop-framed and raw LZ4, as pyarrow's reader does, and is
    checked against a gzip trailer. Garbage framing raises ``ValueError``; what nvCOMP cannot
    decode raises :class:`NotOnDevice`."""
    mv = _view(raw)
    if codec is None or codec == "UNCOMPRESSED":
        return [(mv, len(mv))]
    if codec in ("SNAPPY", "ZSTD", "LZ4_RAW"):
        return [(mv, size)]
    if codec == "LZ4":
        return hadoop_lz4_blocks(mv, size) or [(mv, size)]
    if codec == "GZIP":
        return [_deflate_stream(mv, size)]
    raise NotOnDevice(f"nvCOMP has no {codec} decoder")


_FTEXT, _FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 1, 2, 4, 8, 16


def _deflate_stream(mv: memoryview, size: int | None) -> tuple[memoryview, int | None]:
    """The raw deflate stream of a GZIP page: one gzip member (RFC 1952) with its header and
    8-byte trailer (CRC-32, size mod 2**32) taken off, or a zlib stream (RFC 1950), which
    pyarrow's reader also accepts as GZIP. A page of several gzip members cannot be split without
    inflating it: its last trailer gives another size than the page's, and it is left to the
    host (:class:`NotOnDevice`). The CRC-32 is not checked on the device."""
    n = len(mv)
    if n >= 2 and mv[0] == 0x1F and mv[1] == 0x8B:
        if n < 18:
            raise ValueError(f"a GZIP page of {n} bytes is shorter than a gzip header and trailer")
        if mv[2] != 8:
            raise ValueError(f"a GZIP page uses compression method {mv[2]}, not deflate")
        flags, end = mv[3], n - 8
        if flags & 0xE0:
            raise ValueError("a GZIP page's header has reserved flags set")
        pos = 10
        if flags & _FEXTRA:
            if pos + 2 > end:
                raise ValueError("a GZIP page's header is truncated")
            pos += 2 + (mv[pos] | mv[pos + 1] << 8)
        if flags & _FNAME:
            pos = _past_zero(mv, pos, end)
        if flags & _FCOMMENT:
            pos = _past_zero(mv, pos, end)
        if flags & _FHCRC:
            if pos + 2 > end:
                raise ValueError("a GZIP page's header is truncated")
            if (zlib.crc32(mv[:pos]) & 0xFFFF) != (mv[pos] | mv[pos + 1] << 8):
                raise ValueError("a GZIP page's header checksum does not match")
            pos += 2
        if pos > end:
            raise ValueError("a GZIP page's header runs past the page")
        isize = int.from_bytes(mv[end + 4:n], "little")
        if size is not None and isize != size & 0xFFFFFFFF:
            raise NotOnDevice(f"a GZIP page's trailer gives {isize} bytes, its header {size} "
                              f"(several gzip members?)")
        return mv[pos:end], size if size is not None else isize
    if n >= 6 and mv[0] & 0x0F == 8 and mv[0] >> 4 <= 7 and (mv[0] << 8 | mv[1]) % 31 == 0:
        if mv[1] & 0x20:
            raise ValueError("a GZIP page's zlib stream needs a preset dictionary")
        return mv[2:n - 4], size
    raise ValueError("a GZIP page is neither a gzip member nor a zlib stream")


def _past_zero(mv: memoryview, pos: int, end: int) -> int:
    """Just past the zero byte ending a gzip header's name or comment."""
    while pos < end:
        chunk = bytes(mv[pos:min(end, pos + 4096)])
        k = chunk.find(0)
        if k >= 0:
            return pos + k + 1
        pos += len(chunk)
    raise ValueError("a GZIP page's header name or comment runs past the page")


# --- the plan: where every payload is staged and every page is written --------------------------

def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass
class _Batch:
    """One nvCOMP call: payloads in the staging buffer, outputs in the page buffer."""
    in_off: list = field(default_factory=list)
    in_size: list = field(default_factory=list)
    out_off: list = field(default_factory=list)
    out_size: list = field(default_factory=list)


@dataclass
class Plan:
    """What one task's decompression does, worked out on the host before the device is touched
    (so a page nvCOMP cannot take stops it before any transfer)."""
    size: int                                     # decompressed bytes, the layout's
    staging: int = 0                              # bytes of the staging buffer
    fills: list = field(default_factory=list)     # (staging offset, bytes as stored)
    batches: dict = field(default_factory=dict)   # nvCOMP algorithm -> _Batch
    copies: list = field(default_factory=list)    # (staging offset, page buffer offset, length), merged


def plan(parts, total_size: int) -> Plan:
    """The plan for ``parts`` ((bytes as stored, codec or None for bytes copied as is, size once
    decompressed), placed back to back: a layout's ``parts``) of ``total_size`` bytes."""
    p = Plan(total_size)
    plain, at = [], 0
    for raw, codec, size in parts:
        if codec is None or codec == "UNCOMPRESSED":
            if len(raw) != size:
                raise ValueError(f"a page decompressed to {len(raw)} bytes, its header says {size}")
            if size:
                plain.append((raw, at))
        else:
            frames = frame(codec, raw, size)
            batch = p.batches.setdefault(ALGORITHMS[codec], _Batch())
            o = at
            for payload, dsize in frames:
                d = size if dsize is None else dsize
                if d:
                    if not len(payload):
                        raise ValueError(f"a page of {d} bytes has no compressed bytes")
                    off = _align(p.staging, STAGE_ALIGN)
                    p.fills.append((off, payload))
                    p.staging = off + len(payload)
                    batch.in_off.append(off)
                    batch.in_size.append(len(payload))
                    batch.out_off.append(o)
                    batch.out_size.append(d)
                o += d
            if o != at + size:
                raise ValueError(f"a page decompressed to {o - at} bytes, its header says {size}")
        at += size
    if at != total_size:
        raise ValueError(f"the pages take {at} bytes, their layout {total_size}")
    p.batches = {a: b for a, b in p.batches.items() if b.out_off}
    runs = []
    for raw, dst in plain:  # packed in order: pages adjacent in the layout stay adjacent here
        p.fills.append((p.staging, raw))
        runs.append((p.staging, dst, len(raw)))
        p.staging += len(raw)
    p.copies = _merge(runs)
    return p


def _merge(runs: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(source, destination, length) copies, each joined to the one before where both follow on."""
    out: list[list[int]] = []
    for s, d, n in runs:
        if out and out[-1][0] + out[-1][2] == s and out[-1][1] + out[-1][2] == d:
            out[-1][2] += n
        else:
            out.append([s, d, n])
    return [(s, d, n) for s, d, n in out]


# --- execution -------------------------------------------------------------------------------------

def decompress(parts, total_size: int, device, stream: torch.cuda.Stream | None = None) -> torch.Tensor:
    """Every page of ``parts`` (a layout's) decompressed by nvCOMP into one uint8 tensor of
    ``total_size`` bytes plus ``PAD`` zero bytes on ``device``, each at its layout offset. Runs
    on ``stream`` (torch's current stream when None; nvCOMP cannot be given the legacy default
    stream unambiguously, so work meant for it runs on a side stream the caller's then waits
    for). Raises :class:`NotOnDevice` before any transfer for what nvCOMP cannot do."""
    device = torch.device(device)
    if device.type != "cuda" or not available():
        raise NotOnDevice("nvCOMP is not available here")
    p = plan(parts, total_size)
    with torch.cuda.device(device):
        index = torch.cuda.current_device()
        caller = stream if stream is not None else torch.cuda.current_stream()
        work = caller if caller.cuda_stream else _side_stream(index)
        with torch.cuda.stream(caller):
            out = torch.empty(total_size + PAD, dtype=torch.uint8, device=device)
            out[total_size:].zero_()
        if work is not caller:
            work.wait_stream(caller)
        try:
            with torch.cuda.stream(work):
                _run(p, out, _Nvcomp(index, work.cuda_stream))
        finally:
            if work is not caller:
                caller.wait_stream(work)
    return out


_local = threading.local()


def _side_stream(index: int) -> torch.cuda.Stream:
    streams = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = {}
    s = streams.get(index)
    if s is None:
        s = streams[index] = torch.cuda.Stream(device=index)
    return s


def _codec(alg: str, index: int, stream_ptr: int):
    """This thread's nvCOMP codec for ``alg`` on that device and stream (a Codec is bound to a
    stream when made and must not be shared between threads)."""
    codecs = getattr(_local, "codecs", None)
    if codecs is None:
        codecs = _local.codecs = {}
    key = (alg, index, stream_ptr)
    c = codecs.get(key)
    if c is None:
        nvc = _nvcomp()
        _use_torch_allocator()
        c = codecs[key] = nvc.Codec(algorithm=alg, device_id=index, cuda_stream=stream_ptr,
                                    bitstream_kind=nvc.BitstreamKind.RAW)
    return c


class _Nvcomp:
    """The decoder :func:`_execute` calls: nvCOMP on one device and stream."""

    def __init__(self, index: int, stream_ptr: int):
        self.index, self.stream = index, stream_ptr

    def alignment(self, alg: str) -> int:
        return int(_codec(alg, self.index, self.stream).get_required_decompression_alignment())

    def decode(self, alg: str, src: torch.Tensor, in_off, in_size, dst: torch.Tensor, out_off, out_size
               ) -> Callable[[], list[int]]:
        """Launch one batch; the returned call waits for it and gives the decoded sizes."""
        nvc = _nvcomp()
        srcs = nvc.as_arrays(src, list(in_off), list(in_size), cuda_stream=self.stream)
        dsts = nvc.as_arrays(dst, list(out_off), list(out_size), cuda_stream=self.stream)
        done = _codec(alg, self.index, self.stream).decode(srcs, out=dsts)
        return lambda: [int(x) for x in done.buffer_sizes]


def _run(p: Plan, out: torch.Tensor, decoder) -> None:
    """Stage ``p``'s bytes (one pinned buffer, one copy to ``out``'s device), then decompress
    and copy every page into ``out`` with ``decoder`` (a :class:`_Nvcomp`, or a host stand-in
    in the tests)."""
    if not p.staging:
        return
    host = torch.empty(p.staging, dtype=torch.uint8, pin_memory=out.is_cuda)
    hv = host.numpy()
    for off, raw in p.fills:
        hv[off:off + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    staged = host.to(out.device, non_blocking=True) if out.is_cuda else host
    _execute(p, staged, out, decoder)


def _execute(p: Plan, staged: torch.Tensor, out: torch.Tensor, decoder) -> None:
    waits = []
    for alg, b in p.batches.items():
        a = _out_align.get(alg, 1)
        if a == 1 or all(o % a == 0 for o in b.out_off):
            try:
                waits.append((b, decoder.decode(alg, staged, b.in_off, b.in_size, out, b.out_off, b.out_size)))
                continue
            except Exception as e:
                if "align" not in str(e).lower() or a != 1:
                    raise
                _out_align[alg] = max(2, decoder.alignment(alg))
        waits.append((b, _decode_aside(alg, b, staged, out, decoder)))
    if p.copies:
        _copy_runs(out, staged, p.copies)
    for b, sizes in waits:
        for got, want in zip(sizes(), b.out_size):
            if got != want:
                raise ValueError(f"a page decompressed to {got} bytes, its header says {want}")


def _decode_aside(alg: str, b: _Batch, staged: torch.Tensor, out: torch.Tensor, decoder) -> Callable:
    """Decode a batch into aligned slots of a scratch tensor, then copy each page into place."""
    a = _out_align[alg]
    slots, end = [], 0
    for n in b.out_size:
        end = _align(end, a)
        slots.append(end)
        end += n
    tmp = torch.empty(end, dtype=torch.uint8, device=out.device)
    sizes = decoder.decode(alg, staged, b.in_off, b.in_size, tmp, slots, b.out_size)
    _copy_runs(out, tmp, _merge(list(zip(slots, b.out_off, b.out_size))))
    return sizes


def _copy_runs(dst: torch.Tensor, src: torch.Tensor, runs: list[tuple[int, int, int]]) -> None:
    """``dst[d:d+n] = src[s:s+n]`` for each (s, d, n): a copy each when they are few or long,
    else one gather (many small stretches: the levels of v2 pages)."""
    total = sum(n for _, _, n in runs)
    if len(runs) <= GATHER_RUNS or total > GATHER_BYTES_MAX:
        for s, d, n in runs:
            dst[d:d + n].copy_(src[s:s + n])
        return
    dev = dst.device
    s_t, d_t, n_t = (to_device(torch.tensor(c, dtype=torch.long), dev) for c in zip(*runs))
    run = torch.repeat_interleave(torch.arange(len(runs), device=dev), n_t, output_size=total)
    k = torch.arange(total, device=dev) - (torch.cumsum(n_t, 0) - n_t)[run]
    dst[d_t[run] + k] = src[s_t[run] + k]


class OnDevice:
    """One scan's device decompression for the device decoder: every page of a read task through
    :func:`decompress` (nvCOMP), or, where it raises :class:`NotOnDevice` (a codec nvCOMP lacks),
    back to the host's codecs -- counted per reason for ``--analyze``, or an error with
    ``strict`` (``strict_device=true``). ``enabled`` false (nvCOMP not installed, or
    ``device_decompress=false``) counts every page as host-decompressed, with the reason."""

    def __init__(self, enabled: bool, why_not: str = "", strict: bool = False, decompress=None,
                 unverified: bool = False) -> None:
        self.enabled = enabled
        self.why_not = why_not
        self.strict = strict
        self.unverified = unverified  # device_decompress_unverified: pages without a CRC too
        self._decompress = decompress or globals()["decompress"]
        self.pages_device = 0
        self.pages_host = 0
        self.why: dict[str, int] = {}
        self._lock = threading.Lock()

    def pages(self, parts, size: int, device, unverified: int = 0) -> torch.Tensor | None:
        """The task's pages decompressed on ``device`` (a tensor of ``size`` + PAD bytes), or
        None: decompress them on the host. ``unverified``: how many of them have no page CRC;
        those stay on the host unless ``device_decompress_unverified`` (nvCOMP's decoders
        trust their input: a corrupt page can fault the GPU or decode to other bytes)."""
        n = sum(1 for _, codec, _ in parts if codec is not None and codec != "UNCOMPRESSED")
        if not n:
            return None  # nothing to decompress: the host copies the pages as they are
        why = self.why_not
        if self.enabled:
            try:
                if unverified and not self.unverified:
                    raise NotOnDevice("pages without a page CRC (device_decompress_unverified=false)")
                out = self._decompress(parts, size, device)
                with self._lock:
                    self.pages_device += n
                return out
            except NotOnDevice as e:
                if self.strict:
                    raise UnsupportedError(f"pages cannot be decompressed on the device ({e}); "
                                           f"strict_device=true forbids the host") from None
                why = str(e)
        with self._lock:
            self.pages_host += n
            self.why[why] = self.why.get(why, 0) + n
        return None
