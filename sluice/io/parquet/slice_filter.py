"""The rows of a scan's slice that survive its pushed predicate and the runtime filters.

Every scan mode filters with the same rules (so every mode yields the same rows); only where
and when differs (:mod:`sluice.io.parquet.scan_modes`): the I/O thread on the host, the I/O
thread on the device, or the consumer. The filters are found as positions before any column
is taken, so each column is taken once.
"""

from __future__ import annotations

import torch

from sluice.catalog import RowGroup
from sluice.chunk import Chunk, Column
from sluice.expr.evaluate import predicate_positions
from sluice.kernels.buffers import positions


class SliceFilter:
    """A scan's predicate (over the file's column names; None: none) and the runtime filters
    joins publish while it runs (sluice.exec.runtime_filter), applied to one slice's columns."""

    def __init__(self, predicate, pred_columns: list[str], runtime: list, device: torch.device,
                 selective: bool) -> None:
        self.predicate = predicate
        self.pred_columns = pred_columns  # the columns the predicate reads
        self.runtime = runtime
        self.device = device
        self.selective = selective  # the selective_filters switch (predicate_positions)

    def excluded(self, rg: RowGroup) -> bool:
        """Whether a ready runtime filter's key range rules out every row of ``rg``."""
        for rf in self.runtime:
            if rf.ready and rf.excludes_range(*rg.stats.get(rf.column, (None, None))):
                rf.groups_skipped += 1
                rf.bytes_skipped += rg.nbytes
                return True
        return False

    def probing(self, task: list[RowGroup]) -> list:
        """The runtime filters worth probing ``task``'s rows with: not one that holds every key
        of each row group's statistics range (it could remove only NULLs, which its join drops:
        TPC-DS q99's dimensions joined whole)."""
        return [rf for rf in self.runtime
                if not all(rf.covers(*rg.stats.get(rf.column, (None, None))) for rg in task)]

    def survivors(self, cols: dict[str, Column], n: int, filters: list) -> torch.Tensor | None:
        """The positions of the rows of ``cols`` the predicate keeps and then ``filters`` let
        through (None: all of them), found before any column is taken: taking every column
        after the predicate and again after each filter cost as much as decoding them (TPC-H
        q03); the caller takes each column once."""
        idx = None
        if self.predicate is not None:
            idx = predicate_positions(self.predicate, Chunk(cols, n, home=self.device), self.selective)
            if int(idx.numel()) == n:
                idx = None
        return self.runtime_keep(cols, n, filters, start=idx)

    def runtime_keep(self, cols: dict[str, Column], n: int, filters: list | None = None,
                     start: torch.Tensor | None = None) -> torch.Tensor | None:
        """The positions of the rows of ``cols`` the active runtime filters let through (None:
        all of them); with ``start`` (positions), only those rows are considered and the
        result is a subset of them (``start`` itself when no filter is active).

        The filters run one after another on the survivors of the previous ones, the one that
        has removed the largest share so far first: with three filters of SSB Q3.1 that each
        saw every row, the Bloom probes cost more than the join probes they saved."""
        active = [rf for rf in (self.runtime if filters is None else filters) if rf.active and rf.column in cols]
        if not active:
            return start
        active.sort(key=lambda rf: -(rf.rows_removed / rf.rows_in if rf.rows_in else 0.5))
        keep = start  # positions of the rows still in
        if keep is not None and keep.numel() == 0:
            return keep
        for rf in active:
            key = cols[rf.column]
            if keep is not None:
                key = key.take(keep)
            m_rows = n if keep is None else int(keep.numel())
            passed = positions(rf.mask(key, m_rows))
            rf.count(m_rows, int(passed.numel()))
            if passed.numel() == m_rows:
                continue  # every row passed: positions unchanged
            keep = passed if keep is None else keep.index_select(0, passed)
            if keep.numel() == 0:
                break
        return keep
