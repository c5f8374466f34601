"""LIST_REDUCE over lists of very different lengths (a few long lists among many short, empty
and NULL ones): the fold runs over a shrinking prefix of the rows ordered longest first, and
every row's value -- the ones that ended early too -- answers as DuckDB's, with the position,
a captured column, an initial value and string accumulators; as a user runs it, in 7-row
chunks and spilled (the ``con`` fixture)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_answer

ROWS = 400


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce_lengths")
    rng = np.random.default_rng(9)
    nums, words = [], []
    for i in range(ROWS):
        n = 300 if i % 97 == 5 else int(rng.integers(0, 6))
        if i % 23 == 0:
            nums.append(None)
            words.append(None)
            continue
        nums.append([None if rng.random() < 0.05 else int(v) for v in rng.integers(-50, 50, n)])
        words.append([str(v) for v in rng.integers(0, 9, n)])
    pq.write_table(pa.table({"id": pa.array(range(ROWS), pa.int64()), "k": pa.array(rng.integers(1, 4, ROWS)),
                             "l": pa.array(nums, pa.list_(pa.int64())), "w": pa.array(words, pa.list_(pa.string()))}),
                   d / "t.parquet", row_group_size=150)
    return d


QUERIES = [
    "select id, list_reduce(l, lambda a, x: a + coalesce(x, 0), 0), list_reduce(l, lambda a, x, i: a + i * k, 0) "
    "from t order by id",
    "select id, list_reduce(l, lambda a, x: greatest(a, x)) from t where len(l) > 0 order by id",
    "select id, list_reduce(w, lambda a, x: a || x) from t where len(w) > 0 order by id",
    "select id, list_reduce(w, lambda a, x: a || x, 'w' || k) from t order by id",
]


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_list_reduce_over_uneven_lists(sql, con, duck):
    compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0])
