"""Table and row-group facts as plain data: what a table is (its files, schema, row groups and
their statistics) for the layers that plan over it. Plan nodes and operators hold these; the
I/O layer (:mod:`sluice.io.parquet.metadata`, :mod:`sluice.io.csv`) fills them in from files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from sluice.types import LType


@dataclass(frozen=True, slots=True)
class RowGroup:
    """One row group of one file, with per-column (min, max) statistics where present."""

    path: str
    index: int
    num_rows: int
    stats: dict[str, tuple[object, object]]
    nbytes: int
    #: A hash of the row group's footer entries -- rows, each column chunk's compressed and
    #: uncompressed sizes, statistics and NULL counts: ranks that share out row groups compare
    #: it, so two copies of a table that differ in content are refused rather than mixed (a
    #: copy whose footers match in all of these is not told apart: no data is read to compare).
    digest: str = ""
    #: The rank whose own files hold this row group (``rank_data=local``: only that rank can
    #: read it, :mod:`sluice.ranks.local_data`); -1: every rank reads the same files.
    rank: int = -1


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    files: tuple[str, ...]
    arrow_schema: pa.Schema
    types: dict[str, LType]
    row_groups: tuple[RowGroup, ...]
    #: Columns of a type sluice cannot process (binary): name -> type.
    #: The others stay queryable; naming one of these is refused.
    unsupported: dict[str, str] = field(default_factory=dict)
    #: ``parquet`` or ``csv`` (sluice.io.csv; read by its own scan, one pseudo row group a file).
    format: str = "parquet"
    #: Reader options as (name, value) pairs (CSV: header, delim).
    options: tuple = ()
    #: Hive partition columns (``key=value`` folders): name -> {file path: value}; the
    #: columns are in ``types`` and ``arrow_schema`` but not in the files.
    partitions: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def rank_local(self) -> bool:
        """Whether each rank's own files hold part of the table (``rank_data=local``)."""
        return any(g.rank >= 0 for g in self.row_groups)

    @property
    def num_rows(self) -> int:
        return sum(rg.num_rows for rg in self.row_groups)
