"""GROUP BY key ranges from Parquet statistics (physical/key_ranges.py): lowering hands an
aggregation its integer keys' (min, max), and grouping then codes them without reading a range
back from the device per chunk (kernels/keys.py ``_int_codes``); answers stay DuckDB's, and a
value outside the statistics is an error, never a wrong group."""

from __future__ import annotations

import sys

import pytest
import torch

import sluice.physical.lower as lower_mod
from sluice.errors import DataError
from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.kernels import checks
from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, tpch_queries


def _aggregates(rel):
    op = rel._lower()
    return [o for o in op.walk() if isinstance(o, HashAggregateOp)]


@pytest.fixture
def range_readbacks(monkeypatch):
    """Counts the key ranges grouping reads back (``torch.aminmax`` called by ``_int_codes``)."""
    calls = []
    real = torch.aminmax

    def counting(*args, **kw):
        if sys._getframe(1).f_code.co_name == "_int_codes":
            calls.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(torch, "aminmax", counting)
    return calls


def test_ranges_come_from_statistics_through_joins_and_renames(tpch_dir, connect):
    con = connect(tpch_dir)
    (agg,) = _aggregates(con.sql(
        "select s, l_linenumber, count(*) from (select l_suppkey as s, l_linenumber, l_returnflag from lineitem "
        "join orders on l_orderkey = o_orderkey where o_orderdate < date '1995-01-01') t "
        "group by s, l_linenumber, l_returnflag"))
    assert agg.key_ranges == ((1, 1000), (1, 7), None)  # SF 0.1: 1,000 suppliers; a string key: none
    (agg,) = _aggregates(con.sql("select l_suppkey + 1, sum(l_tax) from lineitem group by 1"))
    assert agg.key_ranges is None  # an expression: no statistics


SQL = ("select l_suppkey, l_returnflag, l_linenumber, count(*), sum(l_quantity), min(l_shipdate) "
       "from lineitem where l_shipdate < date '1996-01-01' group by l_suppkey, l_returnflag, l_linenumber")


def test_grouping_reads_no_range_back_where_statistics_know_it(tpch_dir, tpch_duck, connect, range_readbacks,
                                                               monkeypatch):
    con = connect(tpch_dir, chunk_rows=50_000)
    compare(con.sql(SQL).to_arrow(), tpch_duck.sql(SQL).to_arrow_table(), [])
    assert range_readbacks == []
    # the same without the ranges: a read-back per chunk and integer key (the test can fail)
    monkeypatch.setattr(lower_mod, "key_ranges", lambda plan: None)
    compare(con.sql(SQL).to_arrow(), tpch_duck.sql(SQL).to_arrow_table(), [])
    assert len(range_readbacks) >= 12


@pytest.mark.parametrize("name", ["q01", "q03", "q04", "q10", "q12", "q13", "q18", "q21"])
def test_answers_unchanged(name, tpch_dir, tpch_duck, connect):
    sql = tpch_queries()[name]
    ours = connect(tpch_dir, chunk_rows=100_000).sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


@pytest.mark.parametrize("deferred", [False, True], ids=["at_once", "deferred"])
def test_a_value_outside_the_statistics_is_an_error(deferred, tpch_dir, connect, monkeypatch):
    """Statistics that lie (simulated: a range narrower than the values) fail the query in one
    line -- at once on a CPU, at the end where checks are deferred, as on a GPU."""
    monkeypatch.setattr(checks, "DEFER_ON_CPU", deferred)
    monkeypatch.setattr(lower_mod, "key_ranges", lambda plan: ((5, 10),) * len(plan.keys))
    with pytest.raises(DataError, match="outside its column's min/max statistics"):
        connect(tpch_dir).sql("select l_suppkey, count(*) from lineitem group by l_suppkey").to_arrow()
