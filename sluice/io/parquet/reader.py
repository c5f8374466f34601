"""Chunked Parquet scan: prune row groups, read ahead on a shared I/O pool, yield chunks.

Row groups are grouped into read tasks of about ``chunk_rows`` rows. At most
``prefetch_chunks`` tasks run ahead of the consumer (a bounded queue), so memory is bounded by
settings, not by table size. Decoding (pyarrow, GIL released) and the Arrow->tensor conversion
happen on the I/O threads; the pushed-down filter runs on the consumer's device.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from sluice.chunk import Chunk, Column
from sluice.errors import DataError
from sluice.io.parquet.convert import arrow_to_column, to_device
from sluice.io.parquet.metadata import MetadataCache, RowGroup, TableInfo


def plan_reads(groups: list[RowGroup], chunk_rows: int) -> list[list[RowGroup]]:
    """Batch consecutive row groups of one file into tasks of about ``chunk_rows`` rows."""
    tasks: list[list[RowGroup]] = []
    cur: list[RowGroup] = []
    rows = 0
    for rg in groups:
        if cur and (rg.path != cur[0].path or rows + rg.num_rows > chunk_rows):
            tasks.append(cur)
            cur, rows = [], 0
        cur.append(rg)
        rows += rg.num_rows
    if cur:
        tasks.append(cur)
    return tasks


def read_task(table: TableInfo, task: list[RowGroup], columns: list[str],
              cache: MetadataCache) -> dict[str, Column]:
    """Decode the row groups of one task into host tensors (runs on an I/O thread)."""
    path = task[0].path
    strings = [c for c in columns if table.types[c].kind == "string"]
    try:
        f = pq.ParquetFile(path, metadata=cache.footer(path), read_dictionary=strings)
        t = f.read_row_groups([rg.index for rg in task], columns=columns, use_threads=True)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"cannot read {path}: {str(e).splitlines()[0]}") from None
    return {c: arrow_to_column(t.column(c), table.types[c]) for c in columns}


def scan_chunks(table: TableInfo, columns: list[str], groups: list[RowGroup], *,
                chunk_rows: int, pool: ThreadPoolExecutor, prefetch: int,
                cache: MetadataCache, device: torch.device) -> Iterator[Chunk]:
    """Yield chunks of at most ``chunk_rows`` rows holding ``columns`` (on ``device``)."""
    tasks = plan_reads(groups, chunk_rows)
    pending: deque[tuple[Future, int]] = deque()
    it = iter(tasks)
    seq = 0

    def submit() -> None:
        task = next(it, None)
        if task is not None:
            rows = sum(rg.num_rows for rg in task)
            pending.append((pool.submit(read_task, table, task, columns, cache), rows))

    for _ in range(max(1, prefetch + 1)):
        submit()
    try:
        while pending:
            fut, n = pending.popleft()
            cols = fut.result()
            submit()
            if device.type != "cpu":
                cols = {k: to_device(c, device) for k, c in cols.items()}
            for start in range(0, n, chunk_rows):
                stop = min(n, start + chunk_rows)
                chunk = Chunk(cols, n, seq)
                yield chunk if (start == 0 and stop == n) else chunk.slice(start, stop)
                seq += 1
    finally:
        for f, _ in pending:
            f.cancel()
