"""EXCLUDE in a window frame (CURRENT ROW, GROUP, TIES, NO OTHERS) for COUNT, SUM, AVG, MIN
and MAX: the frame less the excluded rows, as DuckDB computes it, over ROWS frames on unique
keys (peers' order is then fixed) and RANGE / GROUPS frames with many ties; with NULLs, NaN,
strings and decimals; with tiny chunks too. Ranking, distribution and offset functions ignore
it (they ignore the frame); FIRST_VALUE / LAST_VALUE / NTH_VALUE and the moments are refused."""

import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("window_exclude")
    r = random.Random(3)
    n = 90
    t = pa.table({
        "id": pa.array(r.sample(range(1000), n), pa.int64()),
        "g": pa.array([r.randint(0, 2) for _ in range(n)], pa.int32()),
        "k": pa.array([r.randint(0, 8) for _ in range(n)], pa.int32()),  # ties
        "v": pa.array([None if r.random() < .15 else r.randint(-50, 50) for _ in range(n)], pa.int64()),
        "f": pa.array([None if r.random() < .1 else r.choice([1.5, -2.0, float("nan"), 0.25, 7.0]) for _ in range(n)]),
        "m": pa.array([None if r.random() < .1 else decimal.Decimal(r.randint(-999, 999)) / 100 for _ in range(n)],
                      pa.decimal128(9, 2)),
        "s": pa.array([None if r.random() < .1 else r.choice(["a", "b", "ab", "", "zz"]) for _ in range(n)]),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=32)
    return root


@pytest.fixture(scope="module")
def duck(data):
    return duckdb_tables(data)


FRAMES = [
    "order by id rows between unbounded preceding and unbounded following",
    "order by id rows between 2 preceding and 3 following",
    "partition by g order by id rows between 1 preceding and current row",
    "order by k range between unbounded preceding and current row",
    "partition by g order by k range between 1 preceding and 2 following",
    "order by k groups between 1 preceding and 1 following",
    "partition by g order by k rows between unbounded preceding and unbounded following",
]
AGGS = ["count(*)", "count(v)", "sum(v)", "avg(v)", "min(f)", "max(f)", "sum(m)", "avg(m)", "min(s)", "max(s)",
        "min(v)", "max(m)"]


@pytest.mark.parametrize("exclude", ["current row", "group", "ties", "no others"])
@pytest.mark.parametrize("frame", FRAMES)
def test_exclude_as_duckdb(exclude, frame, data, duck, connect):
    if frame.startswith("partition by g order by k rows") and exclude != "current row":
        aggs = ["count(*)", "sum(v)", "min(s)"]  # whole partitions: peers' order does not matter
    else:
        aggs = AGGS
    sql = "select id, " + ", ".join(f"{a} over ({frame} exclude {exclude})" for a in aggs) + " from t"
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 7}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs)


@pytest.mark.parametrize("exclude", ["current row", "group", "ties"])
def test_ranking_and_offsets_ignore_exclude(exclude, data, duck, connect):
    """Ranking, distribution and offset functions ignore the frame, so its EXCLUDE too (DuckDB's
    window tests use it: they were refused)."""
    sql = ("select id, rank() over (order by k rows between 1 preceding and 1 following exclude {e}), "
           "dense_rank() over (partition by g order by k groups between 1 preceding and current row exclude {e}), "
           "row_number() over (order by id range between 2 preceding and 2 following exclude {e}), "
           "ntile(4) over (order by id rows between unbounded preceding and current row exclude {e}), "
           "percent_rank() over (partition by g order by k rows between 1 preceding and 1 following exclude {e}), "
           "cume_dist() over (order by k groups between 1 preceding and 1 following exclude {e}), "
           "lag(v, 2) over (order by id rows between 1 preceding and 1 following exclude {e}), "
           "lead(s, 1, 'x') over (partition by g order by id rows between 1 preceding and 1 following exclude {e}) "
           "from t").format(e=exclude)
    theirs = duck.sql(sql).to_arrow_table()
    for settings in ({}, {"chunk_rows": 7}):
        compare(connect(data, **settings).sql(sql).to_arrow(), theirs)


@pytest.mark.parametrize("call", ["first_value(v)", "last_value(v)", "nth_value(v, 2)", "stddev_samp(v)"])
def test_other_functions_refused(call, data, connect):
    with pytest.raises(UnsupportedError):
        connect(data).sql(f"select {call} over (order by id rows between 1 preceding and 1 following "
                          "exclude current row) from t").to_arrow()
