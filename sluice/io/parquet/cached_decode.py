"""The decode stage served from the connection's :class:`~sluice.io.column_cache.ColumnCache`.

:class:`CachedDecoder` wraps a scan's decoder (pyarrow's or the device decoder: both hand the
same columns over) and keeps what it decodes per row group, on the scan's device, keyed by

    (file path, size, mtime_ns, inode, ctime_ns, row group, column, decoder, form)

where the form is ``dict`` or ``plain`` for a string column (how it was decoded: a dictionary's
codes, or one entry per row) and empty otherwise. A read task's column whose row groups are all
cached skips fetch and decode: its pieces are concatenated (one piece: handed over as it is).
Otherwise the row groups missing are decoded (the columns missing the same row groups in one
call), and each row group's piece is kept: a copy of its slice when the task held several (so
that evicting one frees its memory), the decoded column itself when it held one.

It sits where the reader decodes a task, before the scan's filter (any mode), so a hit skips
fetch + decode and the filter runs on the cached rows. On a GPU, pyarrow's host columns are
moved to the device here (as the reader would have moved them) so that the device copies are
what is kept; the work on cached tensors runs on the I/O thread's decode stream, after the
event of the entry it reads (:meth:`Entry.ready_on`), and the reader hands the result over
with that stream's event as it does the device decoder's.

What is not kept: string columns whose dictionary holds more than one entry per
:data:`~sluice.io.parquet.reader.MERGE_ROWS_PER_ENTRY` rows (plain strings: their dictionary is
host memory, as large as the column), and partition columns (made from folder names, not
decoded). A staging slice's row selection (``keep``) is applied to a cached column only where every row
group of it is cached; otherwise the column is decoded for the selection (its pages without a
kept row skipped, as without the cache) and not kept. A file whose identity changed between the stat before the decode and the
one after is not kept from (its bytes may be of either version), and its old version's entries
are dropped (``ColumnCache.seen``): a rewritten file is never served stale.
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
import pyarrow.parquet as pq
import torch

from sluice.catalog import RowGroup
from sluice.chunk import Column, concat_columns
from sluice.errors import DataError
from sluice.io.column_cache import ColumnCache, Entry, cuda_event
from sluice.io.parquet.decoders import DecodeContext, is_field_path, read_as_dictionary
from sluice.io.pinned import decode_stream, to_device

#: A string column is kept only with at most one dictionary entry per this many rows (as the
#: reader's merge rule, ``reader.MERGE_ROWS_PER_ENTRY``): the dictionary lives on the host.
ROWS_PER_ENTRY = 8


def file_identity(path: str) -> tuple[int, int, int, int]:
    """(size, mtime_ns, inode, ctime_ns) of ``path``: a file rewritten in place or renamed over
    has another one, even with its size and modification time put back (the status-change
    time cannot be set)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise DataError(f"cannot open {path}: {e.strerror}") from None
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns


class CachedDecoder:
    """A :class:`~sluice.io.parquet.decoders.Decoder` that serves and fills the column cache."""

    def __init__(self, inner, cache: ColumnCache, ctx: DecodeContext) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.ctx = ctx
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the stage

    def decode(self, task: list[RowGroup], md: pq.FileMetaData, stored: list[str], keep: np.ndarray | None = None
               ) -> tuple[dict[str, Column], int]:
        s = self.ctx
        path = task[0].path
        ident = file_identity(path)
        self.cache.seen(path, ident)
        types = s.table.types
        forms = {c: (["plain"] * len(task) if is_field_path(s.table, c) else self._forms(md, c, task))
                 if types[c].kind == "string" else [""] * len(task) for c in stored}  # (a field: never a dictionary)
        # Plain strings are never kept: straight to the decoder (with the selection).
        direct = [c for c in stored if "plain" in forms[c]]
        cached = [c for c in stored if c not in direct]
        pieces: dict[str, list] = {}
        missing: dict[tuple[int, ...], list[str]] = {}  # positions in task -> columns missing them
        for c in cached:
            got = [self.cache.get(self._key(path, ident, rg, c, f)) for rg, f in zip(task, forms[c])]
            pieces[c] = got
            gaps = tuple(i for i, e in enumerate(got) if e is None)
            if gaps:
                missing.setdefault(gaps, []).append(c)
        misses = sum(len(g) * len(cols) for g, cols in missing.items())
        if keep is not None and missing:
            # A row selection (staging): what is not all cached is decoded for it alone (its
            # pages without a kept row skipped), not kept.
            selected = [c for cols in missing.values() for c in cols]
            direct += selected
            cached = [c for c in cached if c not in selected]
            missing = {}
        hits = sum(e is not None for c in cached for e in pieces[c])
        out: dict[str, Column] = {}
        nread = 0
        if direct:
            cols, nread = self.inner.decode(task, md, direct, keep)
            out.update(cols)
        stream = decode_stream(s.device)
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            whole: dict[str, Column] = {}
            stored_bytes = 0
            for gaps, cols in missing.items():
                part = [task[i] for i in gaps]
                got, n = self.inner.decode(part, md, cols, None)
                nread += n
                got = self._on_device(got, stream)
                unchanged = file_identity(path) == ident
                fresh = []  # (key, piece) to keep
                for c in cols:
                    if len(gaps) == len(task):
                        whole[c] = got[c]  # decoded whole: handed over as it is
                    rows = [rg.num_rows for rg in part]
                    keepable = unchanged and self._keepable(got[c], min(rows))
                    if not keepable and c in whole:
                        continue
                    for i, piece in zip(gaps, self._split(got[c], rows, copy=keepable)):
                        pieces[c][i] = Entry(piece, 0)
                        if keepable:
                            fresh.append((self._key(path, ident, task[i], c, forms[c][i]), piece))
                # The pieces' tensors are complete, for a user on another stream, after this event.
                ready = cuda_event(s.device, stream)
                for key, piece in fresh:
                    e = Entry(piece, piece.nbytes, ready, path)
                    if self.cache.put(key, e):
                        stored_bytes += e.nbytes
            served = 0
            for c in cached:
                if c in whole:
                    out[c] = whole[c]
                    continue
                for e in pieces[c]:
                    e.ready_on(stream)
                    served += e.nbytes
                parts = [e.column for e in pieces[c]]
                out[c] = parts[0] if len(parts) == 1 else concat_columns(parts, True)
            if keep is not None and cached:
                mask = torch.from_numpy(keep).to(s.device)
                for c in cached:
                    out[c] = out[c].filter(mask)
        with self._lock:
            st = s.stats
            st.cache_hits += hits
            st.cache_misses += misses
            st.cache_hit_bytes += served
            st.cache_stored_bytes += stored_bytes
        self.cache.count(hits, misses)
        return {c: out[c] for c in stored}, nread

    # ------------------------------------------------------------------ helpers

    def _key(self, path: str, ident, rg: RowGroup, column: str, form: str) -> tuple:
        return (path, *ident, rg.index, column, self.name, form)

    @staticmethod
    def _forms(md: pq.FileMetaData, column: str, task: list[RowGroup]) -> list[str]:
        """Per row group of ``task``: how pyarrow decodes the string column there on its own."""
        return ["dict" if read_as_dictionary(md, column, [rg.index]) else "plain" for rg in task]

    def _on_device(self, cols: dict[str, Column], stream) -> dict[str, Column]:
        """pyarrow's host columns moved to the scan's device (a CPU: as they are), ordered
        before the work of ``stream``."""
        dev = self.ctx.device
        host = {c: col for c, col in cols.items() if col.data.device != dev}
        if not host:
            return cols
        cfg = self.ctx.config
        moved, event = to_device(host, dev, pinned=cfg.on("pinned_memory"), copy_stream=cfg.on("copy_stream"),
                                 record=self.ctx.record)
        if stream is not None and event is None:  # copied on this thread's default stream
            stream.wait_stream(torch.cuda.current_stream(dev))
        return {c: moved.get(c, col) for c, col in cols.items()}

    @staticmethod
    def _split(col: Column, rows: list[int], copy: bool) -> list[Column]:
        """One piece of ``col`` per row group (``rows`` each): the column itself for one; for
        several, its slices -- copies with ``copy`` (a piece kept must not hold the whole
        column's memory: evicting it would free nothing)."""
        if len(rows) == 1:
            return [col]
        out, at = [], 0
        for n in rows:
            data = col.data[at:at + n]
            v = None if col.valid is None else col.valid[at:at + n]
            if copy:
                data, v = data.clone(), (None if v is None else v.clone())
            out.append(Column(data, col.type, v, col.dictionary))
            at += n
        return out

    @staticmethod
    def _keepable(col: Column, rows: int) -> bool:
        """Whether pieces of ``rows`` rows of ``col`` may be kept: not a string column whose
        host dictionary is large next to them."""
        if col.wide is not None or col.is_const:
            return False
        if col.type.kind == "string":
            return col.dictionary is not None and len(col.dictionary) * ROWS_PER_ENTRY <= max(rows, 1)
        return True
