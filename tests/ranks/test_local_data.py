"""Per-rank local data (issue 52 item 2, ``rank_data=local``): each rank's own files form its
part of every table, the table is their union. Each rank here gets its own folder through
``{rank}`` in the data path (as each node of a cluster has its own disk) holding a different
slice of TPC-H's lineitem and orders -- one rank's slice empty for orders on 3 ranks -- and every
answer equals DuckDB's over the union: aggregates, strings whose dictionaries differ by rank, a
join of two rank-local tables, a sort by ranges, DISTINCT counts, a LIMIT. Ranks that differ in
columns, miss a table, or would read the same data twice are refused in one line."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
import pytest

from sluice.catalog import RowGroup
from sluice.errors import ConfigError, DataError, PlanError, UnsupportedError
from sluice.launch import run_job
from sluice.physical.distribute import share
from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns

QUERIES = {
    "count_sum": "select count(*) c, sum(l_quantity) q, min(l_shipdate) lo, max(l_shipdate) hi from lineitem",
    "group_strings": "select l_returnflag, l_linestatus, count(*) c, avg(l_discount) d from lineitem "
                     "group by all order by all",
    "join": "select o_orderpriority, count(*) c, sum(l_extendedprice) s from lineitem join orders "
            "on l_orderkey = o_orderkey group by 1 order by 1",
    "range_sort": "select l_orderkey, l_linenumber, l_shipmode from lineitem where l_quantity > 45 "
                  "order by l_shipmode desc, l_orderkey, l_linenumber",
    "distinct": "select count(distinct l_partkey) p, count(distinct o_custkey) k from lineitem join orders "
                "on l_orderkey = o_orderkey",
    "filtered_limit": "select o_orderkey, o_totalprice from orders where o_orderdate < date '1993-01-01' "
                      "order by o_totalprice desc, o_orderkey limit 7",
}


def _slices(tpch_dir, root, ranks):
    """Folder ``part{r}`` of each rank, and ``all`` with the union (DuckDB's view)."""
    duck = duckdb.connect()
    for r in range(ranks):
        (root / f"part{r}").mkdir()
        duck.execute(f"copy (select * from '{tpch_dir}/lineitem.parquet' where l_orderkey % {ranks} = {r}) "
                     f"to '{root}/part{r}/lineitem.parquet' (row_group_size 20000)")
        keep = "false" if r == ranks - 1 and ranks > 2 else f"o_orderkey % {ranks} = {r}"
        duck.execute(f"copy (select * from '{tpch_dir}/orders.parquet' where {keep}) "
                     f"to '{root}/part{r}/orders.parquet'")
    return duck


@pytest.mark.parametrize("ranks", [2, 3])
def test_local_data_answers_as_the_union(tpch_dir, tmp_path, ranks):
    duck = _slices(tpch_dir, tmp_path, ranks)
    for t in ("lineitem", "orders"):
        duck.execute(f"create view {t} as select * from '{tmp_path}/part*/{t}.parquet'")
    names = sorted(QUERIES)
    job = {"kind": "queries", "data": str(tmp_path / "part{rank}"), "queries": [QUERIES[n] for n in names],
           "settings": {"device": "cpu", "dist_timeout_s": 60, "rank_data": "local", "range_sort_rows": 0}}
    bad = []
    for name, ours in zip(names, run_job(ranks, job)):
        try:
            compare(ours, duck.sql(QUERIES[name]).to_arrow_table(), order_by_columns(QUERIES[name], ours.column_names))
        except AssertionError as e:
            bad.append(f"{name}: {str(e).splitlines()[0]}")
    assert not bad, "\n".join(bad)


def _job(data, sql="select count(*) from t"):
    return {"kind": "queries", "data": str(data), "queries": [sql],
            "settings": {"device": "cpu", "dist_timeout_s": 30, "rank_data": "local"}}


def test_local_data_refusals(tpch_dir, tmp_path):
    src = pq.read_table(tpch_dir / "nation.parquet")
    for r in range(2):
        (tmp_path / f"same{r}").mkdir()
        pq.write_table(src, tmp_path / f"same{r}" / "t.parquet")  # one copy on every rank
        (tmp_path / f"cols{r}").mkdir()
        pq.write_table(src if r == 0 else src.drop(["n_comment"]), tmp_path / f"cols{r}" / "t.parquet")
    (tmp_path / "miss0").mkdir()
    (tmp_path / "miss1").mkdir()
    pq.write_table(src, tmp_path / "miss0" / "t.parquet")
    with pytest.raises(DataError, match="same footers as rank 0"):
        run_job(2, _job(tmp_path / "same{rank}"))
    with pytest.raises(DataError, match="both read .*t.parquet"):
        run_job(2, _job(tmp_path / "same0"))  # one folder read by both ranks of one machine
    with pytest.raises(DataError, match="differs between ranks: column 'n_comment'"):
        run_job(2, _job(tmp_path / "cols{rank}"))
    with pytest.raises(PlanError, match=r"unknown table 't'.*\(on rank 1\)"):
        run_job(2, _job(tmp_path / "miss{rank}"))
    for r in range(2):
        (tmp_path / f"rec{r}").mkdir()
        pq.write_table(src.slice(r * 10, 10), tmp_path / f"rec{r}" / "t.parquet")
    recursive = ("with recursive r(k) as (select 1 union all select k + 1 from r "
                 "where k < (select count(*) from t)) select count(*) from r")
    with pytest.raises(UnsupportedError, match="recursive CTE over table 't' with rank_data=local"):
        run_job(2, _job(tmp_path / "rec{rank}", recursive))


def test_rank_placeholder_needs_local_data(tmp_path):
    import sluice
    with pytest.raises(ConfigError, match="needs rank_data=local"):
        sluice.connect(str(tmp_path / "part{rank}"))
    (tmp_path / "part0").mkdir()
    con = sluice.connect(str(tmp_path / "part{rank}"), rank_data="local")  # one process is rank 0
    assert con.root == tmp_path / "part0"


def test_share_takes_a_ranks_own_row_groups():
    groups = [RowGroup(f"/d/f{i}.parquet", 0, 10 + i, {}, 100, rank=i % 3) for i in range(7)]
    for r in range(3):
        assert share(groups, r, 3) == [g for g in groups if g.rank == r]
    shared = [RowGroup(f"/d/f{i}.parquet", 0, 10, {}, 100) for i in range(6)]
    assert sorted(g.path for r in range(3) for g in share(shared, r, 3)) == sorted(g.path for g in shared)
