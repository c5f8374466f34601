"""WITH RECURSIVE ... USING KEY and recurring.<name> on 2 local ranks equal DuckDB: the
recursion runs on rank 0 over every row (its scans of nation shared by the ranks), in 2-row
chunks with spilling forced too. One job per case answers every query of
tests/sql/test_recursive_key.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ranks import check_on_ranks

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_recursive_key import QUERIES  # noqa: E402

CASES = {
    "2 ranks": {},
    "2 ranks, spilled in 2-row chunks": {"force_spill": True, "chunk_rows": 2},
}


@pytest.mark.parametrize("case", list(CASES))
def test_recursive_key_on_ranks(case, tpch_dir):
    check_on_ranks(tpch_dir, QUERIES, 2, CASES[case])
