"""Which values of a join's probe key are hot: found when lowering, from a sample of the key's
column in the probe table's Parquet files (issue 52 item 5; the routing is
:mod:`sluice.exec.hot_keys`).

A key value holding at least ``1 / (2 * world)`` of the sampled rows would give the rank it
hashes to half a rank's fair share again or more: it is hot. The sample is a few row groups
spread over the table, the same ones on every rank (their footers agree: the plan fingerprint),
so every rank routes the same values apart; the exchanges' descriptions carry the values, so
ranks that disagree refuse rather than mix. Only a single integer key read unchanged from a
scan is sampled (a computed key has no column to read), and never where each rank reads its own
files (``rank_data=local``: their samples would differ).
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sluice.exec.operators import Operator
from sluice.expr.nodes import Col
from sluice.physical.lineage import scan_column

#: Row groups read for the sample, evenly spread over the table.
SAMPLE_GROUPS = 4
#: Sampled rows at most (a row group's first rows past it).
SAMPLE_ROWS = 1 << 18
#: Hot values kept at most (the build side's rows of each go to every rank).
MAX_HOT = 8
#: A value is hot only when seen this often in the sample (a small table's sample proves nothing).
MIN_SEEN = 64


def hot_key_values(probe: Operator, key, world: int, share: float = 0.0) -> tuple[int, ...]:
    """The hot values of ``key`` on ``probe``'s rows (empty: none, or not knowable): those
    holding ``share`` of the sample or more (0: ``1 / (2 * world)`` and :data:`MIN_SEEN` rows)."""
    if not isinstance(key, Col) or not key.type.is_integer:
        return ()
    found = scan_column(probe, key.name)
    if found is None:
        return ()
    scan, column, _ = found
    groups = scan.table.row_groups
    if not groups or any(g.rank >= 0 for g in groups) or scan.table.format != "parquet":
        return ()
    picks = sorted({round(i * (len(groups) - 1) / max(1, SAMPLE_GROUPS - 1)) for i in range(SAMPLE_GROUPS)})
    per_group = SAMPLE_ROWS // len(picks)
    try:  # (a Hive partition column is in no file: nothing to sample)
        parts = [_first_values(groups[i].path, groups[i].index, column, per_group) for i in picks]
    except (pa.ArrowException, KeyError, OSError, ValueError):
        return ()
    values = np.concatenate(parts)
    if not len(values):
        return ()
    uniq, counts = np.unique(values, return_counts=True)
    need = share * len(values) if share > 0 else max(MIN_SEEN, len(values) / (2 * world))
    hot = uniq[counts >= need]
    order = np.argsort(-counts[counts >= need], kind="stable")[:MAX_HOT]
    return tuple(int(v) for v in sorted(hot[order]))



@lru_cache(maxsize=64)
def _sampled(path: str, stamp: tuple, index: int, column: str, rows: int) -> np.ndarray:
    f = pq.ParquetFile(path)
    batch = next(f.iter_batches(batch_size=rows, row_groups=[index], columns=[column]), None)
    if batch is None:
        return np.zeros(0, np.int64)
    values = batch.column(0).drop_null()
    if not pa.types.is_integer(values.type):  # a struct field's path reads as its struct: no sample
        return np.zeros(0, np.int64)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)


def _first_values(path: str, index: int, column: str, rows: int) -> np.ndarray:
    """The first ``rows`` non-NULL values of a row group's column (each file's sample read once
    while it is unchanged)."""
    st = os.stat(path)
    return _sampled(path, (st.st_mtime_ns, st.st_size), index, column, rows)
