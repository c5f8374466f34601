"""The torch decoder's host synchronisations, counted on the CPU (issue 29 item 6): each call
that would make the host wait for a GPU (a tensor's item, int, bool, float, tolist, cpu) while
decoding one column. A GPU run measures the real thing (``bench/syncs.py``); this keeps the
count from creeping back up. Page buffers read on the host (``numpy`` of the pinned buffer)
are not waits and are not counted."""

from __future__ import annotations

import collections

import pyarrow.parquet as pq
import pytest
import torch

from sluice.io.parquet.decode.column import ColumnPages, column_spec
from sluice.io.parquet.fetch import fetch_chunks
from sluice.types import from_arrow
from decode.test_torch_decoder import _matrix_table, write_matrix

WAITS = ("item", "__int__", "__bool__", "__float__", "tolist", "cpu")


@pytest.fixture
def waits(monkeypatch):
    counts = collections.Counter()
    on = [False]
    for name in WAITS:
        orig = getattr(torch.Tensor, name)

        def counted(self, *a, _orig=orig, _name=name, **k):
            if on[0]:
                counts[_name] += 1
            return _orig(self, *a, **k)
        monkeypatch.setattr(torch.Tensor, name, counted)

    def run(fn):
        counts.clear()
        on[0] = True
        try:
            fn()
        finally:
            on[0] = False
        return sum(counts.values())
    return run


# (column, encoding scheme) -> the most waits decoding it (three row groups as one task) may take:
# one per RLE/bit-packed call (its checks and its size together; they were six before), the two
# bounds checks that must precede gathers, and whether the NULLs leave every value valid. The
# pages' count does not enter: nothing waits per page.
BOUNDS = {("i64", "dictionary"): 5, ("f64", "plain"): 5, ("i32", "plain"): 5, ("d", "dictionary"): 5,
          ("i64", "delta"): 5, ("f64", "byte_stream_split"): 4,
          # strings: their values go to the host as the column's dictionary, by design
          ("s", "delta"): 14, ("sh", "delta"): 8}


@pytest.mark.parametrize("column,scheme", sorted(BOUNDS))
def test_waits_per_decoded_column(tmp_path, waits, column, scheme):
    path = write_matrix(tmp_path / "m.parquet", _matrix_table(), "snappy", scheme, "1.0")
    md = pq.read_metadata(path)
    f = md.schema.to_arrow_schema().field(column)
    chunks, _ = fetch_chunks(str(path), md, list(range(md.num_row_groups)), [column])
    spec = column_spec(md, column, f.type, from_arrow(f.type))
    n = waits(lambda: ColumnPages(chunks[column], spec).decode(torch.device("cpu")))
    assert n <= BOUNDS[column, scheme], f"{n} waits decoding {column} ({scheme})"
