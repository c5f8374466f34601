"""Global windows without a rank-0 funnel (issue 52 item 3): a window with ORDER BY and no
PARTITION BY whose functions carry (ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK, CUME_DIST, running
COUNT / SUM / AVG / MIN / MAX) runs by ranges of its ORDER BY keys, each rank's range computed
locally and the earlier ranks' totals added. Answers equal DuckDB's on 2 and 3 ranks with ties
that straddle where a range would cut (a key with four values), NULL order keys first and last,
NULL arguments, decimals and floats, ranks left empty (one key value, one row group, nothing at
all), small chunks with forced spilling; the plan gathers no row below the window; what does not
carry (LAG, ROWS frames, NTILE, FIRST_VALUE) still gathers; an integer SUM that leaves int64
over all ranks together raises as on one rank."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from ranks import check_on_ranks

import sluice
from sluice.chunk import Chunk, Column
from sluice.errors import ExecutionError
from sluice.exec.driver import explain as explain_ops
from sluice.exec.window_carry import ROWS, RANK, _Carry, _abs_of, _count_of
from sluice.expr.nodes import Col
from sluice.launch import run_job
from sluice.physical.lower import lower_plan
from sluice.plan.logical import WindowCall
from sluice.testing.queries import order_by_columns
from sluice.types import FLOAT64, INT64


@pytest.fixture(scope="module")
def window_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("global_windows")
    n = 600
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "g": pa.array([None if i % 17 == 0 else i % 4 for i in range(n)], pa.int32()),  # ties and NULLs
        "x": pa.array([None if i % 7 == 0 else (i * 7919) % 1009 - 500 for i in range(n)], pa.int64()),
        "f": pa.array([None if i % 9 == 0 else (i % 23) * 0.25 - 2.0 for i in range(n)], pa.float64()),
        "d": pa.array([None if i % 5 == 0 else D(f"{(i % 13) - 6}.{i % 4}5") for i in range(n)],
                      pa.decimal128(9, 2)),
        "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=(i * 37) % 400) for i in range(n)], pa.date32()),
        "z": pa.array([[0.0, -0.0, float("nan"), 1.5, None, float("-inf")][i % 6] for i in range(n)], pa.float64()),
        "one": pa.array([7] * n, pa.int32()),
        "nul": pa.array([None] * n, pa.int64()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=40)  # 15 row groups: every rank a share
    pq.write_table(t.slice(0, 50), root / "small.parquet")  # one row group: one rank reads it all
    pq.write_table(t.slice(0, 0), root / "empty.parquet")
    big = pa.table({"id": pa.array(range(30), pa.int64()), "v": pa.array([5 * 10 ** 17] * 30, pa.int64())})
    pq.write_table(big, root / "big.parquet", row_group_size=10)
    return root


QUERIES = {
    "ranking": "select id, g, row_number() over (order by g nulls first, id) rn, rank() over (order by g) r, "
               "dense_rank() over (order by g desc) dr from t",
    "distribution": "select id, percent_rank() over (order by x desc nulls first) pr, "
                    "cume_dist() over (order by x desc nulls first) cd, percent_rank() over (order by g) pg, "
                    "cume_dist() over (order by g nulls first) cg from t",
    "running_int": "select id, count(*) over (order by g) c, count(x) over (order by g) cx, sum(x) over (order by g) sx, "
                   "avg(x) over (order by g) ax, min(x) over (order by g) mn, max(x) over (order by g) mx from t",
    "running_nulls_first": "select id, sum(x) over (order by x nulls first) s, min(x) over (order by x nulls first) m, "
                           "count(x) over (order by x nulls first) c, avg(x) over (order by x nulls first) a from t",
    "running_decimal_date": "select id, sum(d) over (order by day, id) s, avg(d) over (order by day, id) a, "
                            "max(day) over (order by d desc, id) m, min(d) over (order by d desc, id) md from t",
    "running_float": "select id, sum(f) over (order by id) s, avg(f) over (order by g nulls last) a from t",
    "all_null_argument": "select id, sum(nul) over (order by id) s, avg(nul) over (order by g) a, "
                         "max(nul) over (order by g) m, count(nul) over (order by g) c from t",
    "float_key": "select id, rank() over (order by z) r, count(*) over (order by z desc) c, "
                 "dense_rank() over (order by z nulls first) d from t",
    "one_key_value": "select id, rank() over (order by one) r, sum(x) over (order by one) s, "
                     "cume_dist() over (order by one) c from t",
    "one_row_group": "select id, dense_rank() over (order by g) r, sum(x) over (order by g) s from small",
    "filtered": "select id, rank() over (order by x) r, sum(x) over (order by x) s from t where g = 2 and x > 0",
    "filtered_away": "select id, rank() over (order by x) r from t where x > 100000",
    "empty": "select id, sum(x) over (order by id) s, percent_rank() over (order by id) p from empty",
    "expression_key": "select id, rank() over (order by x % 10, g desc) r, sum(id) over (order by x % 10) s from t",
    "over_aggregate": "select g, sum(x) sx, rank() over (order by sum(x) desc) r, "
                      "sum(sum(x)) over (order by g nulls first) rs from t group by g",
    "then_order_by": "select id, sum(x) over (order by g) s from t order by s, id",
}


NOT_CARRIED = {
    "lag": "select id, lag(x) over (order by g, id) l from t",
    "rows_frame": "select id, sum(x) over (order by g, id rows between unbounded preceding and current row) s from t",
    "ntile": "select id, ntile(4) over (order by id) n from t",
    "first_value": "select id, first_value(x) over (order by g, id) v from t",
    "mixed": "select id, rank() over (order by g, id) r, lead(id) over (order by g, id) l from t",
    "string_max": "select id, max(cast(x as varchar)) over (order by g) m from t",
}


def final_order(sql: str, columns: list[str]) -> list[int]:
    """The output columns the query's own ORDER BY sorts on (not an OVER clause's)."""
    return order_by_columns(sql[sql.rfind(")") + 1:], columns)


@pytest.mark.parametrize("ranks", [2, 3])
def test_global_windows_equal_duckdb(ranks, window_dir):
    """(On 2 ranks with the windows that do not carry: they still gather, and answer.)"""
    queries = {**QUERIES, **NOT_CARRIED} if ranks == 2 else QUERIES
    check_on_ranks(window_dir, queries, ranks, {"range_sort_rows": 0}, final_order)


def test_global_windows_small_chunks_spilled_tensor_wire(window_dir):
    check_on_ranks(window_dir, QUERIES, 3, {"range_sort_rows": 0, "chunk_rows": 13, "force_spill": True,
                                            "exchange_wire": "tensor", "exchange_batch_bytes": 4096,
                                            "exchange_receive": "pipelined"}, final_order)




def _explain(data, sql: str, world: int, **settings) -> list[str]:
    con = sluice.connect(data, device="cpu", **settings)
    return [ln.strip() for ln in explain_ops(lower_plan(con.sql(sql).plan, con.config, 0, world))]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_no_row_gathered_below_the_window(window_dir, name):
    """Every window of these queries runs by ranges: its input exchanged by ranges of the ORDER
    BY keys, sorted, the window computed and the totals broadcast -- a gather only above."""
    lines = _explain(window_dir, QUERIES[name], 3, range_sort_rows=0)
    carries = [i for i, ln in enumerate(lines) if ln.startswith("Window carry")]
    assert carries, lines
    assert not any(ln.startswith("Window partition=[]") and not lines[i - 1].startswith("Shared")
                   for i, ln in enumerate(lines)), lines  # every global window is a ranged one
    first = min(carries)
    assert not any(ln.startswith("Gather to rank 0") for ln in lines[first:]), lines
    assert any(ln.startswith("Exchange range(") for ln in lines[first:]), lines
    assert "Broadcast to every rank" in lines[first:], lines


def test_what_does_not_carry_gathers(window_dir):
    for sql in NOT_CARRIED.values():
        lines = _explain(window_dir, sql, 3, range_sort_rows=0)
        assert "Gather to rank 0" in lines and not any(ln.startswith("Window carry") for ln in lines), (sql, lines)


def test_small_windows_still_gather(window_dir):
    """Below ``range_sort_rows`` a global window gathers, as a sort does."""
    lines = _explain(window_dir, QUERIES["ranking"], 3)
    assert not any(ln.startswith("Window carry") for ln in lines), lines


def test_sum_overflow_raises_as_on_one_rank(window_dir):
    """30 values of 5e17: every rank's share sums under 2**63, all together over it."""
    sql = "select id, sum(v) over (order by id) s from big"
    with pytest.raises(ExecutionError, match="overflow in window SUM"):
        sluice.connect(window_dir, device="cpu").sql(sql).to_arrow()
    job = {"kind": "queries", "data": str(window_dir), "queries": [sql],
           "settings": {"device": "cpu", "dist_timeout_s": 60, "range_sort_rows": 0}}
    with pytest.raises(ExecutionError, match="overflow in window SUM"):
        run_job(3, job)


def test_carry_checks_the_total_of_every_rank():
    """The overflow check is over all ranks' absolute sums, also on the first rank (which
    adds nothing): each rank below 2**63, the total above."""
    name = "s"
    call = WindowCall("sum", (Col("v", INT64),), (), ("range", ("unbounded", 0), ("current", 0)))

    def row(rank: int) -> Chunk:
        def one(v, t=INT64):
            return Column(torch.tensor([v], dtype=t.torch_dtype), t)
        return Chunk({RANK: one(rank), ROWS: one(10), name: one(0), _count_of(name): one(10),
                      _abs_of(name): one(5e18, FLOAT64)}, 1, 0, torch.device("cpu"))

    _Carry([row(0)], 0, ((name, call),))
    with pytest.raises(ExecutionError, match="overflow"):
        _Carry([row(1), row(0)], 0, ((name, call),))


def test_global_windows_on_tpch(tpch_spread):
    queries = {"running": "select l_orderkey, l_linenumber, rank() over (order by l_shipdate) r, "
                          "sum(l_quantity) over (order by l_shipdate) s, avg(l_extendedprice) over (order by l_shipdate) a, "
                          "cume_dist() over (order by l_shipdate) c from lineitem where l_orderkey < 30000",
               "over_join": "select o_orderkey, dense_rank() over (order by c_nationkey, o_orderdate desc) d, "
                            "max(o_orderdate) over (order by c_nationkey) m from customer join orders on c_custkey = o_custkey "
                            "where o_totalprice > 300000"}
    check_on_ranks(tpch_spread, queries, 3, {"range_sort_rows": 0, "exchange": "blocking"}, final_order)
