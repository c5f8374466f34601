"""Floats in SQL's total order, as DuckDB and PostgreSQL define it: every NaN equals every
other NaN and is greater than any number (+inf included); -0.0 equals 0.0. IEEE comparisons
would make ``x < NaN`` false, a NaN its own group, and MIN skip nothing but return NaN.

The oracle is DuckDB over tables loaded into memory: DuckDB 2.0 reading the Parquet files
prunes row groups with their min/max, which leave NaN out, and so drops NaN rows from
``f > 100`` -- a wrong answer sluice must not copy (the pruning test below pins it).
"""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def nan_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("nan")
    t = pa.table({
        "i": pa.array(range(12), pa.int64()),
        "f": pa.array([1.0, 2.0, NAN, -0.0, 0.0, None, INF, -NAN, 5.5, NAN, -INF, 2.0], pa.float64()),
        "r": pa.array([1.5, NAN, 3.0, -0.0, 0.0, 6.0, None, NAN, 9.0, 10.0, 0.0, 1.5], pa.float32()),
        "g": pa.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2], pa.int32()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=3)  # NaN inside and beside min/max
    u = pa.table({"k": pa.array([NAN, 0.0, 2.0, None, -NAN], pa.float64()),
                  "v": pa.array(["nan", "zero", "two", "null", "-nan"])})
    pq.write_table(u, root / "u.parquet")
    # Window sums: a huge value, infinities and a NaN in some partitions, small values after them.
    w = pa.table({"p": pa.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4], pa.int32()),
                  "i": pa.array(range(12), pa.int64()),
                  "x": pa.array([1e20, 3.0, 1.0, 2.0, 4.0, INF, 5.0, NAN, 1.0, 2.0, -INF, INF], pa.float64())})
    pq.write_table(w, root / "w.parquet")
    return root


def _duck(root):
    con = duckdb.connect()
    for name in ("t", "u", "w"):
        con.execute(f"create table {name} as select * from read_parquet('{root / name}.parquet')")
    return con


QUERIES = {
    "gt_const": "select i from t where f > 100",
    "ge_const": "select i from t where f >= 2",
    "lt_const": "select i from t where f < 1.5",
    "eq_nan": "select i from t where f = 'nan'::double",
    "ne_const": "select i from t where f <> 2.0",
    "lt_nan": "select i from t where f < 'nan'::double",
    "int_lt_nan": "select i from t where i < 'nan'::double",
    "between_inf": "select i from t where f between 5 and 'inf'::double",
    "cmp_columns": "select i, f < r, f = r, f >= r from t",
    "float32_gt": "select i from t where r > 5",
    "in_list_nan": "select i from t where f in (1.0, 'nan'::double)",
    "group_by": "select f, count(*), sum(i) from t group by f",
    "group_by_float32": "select r, count(*) from t group by r",
    "distinct": "select distinct f from t",
    "count_distinct": "select count(distinct f), count(distinct r) from t",
    "min_max": "select min(f), max(f), min(r), max(r) from t",
    "min_max_grouped": "select g, min(f), max(f), min(r), max(r) from t group by g",
    "order_by": "select i, f from t order by f, i",
    "order_by_desc": "select i, f from t order by f desc nulls last, i",
    "top_k": "select i, f from t order by f desc, i limit 3",
    "top_k_asc": "select i, f from t order by f, i limit 4",
    "join": "select i, v from t join u on t.f = u.k",
    "left_join": "select i, v from t left join u on t.f = u.k",
    "semi_join": "select i from t where f in (select k from u)",
    "not_in": "select i from t where f not in (select k from u where k is not null)",
    "greatest_least": "select i, greatest(f, 3.0), least(f, 3.0) from t",
    "window_frame": "select i, max(f) over (order by i rows between 1 preceding and 1 following), "
                    "min(f) over (order by i rows between 1 preceding and 1 following) from t",
    "window_partition": "select i, min(f) over (partition by g), max(r) over (partition by g) from t",
    "window_running": "select i, min(f) over (order by i), max(f) over (order by i desc) from t",
    "rank_by_float": "select i, rank() over (order by f) from t",
    "partition_by_float": "select i, count(*) over (partition by f), sum(i) over (partition by r, g), "
                          "max(f) over (partition by r) from t",
    "window_sum_partition": "select i, sum(x) over (partition by p), avg(x) over (partition by p) from w",
    "window_sum_running": "select i, sum(x) over (partition by p order by i) from w",
    "window_sum_sliding": "select i, sum(x) over (partition by p order by i rows between 1 preceding and current row), "
                          "avg(x) over (partition by p order by i rows between current row and 1 following) from w",
    "window_sum_nan_first": "select i, sum(f) over (partition by g order by i) from t",
    "moments_grouped": "select p, var_pop(x), stddev_pop(x), var_samp(x), stddev(x) from w group by p",
    "moments_window": "select i, var_pop(x) over (partition by p order by i), stddev_samp(x) over (partition by p), "
                      "variance(x) over (order by i rows between 1 preceding and current row) from w",
}


@pytest.mark.parametrize("chunk_rows", [None, 2], ids=["default_chunks", "two_row_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_float_total_order(name, chunk_rows, nan_dir, connect):
    sql = QUERIES[name]
    settings = {"chunk_rows": chunk_rows} if chunk_rows else {}
    ours = connect(nan_dir, **settings).sql(sql).to_arrow()
    theirs = _duck(nan_dir).sql(sql).to_arrow_table()
    compare(ours, theirs, [1] if " order by f" in sql else None)


def test_pruning_keeps_row_groups_whose_nan_is_above_their_max(nan_dir, connect):
    # Row group 0 is (1.0, 2.0, NaN): its statistics say max 2.0.
    md = pq.ParquetFile(nan_dir / "t.parquet").metadata.row_group(0).column(1).statistics
    assert md.has_min_max and md.max == 2.0
    got = connect(nan_dir).sql("select i from t where f > 100 order by i").to_arrow().column(0).to_pylist()
    assert got == [2, 6, 7, 9]
    # ... as DuckDB answers over an in-memory table (its Parquet reader prunes the group away).
    assert [r[0] for r in _duck(nan_dir).sql("select i from t where f > 100 order by i").fetchall()] == got
