"""Window functions and QUALIFY against DuckDB: NULLs in partition, order and value columns,
ties, partitions of one row, empty inputs, every frame kind; at the default chunk size, in
chunks of a few rows (partitions span chunks), and with every sort spilled.

Functions whose result depends on the order among ties (ROW_NUMBER, LAG, ROWS frames...)
are ordered by a unique ``id`` last, so that both engines must give the same answer."""

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect

N = 61


@pytest.fixture(scope="module")
def wdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("windows")
    rng = np.random.default_rng(7)
    g = rng.integers(0, 4, N)
    o = rng.integers(0, 6, N)
    x = rng.integers(-50, 50, N)
    t = pa.table({
        "id": pa.array(np.arange(N), pa.int64()),
        "g": pa.array([None if v == 3 else int(v) for v in g], pa.int32()),
        "o": pa.array([None if i % 11 == 5 else int(v) for i, v in enumerate(o)], pa.int32()),
        "x": pa.array([None if i % 7 == 3 else int(v) for i, v in enumerate(x)], pa.int64()),
        "f": pa.array([float(v) / 4 for v in rng.integers(-100, 100, N)], pa.float64()),
        "d": pa.array([decimal.Decimal(int(v)) / 100 for v in rng.integers(-9999, 9999, N)], pa.decimal128(9, 2)),
        "s": pa.array([None if i % 13 == 0 else f"s{int(v)}" for i, v in enumerate(rng.integers(0, 9, N))]),
        "dt": pa.array([None if i % 9 == 4 else 19000 + int(v) for i, v in enumerate(rng.integers(0, 20, N))],
                       pa.int32()).cast(pa.date32()),
    })
    pq.write_table(t, root / "w.parquet", row_group_size=17)
    pq.write_table(t.slice(0, 1), root / "one.parquet")
    pq.write_table(t.slice(0, 0), root / "none.parquet")
    return root


QUERIES = {
    # ranking
    "row_number": "select id, row_number() over (partition by g order by o, id) from w",
    "row_number_global": "select id, row_number() over (order by x desc nulls first, id) from w",
    "rank_ties": "select id, rank() over (partition by g order by o) from w",
    "dense_rank_ties": "select id, dense_rank() over (partition by g order by o desc) from w",
    "rank_no_order": "select id, rank() over (partition by g), dense_rank() over () from w",
    "percent_rank": "select id, percent_rank() over (partition by g order by o nulls first) from w",
    "cume_dist": "select id, cume_dist() over (order by o) from w",
    "ntile": "select id, ntile(4) over (partition by g order by id), ntile(100) over (order by id) from w",
    "rank_two_keys": "select id, rank() over (partition by g, o % 2 order by s nulls last, o desc) from w",
    # offsets
    "lag_lead": "select id, lag(x) over (partition by g order by id), lead(x, 2) over (partition by g order by id) from w",
    "lag_default": "select id, lag(x, 1, -1) over (order by id), lead(s, 3, 'none') over (partition by g order by id) from w",
    "lag_zero": "select id, lag(x, 0) over (order by id) from w",
    "first_last_value": "select id, first_value(x) over (partition by g order by id), "
                        "last_value(x) over (partition by g order by id) from w",
    "last_value_full": "select id, last_value(s) over (partition by g order by id rows between unbounded preceding "
                       "and unbounded following) from w",
    "nth_value": "select id, nth_value(x, 3) over (partition by g order by id) from w",
    "first_value_ties": "select id, first_value(o) over (partition by g order by o nulls first), "
                        "last_value(o) over (partition by g order by o) from w",
    # aggregates: whole partition, running (RANGE with peers), ROWS frames
    "sum_partition": "select id, sum(x) over (partition by g), count(x) over (partition by g), "
                     "count(*) over (partition by g) from w",
    "sum_running_range": "select id, sum(x) over (partition by g order by o) from w",
    "sum_running_rows": "select id, sum(x) over (partition by g order by o, id rows unbounded preceding) from w",
    "avg_min_max_running": "select id, avg(x) over (order by o), min(x) over (order by o), "
                           "max(x) over (order by o) from w",
    "rows_sliding": "select id, sum(x) over (partition by g order by id rows between 2 preceding and 1 following), "
                    "min(x) over (partition by g order by id rows between 2 preceding and 1 following), "
                    "max(f) over (partition by g order by id rows between 3 preceding and current row) from w",
    "rows_following": "select id, sum(x) over (order by id rows between 1 following and 3 following), "
                      "count(x) over (order by id rows between 1 following and 3 following) from w",
    "rows_to_end": "select id, max(x) over (partition by g order by id rows between current row and unbounded following), "
                   "min(d) over (partition by g order by id rows between 2 following and unbounded following) from w",
    "rows_preceding_only": "select id, sum(x) over (order by id rows between 5 preceding and 2 preceding) from w",
    "range_current_current": "select id, count(*) over (order by o range between current row and current row), "
                             "sum(x) over (order by o range between current row and unbounded following) from w",
    # RANGE frames with offsets (distances in the ORDER BY value; NULL keys are each other's
    # peers) and GROUPS frames (peer groups), before, around and after the current row
    "range_offsets": "select id, sum(x) over (partition by g order by o range between 2 preceding and 1 following), "
                     "count(*) over (partition by g order by o range between 1 preceding and current row), "
                     "min(x) over (order by o range between current row and 2 following) from w",
    "range_offsets_desc": "select id, sum(x) over (partition by g order by o desc range between 1 preceding and 1 following), "
                          "max(x) over (order by o desc nulls first range between 2 preceding and current row) from w",
    "range_beside_row": "select id, sum(x) over (order by o range between 1 following and 3 following), "
                        "count(x) over (order by o range between 3 preceding and 1 preceding) from w",
    "range_float_decimal": "select id, sum(x) over (order by f range between 2.5 preceding and 0.75 following), "
                           "count(*) over (partition by g order by d range between 10.5 preceding and current row) from w",
    "range_dates": "select id, sum(x) over (order by dt range between interval 3 days preceding and current row), "
                   "count(*) over (partition by g order by dt range between 2 preceding and 1 following) from w",
    "groups_frames": "select id, sum(x) over (partition by g order by o groups between 1 preceding and 1 following), "
                     "count(*) over (order by o groups between 1 following and 2 following), "
                     "min(x) over (order by o desc groups between 2 preceding and 1 preceding), "
                     "max(x) over (partition by g order by o groups between current row and unbounded following) from w",
    # named windows: referenced as is, extended by a frame or an ORDER BY, one built on another
    "named_windows": "select id, sum(x) over w1, rank() over w1, count(*) over (w1 rows between 1 preceding and "
                     "current row), sum(x) over (w2 order by id) from w window w1 as (partition by g order by o, id), "
                     "w2 as (partition by g)",
    "named_chain": "select id, sum(x) over b from w window a as (partition by g), b as (a order by id)",
    "decimal_float_sum": "select id, sum(d) over (partition by g order by id), avg(d) over (partition by g), "
                         "sum(f) over (partition by g) from w",
    "min_max_decimal_partition": "select id, min(d) over (partition by g), max(d) over (partition by g) from w",
    "count_star_rows": "select id, count(*) over (order by id rows between 3 preceding and 3 following) from w",
    # windows over aggregates, expressions, several specs, QUALIFY, ORDER BY on a window
    "over_aggregate": "select g, sum(x) as t, rank() over (order by sum(x) desc) from w group by g",
    "sum_of_sum": "select g, o, sum(sum(x)) over (partition by g order by o) from w group by g, o",
    "share_of_total": "select g, sum(x) * 1.0 / sum(sum(x)) over () from w group by g",
    "expressions": "select id, row_number() over (partition by g % 2 order by x * -1, id) + 100 from w",
    "several_specs": "select id, rank() over (order by o), sum(x) over (partition by g order by id), "
                     "lag(o) over (order by id) from w",
    "qualify": "select id, g from w qualify row_number() over (partition by g order by x desc nulls last, id) <= 2",
    "qualify_hidden": "select id from w qualify sum(x) over (partition by g) > 0 and rank() over (order by id) > 3",
    "order_by_window": "select id, g from w order by row_number() over (order by x nulls first, id) desc limit 7",
    "window_in_subquery": "select g, max(rn) from (select g, row_number() over (partition by g order by id) rn "
                          "from w) t group by g",
    "where_then_window": "select id, count(*) over (partition by g) from w where x > 0",
    "distinct_window": "select distinct g, count(*) over (partition by g) from w",
    "one_row": "select id, rank() over (order by id), sum(x) over (), lag(x) over (order by id) from one",
    "empty": "select id, row_number() over (order by id), sum(x) over () from none",
    # IGNORE NULLS: the frame's first / last non-NULL value, the k-th non-NULL row before / after
    "ignore_nulls_values": "select id, first_value(x ignore nulls) over (partition by g order by id), "
                           "last_value(s ignore nulls) over (order by id), first_value(o ignore nulls) over "
                           "(partition by g order by id rows between 1 following and 3 following), "
                           "last_value(dt ignore nulls) over (order by id rows between 4 preceding and 2 preceding) "
                           "from w",
    "ignore_nulls_offsets": "select id, lag(x ignore nulls) over (partition by g order by id), lead(o, 2 ignore nulls) "
                            "over (order by id), lag(s, 3, 'none' ignore nulls) over (partition by g order by id) "
                            "from w",
    # RESPECT NULLS: the default, spelled out (was refused)
    "respect_nulls": "select id, first_value(x respect nulls) over (partition by g order by id), "
                     "last_value(s respect nulls) over (order by id), nth_value(o, 2 respect nulls) over (order by id), "
                     "lag(x respect nulls) over (order by id) from w",
    # whole-partition aggregates run as a grouped aggregate joined back (NULL keys as one partition)
    "partition_aggregates": "select id, sum(x) over (partition by g), count(*) over (partition by g, s), "
                            "avg(d) over (partition by s), min(dt) over (partition by g % 2), "
                            "max(s) over (partition by o), stddev(f) over (partition by g) from w",
    "partition_aggregates_mixed": "select id, sum(x) over (partition by g), "
                                  "sum(x) over (partition by g order by id) from w where x > -20",
    "partition_aggregates_of_aggregates": "select g, sum(x), sum(sum(x)) over (partition by g is null), "
                                          "count(*) over (partition by min(o)) from w group by g",
    # VAR / STDDEV: centred frame sums
    "moments_partition": "select id, stddev(x) over (partition by g), var_pop(d) over (partition by g), "
                         "variance(f) over (), stddev_pop(x) over (partition by o) from w",
    "moments_running": "select id, var_samp(x) over (partition by g order by id), "
                       "stddev_pop(f) over (order by o, id rows between unbounded preceding and current row) from w",
    "moments_sliding": "select id, stddev_samp(x * 1000000000 + 12345) over (order by id rows between 3 preceding "
                       "and 1 following), var_pop(d) over (partition by g order by id rows between 1 preceding "
                       "and 1 preceding) from w",
    "moments_range": "select id, variance(x) over (partition by g order by o range between 1 preceding and "
                     "current row) from w",
    # MIN / MAX of strings: over the strings' sort ranks
    "string_minmax_partition": "select id, max(s) over (partition by g), min(s) over (partition by g) from w",
    "string_minmax_running": "select id, min(s) over (partition by g order by id), "
                             "max(s) over (order by o, id rows between unbounded preceding and current row) from w",
    "string_minmax_sliding": "select id, min(s) over (order by id rows between 2 preceding and 3 following), "
                             "max(upper(s)) over (partition by g order by id rows between 1 following and 4 following) "
                             "from w",
    "string_minmax_range": "select id, max(s) over (partition by g order by o range between 1 preceding and current row) "
                           "from w",
}


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 3}, {"chunk_rows": 5, "force_spill": True}],
                         ids=["default", "three_row_chunks", "spilled_sorts"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_window(name, settings, wdir, connect):
    sql = QUERIES[name]
    ours = connect(wdir, **settings).sql(sql).to_arrow()
    theirs = duckdb_connect(wdir).sql(sql).to_arrow_table()
    compare(ours, theirs, [0] if "limit" in sql else None)


REFUSED = {
    # (EXCLUDE of COUNT / SUM / AVG / MIN / MAX: tests/sql/test_window_exclude.py)
    "select id, first_value(x) over (order by id rows between 1 preceding and 1 following exclude current row) "
    "from w": "EXCLUDE",
    "select id, count(distinct x) over (partition by g) from w": "DISTINCT",
    "select id, nth_value(x, 2 ignore nulls) over (order by id) from w": "IGNORE NULLS",
    "select id, ntile(g) over (order by id) from w": "NTILE",
}


@pytest.mark.parametrize("sql", sorted(REFUSED))
def test_window_refusals(sql, wdir, connect):
    from sluice.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match=REFUSED[sql]):
        connect(wdir).sql(sql).to_arrow()


def test_invalid_frame_is_an_error(wdir, connect):
    from sluice.errors import SluiceError
    with pytest.raises(SluiceError, match="frame"):
        connect(wdir).sql("select sum(x) over (order by id rows between 1 following and 1 preceding) from w").to_arrow()


@pytest.mark.parametrize("sql,message", [
    ("select sum(x) over (order by o, id range between 1 preceding and current row) from w", "exactly one ORDER BY"),
    ("select sum(x) over (order by s range between 1 preceding and current row) from w", "numeric or date"),
    ("select sum(x) over (w1 order by id) from w window w1 as (order by o)", "cannot override ORDER BY"),
    ("select sum(x) over w2 from w window w1 as (order by o)", "not defined"),
])
def test_bad_frames_and_windows_are_errors(sql, message, wdir, connect):
    from sluice.errors import PlanError
    with pytest.raises(PlanError, match=message):
        connect(wdir).sql(sql).to_arrow()
