"""The nested column form itself: codes into NestedValues survive every way rows move -- take,
filter, slice, concatenation, spill pages, the exchange's tensor wire -- and a nested column
rebuilt by code that does not know its values is refused, never mishandled."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sluice.arrow import arrow_to_column, batch_to_page, column_to_arrow, page_to_batch
from sluice.chunk import Chunk, Column, concat_columns
from sluice.datagen.events import events_table
from sluice.errors import UnsupportedError
from sluice.ranks.tensor_wire import pack, unpack

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def events() -> pa.Table:
    return events_table(300, seed=3)


def _columns(table: pa.Table) -> dict[str, Column]:
    return {n: arrow_to_column(table.column(n)) for n in table.column_names}


def test_arrow_round_trip(events):
    for name, col in _columns(events).items():
        assert column_to_arrow(col).to_pylist() == events.column(name).to_pylist(), name


def test_take_filter_slice_concat(events):
    cols = _columns(events)
    idx = torch.tensor([5, 0, 299, 5, 17], dtype=torch.int64)
    mask = torch.from_numpy(np.arange(300) % 3 == 1)
    for name, col in cols.items():
        want = events.column(name).to_pylist()
        assert column_to_arrow(col.take(idx)).to_pylist() == [want[i] for i in idx.tolist()], name
        assert column_to_arrow(col.filter(mask)).to_pylist() == [w for w, m in zip(want, mask.tolist()) if m], name
        parts = [Chunk({name: col}, 300).slice(a, b).columns[name] for a, b in ((0, 100), (100, 101), (101, 300))]
        assert column_to_arrow(concat_columns(parts)).to_pylist() == want, name
        assert column_to_arrow(concat_columns([col.take(idx), col.filter(mask)])).to_pylist() == \
            [want[i] for i in idx.tolist()] + [w for w, m in zip(want, mask.tolist()) if m], name


def test_spill_page_and_tensor_wire_round_trip(events):
    cols = _columns(events)
    page = Chunk(cols, 300)
    back = batch_to_page(page_to_batch(page), CPU)
    for name in cols:
        assert back.columns[name].type == cols[name].type
        assert column_to_arrow(back.columns[name]).to_pylist() == events.column(name).to_pylist(), name
    packed = pack(page)
    host = torch.from_numpy(np.asarray(packed.host))
    dev = torch.cat(packed.pieces) if packed.pieces else torch.zeros(0, dtype=torch.uint8)
    (got,) = unpack(host, dev, CPU)
    for name in cols:
        assert column_to_arrow(got.columns[name]).to_pylist() == events.column(name).to_pylist(), name


def test_a_nested_column_without_its_values_is_refused(events):
    col = _columns(events)["tags"]
    with pytest.raises(UnsupportedError, match="does not handle nested values"):
        Column(col.data, col.type, col.valid)  # as code unaware of nested columns rebuilds one


def test_datagen_events(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sluice", "datagen", "events", "--rows", "50", "--seed", "2",
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t = pq.read_table(tmp_path / "events.parquet")
    assert t.num_rows == 50 and t.equals(events_table(50, seed=2))
    again = subprocess.run([sys.executable, "-m", "sluice", "datagen", "events", "--out", str(tmp_path)],
                           capture_output=True, text=True)
    assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1  # no --force: refused
