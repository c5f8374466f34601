"""A numeric constant compared with a column of another type is converted to their common type
once, while binding (``comparison._fold_literal``), not on every chunk -- with the answers the
per-chunk conversion gave, and DuckDB's."""

import pytest

from sluice.testing.oracle import compare

#: Each side and direction: a decimal column against integer, decimal and float constants; an
#: integer column against decimal and wider constants; a double column against decimals; REAL.
QUERIES = [
    "select count(*) from lineitem where l_quantity >= 1 and l_quantity <= 11",
    "select count(*) from lineitem where 5 < l_quantity and 24.5 >= l_quantity",
    "select count(*) from lineitem where l_discount between 0.05 and 0.070",
    "select count(*) from lineitem where l_extendedprice > 50000.125",
    "select count(*) from lineitem where l_quantity = 2.0e1",
    "select count(*) from part where p_size <= 10.5 and p_size > 2.99",
    "select count(*) from part where p_size < 3000000000",
    "select count(*) from lineitem where l_linenumber <> 1.0",
    "select count(*) from lineitem where cast(l_extendedprice as double) < 901.005",
    "select count(*) from lineitem where cast(l_tax as real) = 0.02",
    "select count(*) from lineitem where cast(l_tax as real) < 0.025",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_folded_comparisons_match_duckdb(sql, tpch_dir, tpch_duck, connect):
    for settings in ({}, {"chunk_rows": 5000}):
        ours = connect(tpch_dir, **settings).sql(sql).to_arrow()
        compare(ours, tpch_duck.sql(sql).to_arrow_table())


def test_the_plan_holds_the_converted_constant(tpch_dir, connect):
    con = connect(tpch_dir)
    plan = con.sql("select count(*) from lineitem where l_quantity >= 1 and 24.5 >= l_quantity").explain()
    assert "l_quantity >= 1.00" in plan and "24.50 >= lineitem.l_quantity" in plan


def test_a_constant_the_conversion_would_refuse_stays_as_written(tpch_dir, connect):
    # 10**17 scaled to two decimals leaves 64 bits: not folded, so the refusal (sluice's decimals
    # are 64-bit) still comes only where rows meet it -- here none do.
    con = connect(tpch_dir)
    sql = "select count(*) from lineitem where l_orderkey < 0 and l_quantity < 100000000000000000"
    assert "100000000000000000" in con.sql(sql).explain()
    assert con.sql(sql).to_arrow().column(0).to_pylist() == [0]


ARITH = [
    "select sum(l_extendedprice * (1 - l_discount)), sum(1 + l_tax), sum(l_quantity - 0.5) from lineitem",
    "select sum(l_quantity / 2), sum(l_linenumber % 3), max(l_extendedprice / 7.5) from lineitem",
    "select sum(p_size + 2.25), sum(p_size * 1.5e0), min(3 - p_retailprice) from part",
]


@pytest.mark.parametrize("sql", ARITH)
def test_folded_arithmetic_matches_duckdb(sql, tpch_dir, tpch_duck, connect):
    ours = connect(tpch_dir).sql(sql).to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table())


def test_arithmetic_holds_the_converted_constant(tpch_dir, connect):
    plan = connect(tpch_dir).sql("select sum(l_extendedprice * (1 - l_discount)) from lineitem").explain()
    assert "(1.00 - lineitem.l_discount)" in plan
