"""ORDER BY inside aggregate calls, FILTER on holistic aggregates and FIRST_VALUE (x ORDER BY k)
on 2 local ranks equal DuckDB (each rank scans a share of the row groups; spilled in 3-row
chunks too). One job per case answers every query of tests/sql/test_ordered_aggregates.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ranks import check_on_ranks

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_ordered_aggregates import QUERIES, write_tables  # noqa: E402

CASES = {
    "2 ranks": {},
    "2 ranks spilled in 3-row chunks": {"force_spill": True, "chunk_rows": 3},
}


@pytest.fixture(scope="module")
def spread(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ordered_aggregates_ranks")
    write_tables(root, row_group_size=3)
    return root


@pytest.mark.parametrize("case", list(CASES))
def test_ordered_aggregates_on_ranks(case, spread):
    # (no query has a final ORDER BY: their ORDER BYs are inside calls, so rows compare as sets)
    check_on_ranks(spread, {f"q{i}": q for i, q in enumerate(QUERIES)}, 2, CASES[case], order=lambda sql, cols: None)
