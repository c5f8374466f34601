"""MAP constructors -- ``map(keys, values)``, ``map {'k': v}``, ``map_from_entries`` -- and
``map_entries`` answer as DuckDB does on the seeded ``events`` table (NULL lists give NULL maps,
empty lists empty maps), in 7-row chunks and spilled; NULL, repeated or misaligned keys are
DuckDB's errors, an empty ``map()`` is refused (its types are unknown)."""

from __future__ import annotations

import duckdb
import pytest

import sluice
from sluice.datagen.events import generate_events
from sluice.errors import ExecutionError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_answer


QUERIES = [
    "select event_id, map(map_keys(attrs), map_values(attrs)), map_entries(attrs) from events order by 1",
    "select event_id, map_from_entries(map_entries(attrs)) = attrs, map(tags, list_transform(tags, lambda t, i: i)) "
    "from events where len(list_distinct(tags)) = len(tags) order by 1",
    "select event_id, map {'id': event_id, 'n': len(tags)}, map(['k'], [kind])['k'] from events order by 1",
    "select map(map_keys(attrs), map_values(attrs)) as m, count(*) from events group by m",
    "select event_id, cardinality(map_from_entries(list_transform(scores, lambda s, i: {'k': i, 'v': s}))) "
    "from events order by 1",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    generate_events(300, d, seed=9, row_group_rows=120)
    return d


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_maps_answer_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    compare(ours, duckdb_answer(duck, sql), list(range(ours.num_columns)) if "order by 1" in sql else None)


@pytest.mark.parametrize("sql", [
    "select map([1, 1], [2, 3])", "select map([1, null], [2, 3])", "select map([1, 2], [2])",
    "select map_from_entries([{'k': 1, 'v': 2}, {'k': 1, 'v': 3}])", "select map_from_entries([{'k': 1, 'v': 2}, null])",
    "select map(tags, scores) from events",
])
def test_key_errors_as_duckdb(sql, events_dir, duck):
    with pytest.raises(duckdb.Error):
        duck.sql(sql).fetchall()
    with pytest.raises(ExecutionError):
        sluice.connect(str(events_dir), device="cpu").sql(sql).to_arrow()


def test_empty_map_refused(events_dir):
    with pytest.raises(UnsupportedError, match="empty MAP"):
        sluice.connect(str(events_dir), device="cpu").sql("select map()").to_arrow()
