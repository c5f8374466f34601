"""ASOF JOIN on 2 local ranks equals DuckDB: both sides hashed on the equality keys
(``broadcast_bytes=0``) or the right side broadcast; without equality keys the right side
broadcast, or both sides gathered to rank 0 for RIGHT / FULL; spilled in 3-row chunks too.
One job per case answers every query of tests/sql/test_asof_join.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ranks import check_on_ranks

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_asof_join import QUERIES, write_asof_tables  # noqa: E402

CASES = {
    "2 ranks": {},
    "2 ranks partitioned, spilled in 3-row chunks": {"broadcast_bytes": 0, "force_spill": True, "chunk_rows": 3},
}


@pytest.fixture(scope="module")
def asof_spread(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("asof_ranks")
    write_asof_tables(root, row_group_size=20)  # every rank scans a share of a and b
    return root


@pytest.mark.parametrize("case", list(CASES))
def test_asof_on_ranks(case, asof_spread):
    check_on_ranks(asof_spread, QUERIES, 2, CASES[case])
