"""Rows sharing a nested entry cross ranks once per entry, not once per row (issue 51): after a
join hands every probe row its group's list, the exchange on another key sent each row's list by
value -- 100 GB asked for at a million events on 2 ranks, 29 MB here (6,000 events, lists of
1,200). Both wires, spilled too (received pages with nested columns spill whole at the first
level); the answers are DuckDB's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sluice.datagen.events import generate_events
from sluice.launch import run_job
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns

sys.path.insert(0, str(Path(__file__).parents[1] / "nested"))
from test_shared_queries import QUERIES  # noqa: E402

NAMES = ["join_carries_a_groups_list", "ordered_lists_of_structs_and_lists", "unnest_of_a_shared_list"]
#: What every exchange of a query may send, all ranks together (by value: 29 MB for the join).
SENT_BOUND = 4 << 20


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("shared_events_ranks")
    generate_events(6000, d, seed=5, row_group_rows=1000)
    return d


@pytest.mark.parametrize("settings", [
    {"exchange_wire": "arrow", "force_spill": True},
    {"exchange_wire": "tensor"},
], ids=["arrow wire spilled", "tensor wire"])
def test_shared_lists_cross_ranks_once(events_dir, settings):
    queries = [QUERIES[n] for n in NAMES]
    job = {"kind": "queries", "data": str(events_dir), "queries": queries, "analyze": True,
           "settings": {"device": "cpu", "dist_timeout_s": 60, "broadcast_bytes": 0, "chunk_rows": 512, **settings}}
    status: dict = {}
    results = run_job(2, job, status=status)
    duck = duckdb_connect(events_dir)
    for name, sql, ours, ranks in zip(NAMES, queries, results, status["rank_stats"]):
        compare(ours, duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
        sent = sum(sum(e["bytes_sent"]) for r in ranks for e in r["exchanges"])
        assert 0 < sent < SENT_BOUND, (name, sent)
