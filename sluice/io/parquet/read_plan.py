"""The first stage of a scan: which bytes to read, in which tasks (decided when lowering).

Row groups are batched into read tasks of about ``chunk_rows`` rows (an adaptive scan: about
:data:`SLICES` slices, to sample its modes on) and, under a small read-ahead budget, of at most
that many decoded bytes. A :class:`ReadPlan` is plain data: lowering makes it
(:mod:`sluice.physical.scan`), ``bytes_to_scan`` and ``--explain`` read it, the reader runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sluice.catalog import RowGroup, TableInfo
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.parquet.ranges import column_chunk_ranges
from sluice.io.parquet.ranges import leaf_index, leaf_indexes

#: With scan_mode=auto, a scan is cut into about this many slices.
SLICES = 64


def plan_reads(groups: list[RowGroup], chunk_rows: int, max_bytes: int | None = None,
               group_bytes: Callable[[RowGroup], int] | None = None) -> list[list[RowGroup]]:
    """Batch consecutive row groups of one file into tasks of about ``chunk_rows`` rows and, if
    given, at most ``max_bytes`` decoded bytes (at least one row group each): under a small
    memory budget a task of wide rows is cut to what the budget can hold."""
    tasks: list[list[RowGroup]] = []
    cur: list[RowGroup] = []
    rows = nbytes = 0
    for rg in groups:
        b = group_bytes(rg) if max_bytes is not None and group_bytes is not None else 0
        if cur and (rg.path != cur[0].path or rows + rg.num_rows > chunk_rows
                    or (max_bytes is not None and nbytes + b > max_bytes)):
            tasks.append(cur)
            cur, rows, nbytes = [], 0, 0
        cur.append(rg)
        rows += rg.num_rows
        nbytes += b
    if cur:
        tasks.append(cur)
    return tasks


def task_compressed_bytes(table: TableInfo, task: list[RowGroup], columns: list[str], cache: MetadataCache) -> int:
    md = cache.footer(task[0].path)
    stored = [c for c in columns if c not in table.partitions]
    return sum(ln for _, ln in column_chunk_ranges(md, [rg.index for rg in task], stored))


def estimate_decoded(table: TableInfo, task: list[RowGroup], columns: list[str], cache: MetadataCache) -> int:
    """Host bytes a task holds once decoded: fixed-width values (decimals pass through
    Arrow's 16-byte decimal128 before becoming int64), string codes plus their dictionary
    (bounded by the column chunk's uncompressed size), and validity masks."""
    rows = sum(rg.num_rows for rg in task)
    total = rows
    for c in columns:
        kind = table.types[c].kind
        if table.types[c].is_nested:  # codes, and the values as stored uncompressed (a bound)
            for rg in task:
                md = cache.footer(rg.path)
                total += rg.num_rows * 8 + sum(md.row_group(rg.index).column(j).total_uncompressed_size
                                               for j in leaf_indexes(md, c))
            continue
        total += rows * (table.types[c].value_bytes + (16 if kind == "decimal" else 0))
        if kind == "string" and c not in table.partitions:
            # each row group in its own file's footer (the row groups of a table's files)
            for rg in task:
                md = cache.footer(rg.path)
                j = leaf_index(md, c)
                total += md.row_group(rg.index).column(j).total_uncompressed_size
    return total


@dataclass(frozen=True)
class ReadPlan:
    """A scan's read tasks: row groups of one file each, with their rows and the bytes each
    holds once decoded (what the read-ahead budget counts)."""

    tasks: tuple[tuple[RowGroup, ...], ...]
    task_rows: tuple[int, ...]
    estimates: tuple[int, ...]
    #: the rows a task aims at (``chunk_rows``, or an adaptive scan's slice)
    rows_per_task: int
    #: at most this many decoded bytes a task (None: no cap)
    max_bytes: int | None = None

    @property
    def decoded_bytes(self) -> int:
        """Decoded bytes of the whole scan (the most its read-ahead queue could hold)."""
        return sum(self.estimates)

    def compressed_bytes(self, table: TableInfo, columns: list[str], cache: MetadataCache) -> int:
        """Bytes the tasks read from storage (close column chunks merged, as they are read)."""
        return sum(task_compressed_bytes(table, list(t), columns, cache) for t in self.tasks)

    def capped(self, table: TableInfo, columns: list[str], cache: MetadataCache, max_bytes: int) -> ReadPlan:
        """The same row groups in tasks of at most ``max_bytes`` decoded bytes (a run whose
        read-ahead budget holds less than a task: tasks shrink to fit it)."""
        groups = [rg for t in self.tasks for rg in t]
        return plan_scan(table, columns, groups, self.rows_per_task, cache, max_bytes)


def slice_rows(groups: list[RowGroup], chunk_rows: int) -> int:
    """Rows per task of an adaptive scan: about :data:`SLICES` slices (at least a row group each,
    at most a chunk): enough to sample the modes on and to notice a change along the file."""
    return max(1, min(chunk_rows, sum(rg.num_rows for rg in groups) // SLICES))


def plan_scan(table: TableInfo, columns: list[str], groups: list[RowGroup], rows_per_task: int,
              cache: MetadataCache, max_bytes: int | None = None) -> ReadPlan:
    """The read tasks of ``columns`` over ``groups`` (see :func:`plan_reads`)."""
    tasks = plan_reads(groups, rows_per_task, max_bytes, lambda rg: estimate_decoded(table, [rg], columns, cache))
    return ReadPlan(tuple(tuple(t) for t in tasks), tuple(sum(rg.num_rows for rg in t) for t in tasks),
                    tuple(estimate_decoded(table, t, columns, cache) for t in tasks), rows_per_task, max_bytes)
