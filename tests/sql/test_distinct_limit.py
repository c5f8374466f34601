"""DISTINCT / GROUP BY without aggregates under a LIMIT and no ORDER BY stop reading once they
hold enough groups (``SELECT COUNT(*) FROM (SELECT DISTINCT n FROM t LIMIT 10)`` over 75 M md5
digests read them all, and held them all). Any groups answer: checked are the row count, that
every row is one of DuckDB's full answer and that no group comes twice -- as a user runs it, in
3-row chunks (merged along the way) and spilled, and with fewer groups than the LIMIT."""

import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, compare_limited, duckdb_connect, rows_of

QUERIES = [
    "select distinct s from t limit 7",
    "select distinct k, s from t limit 25 offset 4",
    "select k from t group by k limit 3",
    "select distinct k from t limit 1000",  # fewer groups than the limit: all of them
    "select distinct s from t where k > 2 limit 5",
    "select s from t union select s from u limit 6",
    "select distinct lower(s) as l from t limit 9",
]
COUNTS = ["select count(*) from (select distinct s from t limit 10)",
          "select count(*), count(distinct coalesce(s, '-')) from (select distinct s from t limit 40)",
          "select count(*) from (select k, s from t group by k, s limit 1 offset 2)"]


@pytest.fixture(scope="module")
def words_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("distinct_limit")
    r = random.Random(3)
    n = 500
    pq.write_table(pa.table({"k": pa.array([r.randint(0, 9) for _ in range(n)], pa.int64()),
                             "s": [None if r.random() < .03 else f"w{r.randint(0, 150)}" for _ in range(n)]}),
                   root / "t.parquet", row_group_size=61)
    pq.write_table(pa.table({"s": [f"w{i}" for i in range(140, 170)]}), root / "u.parquet")
    return root


SETTINGS = {"default": {}, "chunks3": {"chunk_rows": 3}, "spilled": {"chunk_rows": 3, "force_spill": True}}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("sql", QUERIES)
def test_any_groups_answer(words_dir, connect, setting, sql):
    duck = duckdb_connect(words_dir)
    ours = connect(words_dir, **SETTINGS[setting]).sql(sql).to_arrow()
    full = duck.sql(re.sub(r" limit \d+( offset \d+)?$", "", sql)).to_arrow_table()
    compare_limited(ours, duck.sql(sql).to_arrow_table(), full, [])
    rows = rows_of(ours)
    assert len(set(rows)) == len(rows), "a group came twice"


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("sql", COUNTS)
def test_counts_of_limited_distincts(words_dir, connect, setting, sql):
    compare(connect(words_dir, **SETTINGS[setting]).sql(sql).to_arrow(), duckdb_connect(words_dir).sql(sql).to_arrow_table())
