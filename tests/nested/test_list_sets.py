"""LIST_HAS_ANY / LIST_HAS_ALL (also ARRAY_HAS_ANY / ARRAY_HAS_ALL, ``&&``, ``@>``, ``<@``) and
the list of NULLs ``[NULL]`` -- DuckDB's ``"NULL"[]``, which meets any list type as ``[]`` does
(compared with a BIGINT[], unioned with an INTEGER[]) -- answer as DuckDB does: NULL elements take
no part in the set tests, a NULL list gives NULL, an empty second list is held by any list, the
elements meet at their common type (lists of lists and structs too). Over the events table as a
user runs it, in 7-row chunks and spilled (the ``con`` fixture)."""

from __future__ import annotations

import pytest

from sluice.datagen.events import generate_events
from sluice.testing.oracle import compare, duckdb_answer

QUERIES = [
    "select list_has_any([1, 2], [2, 3]), list_has_any([1, 2], [3]), list_has_any([1, NULL], [NULL]), "
    "list_has_any(NULL, [1]), list_has_any([1], NULL), list_has_any([], [1]), list_has_any([1], []), "
    "list_has_any([], []), list_has_any(NULL, NULL), list_has_any([NULL], [])",
    "select list_has_all([1, 2], [2]), list_has_all([1, 2], [2, 3]), list_has_all([1, NULL], [NULL]), "
    "list_has_all([1], []), list_has_all([], []), list_has_all(NULL, [1]), list_has_all([1], [NULL]), "
    "list_has_all([1, 2], [1, NULL]), list_has_all([], [NULL]), list_has_all([NULL], [NULL])",
    "select [1, 2] && [2], [1, 2] @> [2], [2] <@ [1, 2], [2, 5] <@ [1, 2], [1, 2] @> NULL, "
    "array_has_any([1], [1]), array_has_all([1], [2])",
    "select list_has_any([1, 2], [2.5]), list_has_any([1.0, 2], [1]), list_has_any([1::INT], [1::BIGINT]), "
    "list_has_any([-0.0], [0.0]), list_has_all(['a', 'b', 'b'], ['b', 'a', NULL]), "
    "list_has_any([date '2020-01-01'], [date '2020-01-01'])",
    "select list_has_all([[1], [2, NULL]], [[2, NULL]]), list_has_all([[1], [2, NULL]], [[2]]), "
    "list_has_any([{'a': 1}], [{'a': 1}, NULL]), list_has_any([[NULL]], [[NULL]]), list_has_any([[]], [[]])",
    "select event_id, list_has_any(tags, ['sale', 'red']), list_has_all(tags, ['red']), tags && tags, "
    "scores @> [1, 2], [500] <@ scores, list_has_all(scores, []), list_has_any(scores, [NULL]) "
    "from events order by 1",
    "select a.event_id, list_has_any(a.tags, b.tags), list_has_all(a.scores, b.scores) from events a "
    "join events b on b.event_id = a.event_id + 1 order by 1",
    "select count(*) from events where list_has_any(tags, ['sale']) and not list_has_all(tags, ['sale', 'red'])",
    "select [NULL] = [1::BIGINT], [NULL] = [NULL], [NULL] < [1], [NULL] = [NULL::VARCHAR], [[NULL]] = [[1]], "
    "[NULL] || [1], list_concat([NULL], [1.5]), coalesce([NULL], [1.5]), [NULL] in ([1], [2]), len([NULL]), "
    "[NULL, NULL] as b",
    "select [NULL] as l union all select [1] order by l nulls first",
    "select [1.5] as l union all select [NULL] union all select [NULL, 2] order by l nulls first",
    "select ['a'] as l union all select [NULL] order by l",
    "select event_id, scores = [NULL], [NULL] < scores, coalesce(scores, [NULL]) from events order by 1",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events_list_sets")
    generate_events(400, d, seed=8, row_group_rows=100)
    return d


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i:02d}" for i in range(len(QUERIES))])
def test_list_sets_answer_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    compare(ours, duckdb_answer(duck, sql), list(range(ours.num_columns)) if "order by" in sql else None)
