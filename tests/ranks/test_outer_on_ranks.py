"""Outer / SEMI / ANTI joins whose ON holds subqueries reading both sides (row ids over a
``Shared`` numbering: ``sluice.sql.outer_on``) and correlated IN as a value, on 2 local ranks,
equal DuckDB: each side's rows numbered once for every rank, the pairs and the unmatched rows
found across ranks; partitioned and spilled in 3-row chunks too. One job per case answers the
queries of tests/sql/test_outer_join_on_subqueries.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ranks import check_on_ranks

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_outer_join_on_subqueries import CORRELATED_IN, QUERIES, SEMI_ANTI, write_tables  # noqa: E402

CASES = {
    "2 ranks": {},
    "2 ranks partitioned, spilled in 3-row chunks": {"broadcast_bytes": 0, "force_spill": True, "chunk_rows": 3},
}


@pytest.fixture(scope="module")
def spread(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("outer_on_ranks")
    write_tables(root, row_group_size=1)  # every rank scans a share of every table
    return root


@pytest.mark.parametrize("case", list(CASES))
def test_outer_on_on_ranks(case, spread):
    check_on_ranks(spread, {**QUERIES, **SEMI_ANTI, **CORRELATED_IN}, 2, CASES[case])
