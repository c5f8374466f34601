"""Lambda functions over lists -- LIST_TRANSFORM, LIST_FILTER, LIST_REDUCE (and their other
names), with the element's position, outer columns captured, nested lambdas, and list
comprehensions -- answer as DuckDB does on the seeded ``events`` table (NULL lists, NULL
elements, empty lists), in 7-row chunks and with every buffer spilled; DuckDB's errors are
errors (an empty list reduced without an initial value, an overflow inside a body)."""

from __future__ import annotations

import re

import duckdb
import pytest

import sluice
from sluice.datagen.events import generate_events
from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_answer

ROWS = 400


QUERIES = [
    # a GROUP BY key's expression read inside a lambda above the aggregation (was "kind must
    # appear in GROUP BY"), also inside a nested lambda and in FILTER / REDUCE
    "select length(kind) as k, list_transform([1, 2], lambda x: x + length(kind)), "
    "list_filter([1, 2, 3, 4, 5], lambda x: x < length(kind)), "
    "list_reduce([1, 2], lambda a, x: a + x * length(kind), 0) from events group by length(kind) order by 1",
    "select kind || 'x' as k, list_transform([1, 2], lambda x: list_transform([3], lambda y: x + y || (kind || 'x'))) "
    "from events group by kind || 'x' order by 1",
    # transform: element, position, outer columns, strings, structs, nested results
    "select event_id, list_transform(scores, lambda x: x * 2 + event_id) from events order by 1",
    "select event_id, list_transform(scores, lambda x, i: x - i), array_transform(tags, lambda t, i: i) "
    "from events order by 1",
    "select event_id, list_transform(tags, lambda t: upper(t) || kind), list_apply(tags, lambda t: length(t)) "
    "from events order by 1",
    "select event_id, list_transform(items, lambda it: it.qty * it.price), "
    "array_apply(items, lambda it: {'s': it.sku, 'q': it.qty + 1}) from events order by 1",
    "select event_id, list_transform(scores, lambda x: [x, event_id]), "
    "list_transform(scores, lambda x: list_transform(tags, lambda t: length(t) + x)) from events order by 1",
    "select event_id, list_transform(scores, lambda x: case when x > 50 then 'hi' when x is null then null "
    "else 'lo' end) from events order by 1",
    "select event_id, list_transform(scores, lambda event_id: event_id + 1) from events order by 1",  # shadows
    # filter: NULL and numbers as conditions, positions, captured columns
    "select event_id, list_filter(scores, lambda x: x > 40), filter(tags, lambda t: t like '%e%') "
    "from events order by 1",
    "select event_id, list_filter(scores, lambda x, i: i % 2 = 1), array_filter(scores, lambda x: x % 3) "
    "from events order by 1",
    "select event_id, list_filter(items, lambda it: it.qty > event_id % 5), "
    "list_filter(tags, lambda t: t = kind or t is null) from events order by 1",
    "select event_id, len(list_filter(scores, lambda x: null)), list_filter(scores, lambda x: x is null) "
    "from events order by 1",
    # reduce: with and without an initial value, positions, types that widen
    "select event_id, list_reduce(scores, lambda a, x: a + x, 0), reduce(tags, lambda a, t: a || '-' || t, '') "
    "from events order by 1",
    "select event_id, list_reduce(scores, lambda a, x, i: a + x * i, event_id), "
    "array_reduce(list_filter(scores, lambda x: x is not null), lambda a, x: greatest(a, x), -1) from events order by 1",
    "select event_id, list_reduce(scores, lambda a, x: a + x + 0.5, 0) from events order by 1",
    # comprehensions
    "select event_id, [x * 2 for x in scores], [t for t in tags if t <> 'red'], "
    "[x for x, i in scores if i > 1] from events order by 1",
    # in WHERE, GROUP BY and aggregates
    "select kind, count(*), sum(list_reduce(scores, lambda a, x: a + coalesce(x, 0), 0)) from events "
    "where len(list_filter(tags, lambda t: t = 'red')) > 0 group by kind order by 1",
    "select list_transform(tags, lambda t: length(t)) as l, count(*) from events group by l",
    # LIST_REDUCE over decimals: DuckDB's result type (the body's, precision too) and values
    "select event_id, list_reduce(list_transform(items, lambda x: x.price), lambda a, x: a + x), "
    "list_reduce(list_transform(items, lambda x: x.price), lambda a, x: a + x, 0), "
    "list_reduce(list_transform(items, lambda x: x.price), lambda a, x: a * x) "
    "from events where len(items) > 0 order by 1",
]


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    generate_events(ROWS, d, seed=5, row_group_rows=150)
    return d


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i:02d}" for i in range(len(QUERIES))])
def test_lambdas_answer_as_duckdb(sql, con, duck):
    ours = con.sql(sql).to_arrow()
    ordered = re.search(r"order by 1$", sql) is not None
    compare(ours, duckdb_answer(duck, sql), list(range(ours.num_columns)) if ordered else None)


CONSTANTS = [
    "select list_transform([1, 2, 3], lambda x: x + 1), list_transform([1, null, 3], lambda x: x * 2)",
    "select list_filter([1, 2, null, 3], lambda x, i: i > 1), list_filter([1, 2], lambda x: 1)",
    "select list_reduce([1, 2, 3], lambda x, y: x + y), list_reduce([1], lambda x, y: x + y), "
    "list_reduce([1, null, 3], lambda x, y: x + y), list_reduce([1, 2, 3], lambda x, y, i: x + y * i)",
    "select list_reduce(['a', 'b'], lambda x, y: x || y), list_reduce([1, 2], lambda x, y: x + y + 0.5), "
    "list_reduce([1, 2], lambda x, y: x + y, 0.5), reduce([1, 2], lambda x, y: x + y)",
    "select [x + 1 for x in [1, 2, 3] if x > 1], [x * 2 for x, i in [1, 2, 3] if i > 1]",
    "select typeof(list_reduce([1.5::decimal(4,1), 2.25::decimal(4,1)], lambda a, x: a + x)), "
    "list_reduce([1.5::decimal(4,1), 2.25::decimal(4,1)], lambda a, x: a + x), "
    "typeof(list_reduce([1.5::decimal(4,1)], lambda a, x: a * x)), "
    "list_reduce([1.5::decimal(4,1), 2.5, 3.5], lambda a, x: a * x), "
    "typeof(list_reduce([1.5::decimal(4,1)], lambda a, x: a + x, 0)), "
    "typeof(list_reduce([1.5::decimal(4,1), 2.5], lambda a, x: a + x, 1.25)), "
    "typeof(list_reduce([1::decimal(3,1)], lambda a, x: a + x + x)), typeof(list_reduce([1::int], lambda a, x: a + x))",
    "select list_transform([1, 2], lambda x: list_transform([x, x + 1], lambda y: y * x)), "
    "list_transform([{'a': 1}], lambda x: x.a), list_filter([[1], [2, 3]], lambda x: len(x) > 1)",
]


@pytest.mark.parametrize("sql", CONSTANTS)
def test_constant_lambdas(sql, duck, events_dir):
    compare(sluice.connect(str(events_dir), device="cpu").sql(sql).to_arrow(), duckdb_answer(duck, sql))


@pytest.mark.parametrize("sql, error", [
    ("select list_reduce(list_filter(scores, lambda x: false), lambda a, x: a + x) from events", ExecutionError),
    ("select list_transform(scores, lambda x: x::tinyint * 100) from events", ExecutionError),
    ("select list_transform(scores, lambda x: (select 1)) from events", UnsupportedError),
    ("select list_transform(scores, lambda x, i, j: x) from events", PlanError),
    ("select list_transform(kind, lambda x: x) from events", PlanError),
    # a DECIMAL's precision inside a nested cast (equal types but for it: the cast was dropped)
    ("select list_transform(items, lambda s: s.price)::decimal(4,2)[] from events", ExecutionError),
    ("select {'a': 900.00}::struct(a decimal(4,2)) from events", ExecutionError),
    # LIST_REDUCE's steps beyond the result's DECIMAL precision (DuckDB: "value is out of range")
    ("select list_reduce([9.5::decimal(2,1), 9.5, 9.5], lambda a, x: a * x) from events", ExecutionError),
    ("select list_reduce([99.5::decimal(3,1), 99.5, 99.5, 99.5, 99.5, 99.5, 99.5, 99.5, 99.5, 99.5, 99.5], "
     "lambda a, x: a + x) from events", ExecutionError),
    ("select length(kind), list_transform([1], lambda x: x + length(kind) + event_id) from events "
     "group by length(kind)", PlanError),
])
def test_errors_where_duckdb_errs(sql, error, duck, events_dir):
    with pytest.raises(duckdb.Error):
        duck.sql(sql).fetchall()
    with pytest.raises(error):
        sluice.connect(str(events_dir), device="cpu").sql(sql).to_arrow()
