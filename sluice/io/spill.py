"""Spill files: pages of operator state written to disk and read back.

A page is a Chunk. On disk it is one Arrow IPC stream (schema + one record batch), framed by
its length, appended to the file of its partition or run; strings travel by value (the page's
dictionary is not written), other columns as their tensors' storage (decimals as scaled int64,
dates as int32 days), NULLs as Arrow validity. Each page may use another codec: the
self-regulating policy (:mod:`sluice.adapt.spill_codec`) picks it per page.

Writes run on one background thread with a bounded number of pages in flight; the memory of a
page stays reserved until it is on disk. Every file of a query lives in one folder,
``sluice-spill-<pid>-<token>`` under a spill directory (several are used round-robin), removed
when the query ends -- on success, on error and on Ctrl-C -- and, if the process was killed,
by the next process that opens a connection (:func:`clean_stale`).
"""

from __future__ import annotations

import os
import shutil
import struct
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import torch

from sluice.arrow import batch_to_page, page_to_batch
from sluice.chunk import Chunk, Column
from sluice.errors import ResourcesExhausted

PREFIX = "sluice-spill-"
#: Pages being written at once (their memory is held until the write completes).
MAX_IN_FLIGHT = 4
_FRAME = struct.Struct("<Q")


# ---------------------------------------------------------------- files


class SpillFile:
    """An append-only file of pages, read back in the order written."""

    def __init__(self, manager: "SpillManager", path: Path) -> None:
        self.manager = manager
        self.path = path
        self.pages = 0
        self.raw_bytes = 0
        self.largest_page = 0  # raw bytes
        self.stored_bytes = 0
        self._pending: list[Future] = []
        self._lock = threading.Lock()

    def append(self, pages: Chunk | list[Chunk], on_written: Callable[[], None] | None = None) -> None:
        """Write ``pages`` (each kept a page of its own) in the background, in one write;
        ``on_written`` runs once they are on disk."""
        self.manager.submit(self, pages if isinstance(pages, list) else [pages], on_written)

    def _write(self, pages: list[Chunk]) -> None:
        codec = self.manager.codec
        level = codec.level
        name, lv = codec.current()
        t0 = time.perf_counter()
        opts = pa.ipc.IpcWriteOptions(compression=None if name == "none" else pa.Codec(name, lv))
        frames = []
        for page in pages:
            batch = page_to_batch(page, self.manager.page_dictionaries)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, batch.schema, options=opts) as w:
                w.write_batch(batch)
            buf = sink.getvalue()
            frames += [_FRAME.pack(buf.size), buf]
        stored = sum(len(f) if isinstance(f, bytes) else f.size for f in frames)
        t1 = time.perf_counter()
        with self._lock, open(self.path, "ab") as f:
            for fr in frames:
                f.write(fr)
        t2 = time.perf_counter()
        raw = sum(p.nbytes for p in pages)
        self.largest_page = max(self.largest_page, max(p.nbytes for p in pages))
        self.pages += len(pages)
        self.raw_bytes += raw
        self.stored_bytes += stored
        codec.record(level, raw, t1 - t0, t2 - t1)
        self.manager.note_write(raw, stored, t0, t2, len(pages))

    def flush(self) -> None:
        """Wait until every page appended so far is on disk."""
        self.manager.flush()

    def read(self, device: torch.device | None = None) -> Iterator[Chunk]:
        """The pages, in the order written."""
        self.flush()
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            while True:
                head = f.read(_FRAME.size)
                if not head:
                    return
                (size,) = _FRAME.unpack(head)
                t0 = time.perf_counter()
                data = f.read(size)
                batch = pa.ipc.open_stream(pa.py_buffer(data)).read_next_batch()
                page = batch_to_page(batch, device)
                self.manager.note_read(size + _FRAME.size, t0, time.perf_counter())
                yield page

    def delete(self) -> None:
        """Remove the file once its writes are done. A failed write is not raised again here: it
        reaches the query from the write's own wait (``flush`` / the next append), and a
        generator closing in an error's wake that raised it once more printed Python's
        'Exception ignored in' and a traceback."""
        try:
            self.flush()
        except ResourcesExhausted:
            pass
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class SpillManager:
    """The spill folder(s), background writer and counters of one query."""

    def __init__(self, dirs: list[str], codec, recorder=None,
                 page_dictionaries: bool = True) -> None:
        self.dirs = [Path(d) for d in dirs]
        self.page_dictionaries = page_dictionaries
        self.codec = codec  # the SpillCodec policy (sluice.adapt.spill_codec) that picks each page's codec
        self.recorder = recorder
        self._folders: list[Path] = []
        self._next = 0
        self._token = uuid.uuid4().hex[:8]
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._sem = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._lock = threading.Lock()
        self.bytes_written = 0       # raw page bytes
        self.bytes_stored = 0        # on disk (after compression)
        self.bytes_read = 0
        self.pages_written = 0
        self.pages_read = 0
        self.write_s = 0.0
        self.read_s = 0.0
        self.files = 0
        self._error: BaseException | None = None

    def _folder(self) -> Path:
        if not self._folders:
            for d in self.dirs:
                f = d / f"{PREFIX}{os.getpid()}-{self._token}"
                try:
                    f.mkdir(parents=False, exist_ok=True)
                except OSError as e:
                    raise ResourcesExhausted(f"cannot create spill folder in {d}: {e.strerror}") from None
                self._folders.append(f)
        f = self._folders[self._next % len(self._folders)]
        self._next += 1
        return f

    def new_file(self, label: str) -> SpillFile:
        with self._lock:
            self.files += 1
            name = f"{label.replace(' ', '_')}-{self.files}.pages"
            return SpillFile(self, self._folder() / name)

    def submit(self, file: SpillFile, pages: list[Chunk], on_written: Callable[[], None] | None) -> None:
        if self._error is not None:
            raise self._error
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sluice-spill")
        self._sem.acquire()

        def run():
            try:
                file._write(pages)
            except BaseException as e:  # noqa: BLE001 - surfaced to the query on the next call
                self._error = e if isinstance(e, ResourcesExhausted) else \
                    ResourcesExhausted(f"cannot write spill file {file.path}: {e}")
            finally:
                self._sem.release()
                if on_written is not None:
                    on_written()
        fut = self._pool.submit(run)
        with self._lock:
            self._futures = [f for f in self._futures if not f.done()] + [fut]

    def flush(self) -> None:
        with self._lock:
            futs = list(self._futures)
        for f in futs:
            f.result()
        if self._error is not None:
            raise self._error

    def note_write(self, raw: int, stored: int, t0: float, t1: float, pages: int = 1) -> None:
        with self._lock:
            self.bytes_written += raw
            self.bytes_stored += stored
            self.pages_written += pages
            self.write_s += t1 - t0
        if self.recorder is not None:
            self.recorder.add("spill_write", t0, t1, stored, "spill")

    def note_read(self, stored: int, t0: float, t1: float) -> None:
        with self._lock:
            self.bytes_read += stored
            self.pages_read += 1
            self.read_s += t1 - t0
        if self.recorder is not None:
            self.recorder.add("spill_read", t0, t1, stored, "spill")

    def close(self) -> None:
        """Stop writing and remove every spill file of this query (called on any exit)."""
        if self._pool is not None:
            for f in self._futures:
                f.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for f in self._folders:
            shutil.rmtree(f, ignore_errors=True)
        self._folders = []


def clean_stale(dirs: list[str]) -> int:
    """Remove spill folders of processes that no longer run; returns how many."""
    removed = 0
    for d in dirs:
        try:
            entries = list(Path(d).iterdir())
        except OSError:
            continue
        for e in entries:
            if not e.name.startswith(PREFIX) or not e.is_dir():
                continue
            try:
                pid = int(e.name[len(PREFIX):].split("-", 1)[0])
            except ValueError:
                continue
            if pid == os.getpid() or _alive(pid):
                continue
            shutil.rmtree(e, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- the device tier


def _to(page: Chunk, device: torch.device, pinned: bool = False) -> Chunk:
    cols = {}
    for k, c in page.columns.items():
        data = c.data
        valid = c.valid
        if device.type == "cpu" and data.device.type == "cuda":
            data = data.to("cpu", non_blocking=False)
            valid = None if valid is None else valid.to("cpu")
            if pinned:
                data = data.pin_memory()
        elif device.type == "cuda":
            data = data.to(device, non_blocking=pinned)
            valid = None if valid is None else valid.to(device)
        else:
            data = data.clone()  # a simulated tier on the CPU: a copy, as a transfer would be
            valid = None if valid is None else valid.clone()
        d = c.dictionary.to(data.device) if c.type.is_nested else c.dictionary
        cols[k] = Column(data, c.type, valid, d, c.wide)
    return Chunk(cols, page.num_rows, page.seq, device)


class HostPages:
    """A partition's pages moved off the device into (pinned) host memory: on a GPU the first
    spill tier, one above disk (docs/design.md §4). It reserves the host budget; when that is full,
    it hands its pages on to a spill file and becomes that file (at once under
    ``force_spill``, so that forcing spills reaches the disk on a GPU too). Same interface as
    :class:`SpillFile`, so operators do not tell the tiers apart."""

    def __init__(self, ctx, label: str) -> None:
        self.ctx = ctx
        self.label = label
        self.pages: list[Chunk] = []
        self.res = ctx.memory.reservation(f"{label} (host tier)")
        self.file: SpillFile | None = None
        self.raw_bytes = 0

    def append(self, pages: Chunk | list[Chunk], on_written: Callable[[], None] | None = None) -> None:
        pages = pages if isinstance(pages, list) else [pages]
        for p in pages:
            self.raw_bytes += p.nbytes
        if self.file is None:
            nb = sum(p.nbytes for p in pages)
            # force_spill tests the whole chain: past the host tier, every page goes to disk
            if not self.ctx.config.force_spill and self.res.try_grow(nb):
                self.pages.extend(_to(p, torch.device("cpu"), pinned=True) for p in pages)
                if on_written is not None:
                    on_written()  # the device copy is free now
                return
            self._demote()
        self.file.append(pages, on_written)

    def _demote(self) -> None:
        """The host budget is full: from now on this partition lives on disk."""
        self.file = self.ctx.spills().new_file(self.label)
        if self.pages:
            self.file.append(self.pages)
            self.file.flush()
        self.pages = []
        self.res.free()

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def read(self, device: torch.device | None = None) -> Iterator[Chunk]:
        dev = device or torch.device("cpu")
        for p in list(self.pages):
            yield _to(p, dev, pinned=True) if dev.type == "cuda" else p
        if self.file is not None:
            yield from self.file.read(device)

    def delete(self) -> None:
        self.pages = []
        self.res.free()
        if self.file is not None:
            self.file.delete()
