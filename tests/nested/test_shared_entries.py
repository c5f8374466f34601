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


def test_concat_of_rows_sharing_one_entry_of_large_values_keeps_only_that_entry():
    """Pages read back from a spill each bring their own entries: a page's rows share one entry
    of values far larger than it (64 entries of 1,000 here); concatenating such pieces once
    copied each row's list out (rows x list length), now the entry is cut out once per piece."""
    child = Column(torch.arange(64_000, dtype=torch.int64), INT64)
    values = NestedValues((child,), torch.arange(0, 64_001, 1000, dtype=torch.int64), 64)
    pieces = [Column(torch.full((40,), k, dtype=torch.int64), list_of(INT64), None, values) for k in range(0, 64, 8)]
    out = concat_columns(pieces)
    assert len(out) == 320
    assert len(out.dictionary.children[0]) == 8 * 1000  # not 320 x 1000
    rv = row_values(out.take(torch.tensor([0, 39, 40, 319])))
    assert rv.children[0].data[rv.offsets[:-1]].tolist() == [0, 0, 8000, 56000]
    assert (rv.offsets[1:] - rv.offsets[:-1]).tolist() == [1000] * 4


def test_concat_of_values_whose_children_do_not_start_at_zero():
    """Values whose offsets start past 0 (a slice of an Arrow list) are gathered, not appended
    as they are: the offsets of the whole are one running sum."""
    child = Column(torch.arange(10, dtype=torch.int64), INT64)
    sliced = NestedValues((child,), torch.tensor([4, 6, 9], dtype=torch.int64), 2)
    a = Column(torch.tensor([0, 1, 1, 1, 0, 1]), list_of(INT64), None, sliced)
    out = concat_columns([a, a])
    rv = row_values(out)
    got = [rv.children[0].data[s:e].tolist() for s, e in zip(rv.offsets[:-1].tolist(), rv.offsets[1:].tolist())]
    assert got == [[4, 5], [6, 7, 8], [6, 7, 8], [6, 7, 8], [4, 5], [6, 7, 8]] * 2


def test_rows_of_their_own_entries_are_not_sorted(monkeypatch):
    """A column as read (codes 0..n-1, NULL rows among them) or filtered (codes rising) shares
    no entry: found in one pass, without ``torch.unique``'s sort; rows pointing at one entry
    still are found shared."""
    from sluice.chunk import shared_entries
    child = Column(torch.arange(30_000, dtype=torch.int64), INT64)
    values = NestedValues((child,), torch.arange(0, 30_001, 3, dtype=torch.int64), 10_000)
    valid = torch.arange(10_000) % 7 != 0
    as_read = Column(torch.arange(10_000, dtype=torch.int64), list_of(INT64), valid, values)
    filtered = Column(torch.arange(0, 10_000, 2, dtype=torch.int64), list_of(INT64), None, values)
    shared = Column(torch.arange(10_000, dtype=torch.int64) % 50, list_of(INT64), valid, values)
    real_unique = torch.unique

    def unique(*a, **k):
        raise AssertionError("sorted the codes of rows with entries of their own")
    monkeypatch.setattr(torch, "unique", unique)
    assert shared_entries(as_read) is None and shared_entries(filtered) is None
    monkeypatch.setattr(torch, "unique", real_unique)
    entries, where = shared_entries(shared)
    assert entries.tolist() == list(range(50))
    assert where[valid].tolist() == (torch.arange(10_000) % 50)[valid].tolist()  # (a NULL row's: any)
