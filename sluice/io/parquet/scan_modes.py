"""The scan's three modes as strategies: where a slice's rows are filtered (PystachIO §5).

Every mode yields the same rows; they differ in what is decoded and shipped, and where the
pushed predicate and the runtime filters run (:class:`~sluice.io.parquet.slice_filter.SliceFilter`):

- direct: every projected column, shipped whole (the consumer filters);
- pushdown: every column decoded, the filters evaluated on the I/O thread on the host,
  survivors shipped;
- staging: the predicate's columns (and the active runtime filters' keys) decoded and shipped,
  the filters evaluated on the device; the other columns decoded only if a row survives, and
  only survivors shipped.

Which mode a slice gets is decided elsewhere (fixed at lowering, ``sluice.physical.scan``, or
per slice by the adaptive policy, ``sluice.adapt.scan_policy``); the reader's pipeline
(:mod:`sluice.io.parquet.reader`) runs a mode's ``load`` on an I/O thread and hands over what it
returns.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from sluice.catalog import RowGroup
from sluice.chunk import Column
from sluice.config import Config
from sluice.errors import DataError
from sluice.io.parquet.decoders import partition_column
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.parquet.slice_filter import SliceFilter
from sluice.io.pinned import handed_over, to_device, wait_for


class Loaded(NamedTuple):
    """A slice as a mode loaded it: its columns (None: no row left), the event the consumer
    waits on before using them (None: none), the compressed bytes read, the rows, and whether
    the filters were applied already (else the consumer applies them)."""
    cols: dict[str, Column] | None
    event: object
    nread: int
    rows: int
    filtered: bool


def nothing(nread: int = 0) -> Loaded:
    """A slice with no row left after reading ``nread`` bytes."""
    return Loaded(None, None, nread, 0, True)


class SliceIO:
    """What every mode loads a slice with: the scan's table, projected columns, decoder,
    footers, device and filters."""

    def __init__(self, table, columns: list[str], decoder, device: torch.device, cfg: Config,
                 cache: MetadataCache, record: Callable, filt: SliceFilter) -> None:
        self.table = table
        self.columns = columns
        self.decoder = decoder
        self.device = device
        self.cfg = cfg
        self.cache = cache
        self.record = record
        self.filter = filt

    def footer(self, path: str) -> pq.FileMetaData:
        if self.cfg.on("metadata_cache"):
            return self.cache.footer(path)
        try:
            return pq.read_metadata(path)  # the naive reader re-reads metadata per read
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{path} is not a readable Parquet file ({str(e).splitlines()[0]})") from None

    def decode(self, task: list[RowGroup], md, names: list[str], keep=None) -> tuple[dict[str, Column], int]:
        """Read + decode the ``names`` columns of ``task`` on this thread with the scan's decoder
        (partition columns are made from the file's folder values); returns the columns and the
        compressed bytes read. With ``keep`` (a host bool array over the task's rows) only
        those rows: the device decoder then skips the pages without one."""
        parts = self.table.partitions
        stored = [c for c in names if c not in parts]
        cols, nread = self.decoder.decode(task, md, stored, keep)
        n = sum(rg.num_rows for rg in task) if keep is None else int(keep.sum())
        for c in names:
            if c in parts:
                cols[c] = partition_column(self.table, c, task[0].path, n)
        return {c: cols[c] for c in names}, nread

    def ship(self, cols: dict[str, Column]):
        """Host columns to the device (the device decoder's are there already, made on this
        thread's decode stream); the event the consumer waits on (and hands the tensors over
        with, see ``pinned.wait_for``), or None."""
        host = {c: col for c, col in cols.items() if col.data.device.type == "cpu"}
        if self.device.type != "cuda":
            return cols, None
        decoded = handed_over({c: col for c, col in cols.items() if c not in host})
        if host:
            moved, event = to_device(host, self.device, pinned=self.cfg.on("pinned_memory"),
                                     copy_stream=self.cfg.on("copy_stream"), record=self.record)
            # A copy stream's event is complete already (its I/O thread waited for it).
            return {c: moved.get(c, col) for c, col in cols.items()}, (decoded or event)
        return cols, decoded

    def bound_rules_out(self, bound, task: list[RowGroup], md, n: int) -> int | None:
        """With the MIN / MAX bound of the aggregation above (sluice.exec.minmax_bounds): the
        bytes read deciding that ``task`` holds no row it needs (read only as far as its group
        keys), or None where it may."""
        keys_read = []

        def decode_keys():
            if not bound.spec.keys:
                return [], n
            cols, nread = self.decode(task, md, list(bound.spec.keys))
            keys_read.append(nread)
            return [cols[c] for c in bound.spec.keys], n

        return sum(keys_read) if bound.rules_out(task, decode_keys) else None


class ScanMode(Protocol):
    name: str
    #: Whether its load applies the predicate and the runtime filters active then (else the
    #: consumer applies them).
    applies_filters: bool

    def load(self, io: SliceIO, task: list[RowGroup], md, n: int) -> Loaded: ...


class Direct:
    name = "direct"
    applies_filters = False

    def load(self, io: SliceIO, task: list[RowGroup], md, n: int) -> Loaded:
        cols, nread = io.decode(task, md, io.columns)
        cols, event = io.ship(cols)
        return Loaded(cols, event, nread, n, io.filter.predicate is None)


class Pushdown:
    name = "pushdown"
    applies_filters = True

    def load(self, io: SliceIO, task: list[RowGroup], md, n: int) -> Loaded:
        cols, nread = io.decode(task, md, io.columns)
        if io.device.type == "cuda":
            # The torch decoder's columns were made on this thread's decode stream.
            wait_for(handed_over(cols), cols)
        keep = io.filter.survivors(cols, n, io.filter.probing(task))
        if keep is not None:
            n = int(keep.numel())
            if n == 0:
                return nothing(nread)
            cols = {c: col.take(keep) for c, col in cols.items()}
        cols, event = io.ship(cols)
        return Loaded(cols, event, nread, n, True)


class Staging:
    name = "staging"
    applies_filters = True

    def load(self, io: SliceIO, task: list[RowGroup], md, n: int) -> Loaded:
        filt = io.filter
        filters = [rf.column for rf in filt.runtime if rf.active and rf.column in io.columns]
        if filt.predicate is None and not filters:
            return DIRECT.load(io, task, md, n)  # nothing to stage on
        # The predicate's columns and the active runtime filters' keys first: the filters
        # are part of what decides which rows the other columns are decoded for.
        pred_columns = filt.pred_columns
        first = pred_columns + [c for c in dict.fromkeys(filters) if c not in pred_columns]
        pcols, nread = io.decode(task, md, first)
        dcols, event = io.ship(pcols)
        wait_for(event, dcols)
        pos = filt.survivors(dcols, n, filt.probing(task))  # on the device; None: all rows
        kept = n if pos is None else int(pos.numel())
        if kept == 0:
            return nothing(nread)
        if pos is not None:
            dcols = {c: col.take(pos) for c, col in dcols.items()}
        rest = [c for c in io.columns if c not in first]
        keep = None
        if pos is not None:
            keep = torch.zeros(n, dtype=torch.bool)
            keep[pos.cpu()] = True
            keep = keep.numpy()
        rcols, more = io.decode(task, md, rest, keep) if rest else ({}, 0)
        rcols, event = io.ship(rcols)
        out = {**dcols, **rcols}
        return Loaded({c: out[c] for c in io.columns}, event, nread + more, kept, True)


DIRECT = Direct()
#: The modes by the names settings, the adaptive policy and the statistics use.
MODES: dict[str, ScanMode] = {m.name: m for m in (DIRECT, Pushdown(), Staging())}
