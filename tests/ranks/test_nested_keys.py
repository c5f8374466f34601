"""Nested values as keys across ranks: grouped, distinct, sorted, joined, intersected and
aggregated into lists on 2 ranks (hash exchanges partition by the values' order keys, so equal
lists and structs meet on one rank whatever their codes), equal to DuckDB."""

from __future__ import annotations

import re

import pytest

from sluice.datagen.events import generate_events
from sluice.launch import run_job
from sluice.testing.oracle import compare, duckdb_connect

QUERIES = [
    "select tags, count(*), sum(event_id) from events group by tags",
    "select distinct user from events",
    "select event_id, tags from events order by tags desc, event_id",
    "select a.event_id, b.event_id from events a join events b on a.user = b.user and a.event_id < b.event_id",
    "select kind, list(event_id order by event_id), array_agg(distinct tags order by tags) from events group by kind",
    "select attrs from events intersect select attrs from events where event_id % 2 = 0",
    "select count(distinct scores) from events",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    generate_events(400, d, seed=5, row_group_rows=50)
    return d


def test_nested_keys_across_ranks(events_dir):
    job = {"kind": "queries", "data": str(events_dir), "queries": QUERIES,
           "settings": {"device": "cpu", "broadcast_bytes": 0, "chunk_rows": 16, "dist_timeout_s": 60}}
    duck = duckdb_connect(events_dir)
    for sql, ours in zip(QUERIES, run_job(2, job)):
        ordered = re.search(r"order by[^)]*$", sql) is not None
        compare(ours, duck.sql(sql).to_arrow_table(), list(range(ours.num_columns)) if ordered else None)
