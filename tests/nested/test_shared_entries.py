"""Rows that share one nested entry (a window's list per partition: every row of the partition
points at it) stay shared through concatenation -- a Sort's gather of its chunks once copied the
entry out per row, a million rows times a 200,000-element list (issue 51, the 1M-event bench)."""

import torch

from sluice.chunk import Column, NestedValues, concat_columns, row_values
from sluice.types import INT64, list_of


def _shared(rows: int, elements: int, first: int) -> Column:
    child = Column(torch.arange(first, first + elements, dtype=torch.int64), INT64)
    values = NestedValues((child,), torch.tensor([0, elements], dtype=torch.int64), 1)
    return Column(torch.zeros(rows, dtype=torch.int64), list_of(INT64), None, values)


def test_concat_keeps_a_shared_entry_shared():
    a, b = _shared(5000, 20000, 0), _shared(3000, 10000, 7)
    out = concat_columns([a, b])
    assert len(out) == 8000
    assert len(out.dictionary.children[0]) == 30000  # not 5000 * 20000 + 3000 * 10000
    rv = row_values(out.take(torch.tensor([0, 4999, 5000, 7999])))
    sizes = (rv.offsets[1:] - rv.offsets[:-1]).tolist()
    assert sizes == [20000, 20000, 10000, 10000]
    starts = rv.children[0].data[rv.offsets[:-1]].tolist()
    assert starts == [0, 0, 7, 7]


def test_concat_gathers_rows_that_use_few_child_rows():
    """A column using a little of large values (left after a filter) is gathered to what it
    uses; a NULL row uses nothing."""
    child = Column(torch.arange(20000, dtype=torch.int64), INT64)
    values = NestedValues((child,), torch.tensor([0, 3, 20000], dtype=torch.int64), 2)
    few = Column(torch.tensor([0, 1]), list_of(INT64), torch.tensor([True, False]), values)
    out = concat_columns([few, few])
    assert len(out.dictionary.children[0]) == 6
    assert out.valid.tolist() == [True, False, True, False]
    assert row_values(out).children[0].data.tolist() == [0, 1, 2, 0, 1, 2]
