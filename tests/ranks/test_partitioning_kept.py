"""Partitioning kept through a join (issue 52 item 5): a join over inputs hashed on its keys
leaves each row on the rank its key hashed to, so an aggregation grouping by those keys (or
more) runs in one phase where the rows are -- TPC-H q03 no longer re-hashes on the key it just
joined on. Which key column still partitions depends on the join: the probe keys for inner,
probe-outer, semi and anti joins, the build keys for build-outer / semi / anti joins, neither
for a FULL join (its unmatched rows carry NULL keys on any rank). Answers equal DuckDB's on 2
and 3 ranks with NULL keys, unmatched rows on both sides and keys of two integer types."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ranks import check_on_ranks

import sluice
from sluice.exec.driver import explain as explain_ops
from sluice.physical.lower import lower_plan
from sluice.testing.queries import tpch_queries


@pytest.fixture(scope="module")
def join_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("kept")
    n, m = 800, 300
    a = pa.table({"k": pa.array([None if i % 13 == 0 else i % 97 for i in range(n)], pa.int64()),
                  "g": pa.array([i % 5 for i in range(n)], pa.int32()),
                  "v": pa.array(range(n), pa.int64())})
    b = pa.table({"k": pa.array([None if i % 17 == 0 else (i * 7) % 131 for i in range(m)], pa.int32()),
                  "w": pa.array([i % 11 for i in range(m)], pa.int64())})
    pq.write_table(a, root / "a.parquet", row_group_size=50)
    pq.write_table(b, root / "b.parquet", row_group_size=30)
    return root


QUERIES = {
    "inner_by_a": "select a.k, count(*), sum(b.w) from a join b on a.k = b.k group by a.k",
    "inner_by_b": "select b.k, count(*), sum(a.v) from a join b on a.k = b.k group by b.k",
    "inner_by_more": "select a.k, a.g, count(*), min(b.w) from a join b on a.k = b.k group by a.k, a.g",
    "left_by_a": "select a.k, count(*), count(b.w) from a left join b on a.k = b.k group by a.k",
    "left_by_b": "select b.k, count(*), sum(a.v) from a left join b on a.k = b.k group by b.k",
    "right_by_a": "select a.k, count(*), count(b.w) from a right join b on a.k = b.k group by a.k",
    "right_by_b": "select b.k, count(*), sum(a.v) from a right join b on a.k = b.k group by b.k",
    "full_by_a": "select a.k, count(*) from a full join b on a.k = b.k group by a.k",
    "full_by_b": "select b.k, count(*) from a full join b on a.k = b.k group by b.k",
    "semi": "select k, count(*) from a where k in (select k from b) group by k",
    "anti": "select k, count(*) from a where k not in (select k from b where k is not null) group by k",
    "distinct_agg": "select a.k, count(distinct b.w) from a join b on a.k = b.k group by a.k",
}


@pytest.mark.parametrize("ranks", [2, 3])
def test_grouping_after_a_partitioned_join_equals_duckdb(ranks, join_dir):
    check_on_ranks(join_dir, QUERIES, ranks, {"broadcast_bytes": 0})


def test_q03_groups_where_the_join_left_its_rows(tpch_spread):
    con = sluice.connect(tpch_spread, device="cpu", broadcast_bytes=0)
    lines = [ln.strip() for ln in explain_ops(lower_plan(con.sql(tpch_queries()["q03"]).plan, con.config, 0, 3))]
    agg = next(i for i, ln in enumerate(lines) if ln.startswith("HashAggregate"))
    assert lines[agg].startswith("HashAggregate keys=[lineitem.l_orderkey"), lines  # one phase
    assert lines[agg + 1].startswith("HashJoin inner [lineitem.l_orderkey = orders.o_orderkey]"), lines
    assert sum(ln.startswith("Exchange hash(") for ln in lines) == 4, lines  # the joins' own, nothing more


def test_a_full_join_keeps_no_partitioning(join_dir):
    con = sluice.connect(join_dir, device="cpu", broadcast_bytes=0)
    lines = [ln.strip() for ln in explain_ops(lower_plan(con.sql(QUERIES["full_by_a"]).plan, con.config, 0, 2))]
    assert any(ln.startswith("HashAggregate(final)") for ln in lines), lines
