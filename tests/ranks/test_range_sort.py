"""No funnel under ORDER BY (issue 52 item 3): a sort without LIMIT over several ranks runs by
ranges of its keys -- splitters sampled on every rank, each range sorted on its rank, the sorted
ranges gathered to rank 0 in rank order -- and answers exactly as DuckDB, in DuckDB's order:
several keys, both directions, NULLs first and last, ties (a key with few values), strings whose
dictionaries differ between row groups, floats with NaN and -0.0, decimals, dates, an OFFSET,
inputs empty on some ranks or everywhere, small chunks and forced spilling."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ranks import check_on_ranks

import sluice
from sluice.exec.driver import explain as explain_ops
from sluice.physical.lower import lower_plan


@pytest.fixture(scope="module")
def sort_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("range_sort")
    n = 900
    words = ["apple", "Banana", "cherry", "date", "elder", "fig", "grape", "", "kiwi", "lemon", "é", "z"]
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "g": pa.array([None if i % 17 == 0 else i % 4 for i in range(n)], pa.int32()),  # ties and NULLs
        "x": pa.array([None if i % 7 == 0 else (i * 7919) % 1009 - 500 for i in range(n)], pa.int64()),
        "s": pa.array([None if i % 11 == 0 else words[(i // 60 + i % 5) % len(words)] + str(i % 3)
                       for i in range(n)], pa.string()),  # each row group its own dictionary
        "f": pa.array([[0.0, -0.0, float("nan"), 1.5, -2.25, None, float("inf")][i % 7] for i in range(n)],
                      pa.float64()),
        "d": pa.array([None if i % 5 == 0 else D(f"{(i % 13) - 6}.{i % 4}5") for i in range(n)],
                      pa.decimal128(9, 2)),
        "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=(i * 37) % 400) for i in range(n)], pa.date32()),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=60)  # 15 row groups: every rank a share
    pq.write_table(t.slice(0, 50), root / "small.parquet")  # one row group: one rank has it all
    pq.write_table(t.slice(0, 0), root / "empty.parquet")
    return root


QUERIES = {
    "int_asc": "select id, x from t order by x, id",
    "int_desc_nulls_first": "select id, x from t order by x desc nulls first, id",
    "ties_then_key": "select g, id from t order by g nulls first, id desc",
    "strings": "select s, id from t order by s, id",
    "strings_desc": "select s, id from t order by s desc nulls last, id",
    "floats": "select f, id from t order by f, id",
    "decimal_date": "select d, day, id from t order by d desc, day, id",
    "expression": "select id, x * 2 + g as y from t order by x * 2 + g nulls first, id",
    "filtered": "select id, s from t where x > 100 order by s, id",
    "offset": "select id, x from t order by x desc, id offset 37",
    "one_group": "select id, s from small order by s desc, id",
    "all_filtered_away": "select id from t where x > 100000 order by id",
    "empty": "select id from empty order by id",
    "after_aggregate": "select g, count(*) c, sum(x) sx from t group by g order by sx desc, g",
    "after_join": "select a.id, b.s from t a join small b on a.x = b.x order by b.s, a.id",
}


@pytest.mark.parametrize("ranks", [2, 3])
def test_range_sorts_equal_duckdb(ranks, sort_dir):
    check_on_ranks(sort_dir, QUERIES, ranks, {"range_sort_rows": 0})


def test_range_sorts_small_chunks_spilled_tensor_wire(sort_dir):
    check_on_ranks(sort_dir, QUERIES, 3, {"range_sort_rows": 0, "chunk_rows": 13, "force_spill": True,
                                          "exchange_wire": "tensor", "exchange_batch_bytes": 4096})


def test_range_sort_on_tpch(tpch_spread):
    queries = {"lineitem": "select l_orderkey, l_linenumber, l_shipdate from lineitem "
                           "order by l_shipdate desc, l_orderkey, l_linenumber",
               "q18_like": "select c_name, o_orderkey, o_totalprice from customer join orders on c_custkey = o_custkey "
                           "where o_totalprice > 400000 order by o_totalprice desc, o_orderkey"}
    check_on_ranks(tpch_spread, queries, 3, {"range_sort_rows": 0, "exchange": "blocking"})


def _explain(data, sql: str, world: int, **settings) -> list[str]:
    con = sluice.connect(data, device="cpu", **settings)
    return [ln.strip() for ln in explain_ops(lower_plan(con.sql(sql).plan, con.config, 0, world))]


def test_no_row_gathered_before_it_is_sorted(sort_dir):
    """The plan: the input exchanged by ranges, sorted on each rank, gathered in rank order --
    no gather below the sort, no sort above the gather."""
    lines = _explain(sort_dir, QUERIES["strings"], 3, range_sort_rows=0)
    i = lines.index("Gather to rank 0 in rank order")
    assert lines[i + 1].startswith("Sort [") and lines[i + 2].startswith("Exchange range(")
    assert not any(ln.startswith("Sort") for ln in lines[:i]), lines
    assert "Gather to rank 0" not in lines, lines


def test_small_sorts_and_limits_still_gather(sort_dir):
    """Below ``range_sort_rows`` (and under a LIMIT: each rank's top rows) rows are gathered."""
    assert "Exchange range(" not in " ".join(_explain(sort_dir, QUERIES["strings"], 3))
    lines = _explain(sort_dir, "select id from t order by x limit 5", 3, range_sort_rows=0)
    assert "Gather to rank 0" in lines and not any("range(" in ln for ln in lines)


def test_bad_setting_is_one_line():
    with pytest.raises(sluice.errors.ConfigError, match="range_sort_rows"):
        sluice.connect(device="cpu", range_sort_rows=-2)
