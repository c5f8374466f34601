"""The device decoder's host synchronisations, counted on the CPU (issue 29 item 6, issue 50):
each call that would make the host wait for a GPU (a tensor's item, int, bool, float, tolist,
cpu) while decoding a column. The kernels are launched with every size taken from the page
headers, so a column's decode waits for nothing; the error codes the kernels set are read once
per read task (:func:`check`: one wait). A GPU run measures the real thing (``bench/syncs.py``);
this keeps the count from creeping back. Triton's interpreter (which runs the kernels here)
moves tensors itself: its launches are not counted."""

from __future__ import annotations

import collections

import pyarrow.parquet as pq
import pytest
import torch

from sluice.io.parquet.decode.column import column_spec
from sluice.io.parquet.decode.kernel_column import KernelPages, check
from sluice.io.parquet.fetch import fetch_chunks
from sluice.types import from_arrow
from decode.test_device_decoder import _matrix_table, write_matrix

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
    if not torch.cuda.is_available():
        from triton.runtime import interpreter
        launch = interpreter.GridExecutor.__call__

        def uncounted(self, *a, **k):
            was, on[0] = on[0], False
            try:
                return launch(self, *a, **k)
            finally:
                on[0] = was
        monkeypatch.setattr(interpreter.GridExecutor, "__call__", uncounted)

    def run(fn):
        counts.clear()
        on[0] = True
        try:
            out = fn()
        finally:
            on[0] = False
        return sum(counts.values()), out
    return run


@pytest.mark.parametrize("column,scheme", [("i64", "dictionary"), ("u32", "plain"), ("tsms", "dictionary"),
                                           ("s", "dictionary"), ("decw", "byte_stream_split"), ("i8", "delta")])
def test_no_wait_while_decoding_and_one_for_the_errors(tmp_path, waits, column, scheme):
    path = write_matrix(tmp_path / "m.parquet", _matrix_table(), "snappy", scheme, "1.0")
    md = pq.read_metadata(path)
    f = md.schema.to_arrow_schema().field(column)
    chunks, _ = fetch_chunks(str(path), md, list(range(md.num_row_groups)), [column])
    spec = column_spec(md, column, f.type, from_arrow(f.type))
    n, (col, errs) = waits(lambda: KernelPages(chunks[column], spec).decode(torch.device("cpu")))
    # Millisecond timestamps widen to microseconds with one range check of the finite values
    # (kernels/checks.fail_if: it waits on a CPU, deferred to the query's end on a GPU); DuckDB's
    # infinities are carried over by their mask, with no wait.
    assert n == (1 if column == "tsms" else 0), f"{n} waits decoding {column} ({scheme})"
    n, _ = waits(lambda: check(errs))
    assert n == 1
