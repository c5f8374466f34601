"""Nested columns across ranks (issue 51, "with 2-3 ranks"): LIST / STRUCT / MAP values ride
through every exchange -- hashed joins and aggregates, broadcasts, range-sorted ORDER BY,
gathers -- over the Arrow wire and the tensor wire, spilled too, and answer as DuckDB does on
the seeded events table (NULL, empty and missing-key edges at every level), its row groups
shared out between the ranks."""

from __future__ import annotations

import pytest
from ranks import check_on_ranks

from sluice.datagen.events import generate_events

QUERIES = {
    "read": "select event_id, user, tags, items, attrs from events order by event_id",
    "fields_grouped": "select kind, count(user.address), sum(len(tags)), max(list_sum(scores)), "
                      "min(user.address.zip) from events group by kind order by kind",
    "join_carries_nested": "select a.event_id, a.tags, b.attrs, b.items[1].sku from events a join events b "
                           "on a.event_id = b.event_id + 1 order by a.event_id",
    "join_on_a_field": "select a.event_id, b.event_id, b.user.name from events a join events b "
                       "on a.user.id = b.user.id and a.event_id < b.event_id order by 1, 2",
    "unnest": "select e.event_id, u.tag from events e, unnest(e.tags) as u(tag) order by 1, 2",
    "unnest_structs": "select u.it.sku, sum(u.it.qty) q from events, unnest(items) as u(it) group by 1 order by 1",
    "sorted_by_a_field": "select event_id, user.name, scores from events order by user.name nulls first, event_id",
    "map_values_grouped": "select attrs['k1'] k, count(*) c from events group by 1 order by 1 nulls first",
    "lists_two_orders": "select kind, len(list(event_id order by event_id)), list(tags order by event_id desc)[1] "
                        "from events group by kind order by kind",
    "empty_list_typed": "select event_id, case when event_id % 3 = 0 then [] else tags end, scores = [] "
                        "from events order by event_id",
    "distinct_fields": "select count(distinct user.name), count(distinct tags[1]) from events",
}


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events_ranks")
    generate_events(1200, d, seed=11, row_group_rows=150)
    return d


@pytest.mark.parametrize("ranks,settings", [
    (2, {"range_sort_rows": 0}),
    (3, {"exchange_wire": "tensor", "broadcast_bytes": 0, "chunk_rows": 100}),
    (2, {"force_spill": True, "chunk_rows": 64, "broadcast_bytes": 0}),
], ids=["2 ranks", "3 ranks tensor wire", "2 ranks spilled"])
def test_nested_on_ranks(events_dir, ranks, settings):
    check_on_ranks(events_dir, QUERIES, ranks, settings)
