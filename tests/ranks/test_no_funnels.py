"""No funnels (issue 52 item 3): DISTINCT aggregates without GROUP BY run on every rank. The
rows are hash-partitioned by the DISTINCT argument (equal values meet on one rank), each rank
reduces its share to partial states and only those -- one row a rank -- are gathered to rank 0.
Answers equal DuckDB's on 1, 2 and 3 ranks, with NULLs, all-NULL and empty inputs, strings whose
dictionaries differ between row groups (and so between ranks), floats with -0.0 and NaN, and
several DISTINCT arguments in one query."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ranks import check_on_ranks

import sluice
from sluice.exec.driver import explain as explain_ops
from sluice.physical.lower import lower_plan


@pytest.fixture(scope="module")
def distinct_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("distinct")
    n = 600
    words = ["apple", "Banana", "cherry", "date", "elder", "fig", "grape", "", "kiwi", "lemon"]
    x = [None if i % 7 == 0 else (i * 37) % 101 for i in range(n)]  # each value in many row groups
    # each row group (40 rows) its own rotating subset of words: its own dictionary
    s = [None if i % 11 == 0 else words[(i // 40 + i % 3) % len(words)] + str(i % 5) for i in range(n)]
    f = [[0.0, -0.0, float("nan"), 1.5, -2.25, None][i % 6] for i in range(n)]
    t = pa.table({
        "x": pa.array(x, pa.int64()),
        "s": pa.array(s, pa.string()),
        "nul": pa.array([None] * n, pa.int32()),
        "f": pa.array(f, pa.float64()),
        "d": pa.array([None if i % 5 == 0 else D(f"{(i % 13) - 6}.{i % 4}5") for i in range(n)], pa.decimal128(9, 2)),
        "g": pa.array([i % 3 for i in range(n)], pa.int32()),
        "y": pa.array(list(range(n)), pa.int64()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=40)  # 15 row groups: every rank a share
    pq.write_table(t.slice(0, 0), root / "empty.parquet")
    return root


QUERIES = {
    "count_int": "select count(distinct x) from t",
    "count_sum_avg_int": "select count(distinct x), sum(distinct x), avg(distinct x) from t",
    "with_plain_aggs": "select count(distinct x), count(*), count(x), sum(y), min(s), max(f) from t",
    "strings": "select count(distinct s), min(distinct s), max(distinct s) from t",
    "strings_expr": "select count(distinct upper(s) || 'z') from t",
    "all_null": "select count(distinct nul), sum(distinct nul), avg(distinct nul), count(*) from t",
    "floats": "select count(distinct f), min(distinct f), max(distinct f) from t",
    "decimal": "select count(distinct d), sum(distinct d), avg(distinct d) from t",
    "expression": "select count(distinct x % 10), sum(distinct x * 2) from t where y > 100",
    "filtered_away": "select count(distinct x), sum(distinct x), count(distinct s), count(*) from t where y < 0",
    "empty_table": "select count(distinct x), sum(distinct s is null), count(*) from empty",
    "empty_one_arg": "select count(distinct x), sum(distinct x) from empty",
    "several_args": "select count(distinct x), count(distinct s), sum(distinct d), avg(y), count(*) from t",
    "several_args_empty": "select count(distinct x), count(distinct s), count(*) from t where y < 0",
    "several_with_filter": "select count(distinct x) filter (where g = 1), count(distinct s), sum(y) from t",
    "under_join": "select count(distinct a.s) from t a join t b on a.x = b.y",
    "in_subquery": "select g, (select count(distinct x) from t) c from t group by g order by g",
    "grouped": "select g, count(distinct x), count(distinct s) from t group by g order by g",
}


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_distinct_aggregates_equal_duckdb_on_ranks(ranks, distinct_dir):
    check_on_ranks(distinct_dir, QUERIES, ranks)


def test_distinct_aggregates_in_small_chunks_spilled(distinct_dir):
    check_on_ranks(distinct_dir, QUERIES, 3, {"chunk_rows": 7, "force_spill": True, "exchange_wire": "tensor"})


def test_distinct_aggregates_one_rank_loopback_blocking(distinct_dir):
    check_on_ranks(distinct_dir, QUERIES, 1, {"exchange_loopback": True, "exchange": "blocking", "chunk_rows": 50})


def _explain(data, sql: str, world: int = 2) -> list[str]:
    con = sluice.connect(data, device="cpu")
    return explain_ops(lower_plan(con.sql(sql).plan, con.config, 0, world))


@pytest.mark.parametrize("name", ["count_int", "with_plain_aggs", "strings", "several_args", "all_null"])
def test_no_rows_gathered_below_a_distinct_aggregate(name, distinct_dir):
    """Each gather carries partial states (one row a rank), never the input rows: a gather sits
    only right above a partial aggregate whose input is hashed by its DISTINCT argument."""
    lines = [ln.strip() for ln in _explain(distinct_dir, QUERIES[name])]
    gathers = [i for i, ln in enumerate(lines) if ln == "Gather to rank 0"]
    assert gathers, lines
    for i in gathers:
        assert lines[i + 1].startswith("HashAggregate(partial) keys=[]"), lines
        assert lines[i + 2].startswith("Exchange hash("), lines
    assert lines[0].startswith("Project") and lines[1].startswith("HashAggregate(final)"), lines
    want = 3 if name == "several_args" else 1
    assert len(gathers) == want


def test_rank_zero_receives_one_row_per_rank(tpch_spread):
    """``--analyze``: the gather under count(DISTINCT l_suppkey) moves 3 rows on 3 ranks (it
    moved every lineitem row before)."""
    sql = "select count(distinct l_suppkey), sum(distinct l_suppkey) from lineitem"
    res = subprocess.run([sys.executable, "-m", "sluice", "query", "--data", str(tpch_spread), "--device", "cpu",
                          "--ranks", "3", "--analyze", sql], capture_output=True, text=True, timeout=180,
                         env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    m = re.search(r"Gather to rank 0: ([\d,]+) rows", res.stdout)
    assert m, res.stdout
    assert int(m.group(1).replace(",", "")) == 3, res.stdout
    m = re.search(r"Exchange hash\(lineitem.l_suppkey\): ([\d,]+) rows", res.stdout)
    assert m and int(m.group(1).replace(",", "")) == 600_572, res.stdout
