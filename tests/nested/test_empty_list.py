"""The empty list constant ``[]`` is DuckDB's ``"NULL"[]``: it takes the type of what it meets --
the other branch of a CASE / COALESCE, the other rows of VALUES or a UNION, a cast, the other
side of a comparison or LIST_CONCAT, a LIST_CONTAINS needle -- and alone it is an empty list
(``list_sum([])`` NULL). Checked against DuckDB over the events table as a user runs it, in 7-row
chunks and spilled (the ``con`` fixture); a MAP built from ``[]`` keys is refused by name."""

from __future__ import annotations

import pytest

import sluice
from sluice.datagen.events import generate_events
from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_answer

QUERIES = [
    "select [] as a, len([]), [] is null, [[]], [[], [1]], []::INT[], [][1], [][1:2]",
    "select coalesce([], [1]), coalesce(null, []), case when false then ['a'] else [] end",
    "select event_id, case when event_id % 2 = 0 then [] else tags end, coalesce(scores, []) "
    "from events order by 1",
    "select event_id, scores = [], [] < scores, tags <> [], [[]] = [[1]], [[]] < [[1]] from events order by 1",
    "select event_id, list_concat([], [1.5]), [] || [1], list_concat(tags, []), list_concat([], []) "
    "from events order by 1",
    "select list_contains([], 1), list_sort([]), list_distinct([]), list_sum([]), list_avg([]), list_max([])",
    "select * from (values ([1, 2]), ([]), ([3])) t(l) order by all",
    "select 1 as r, [1] as a union select 4 as r, [] as a order by r",
    "select * from (select [1, 2, 3] union all select []::INT[] union all select [4, null]) t(l), "
    "unnest(l) t2(k) order by k nulls last",
    "select tags from events except select [] order by 1 nulls first",
    "select [] as l, count(*) from events group by l",
    "select count(*) from events where scores = [] or tags = []",
    "select list_transform([], lambda x: x + 1), list_reduce([], lambda a, x: a + x, 0)",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events_empty_list")
    generate_events(400, d, seed=3, row_group_rows=100)
    return d


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i:02d}" for i in range(len(QUERIES))])
def test_empty_list_answers_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    compare(ours, duckdb_answer(duck, sql), list(range(ours.num_columns)) if "order by" in sql else None)


def test_a_map_of_empty_keys_is_refused(events_dir):
    with pytest.raises(UnsupportedError, match="MAP with keys of no type"):
        sluice.connect(str(events_dir), device="cpu").sql("select map([], [])").to_arrow()
