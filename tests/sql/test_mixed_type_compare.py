"""Comparisons of a column with a constant of another type where the conversion is inexact
(2**53 + 1 as a double, 0.1 and 2**24 + 1 as REAL) or the types are far apart (a boolean with a
number): the answers equal DuckDB's with row-group pruning on and off. Pruning once compared
the statistics exactly where the query compared converted values (a row group of 2**53 + 1
ruled out by ``x = 9007199254740993.0``), and a boolean once met a decimal's raw integer
(``b = 1.0`` matched nothing)."""

import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect

BIG = 2 ** 53
QUERIES = [
    "select count(*) from m where i = 9007199254740993.0",
    "select count(*) from m where i <= 9007199254740992e0",
    "select count(*) from m where i = cast(9007199254740993 as real)",
    "select count(*) from m where i < 9007199254740992.5",
    "select count(*) from m where f = 9007199254740993",
    "select count(*) from m where r = 0.1",
    "select count(*) from m where r <= 0.1",
    "select count(*) from m where r = 16777217",
    "select count(*) from m where b = 1.0",
    "select count(*) from m where b <> 0.0",
    "select count(*) from m where 1 = b",
    # A decimal past 2**53 as a double: DuckDB's conversion, not one rounded division of the
    # converted raw value (...993.0 was ...994 here: rows between them were counted wrongly)
    "select count(*) from m where f <= 9007199254740993.0",
    "select count(*) from m where f >= 9007199254740993.0",
    "select count(*) from m where f < 9007199254740995.0",
    "select count(*) from m where f > -9007199254740993.0",
    "select count(*) from m where d::double = 9007199254740992.0",
    "select count(*) from m where d::double < f",
    "select d::double, d::real, d + 0.5e0 from m order by 1",
]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    vals = [BIG - 1, BIG, BIG + 1, BIG + 2, 0, 7]
    pq.write_table(pa.table({
        "i": pa.array(vals * 2, pa.int64()),
        "f": pa.array([float(v) for v in vals] * 2, pa.float64()),
        "r": pa.array([0.1, 0.1, 16777216.0, 16777216.0, 0.5, -0.1] * 2, pa.float32()),
        "b": pa.array([True, False, None, True, True, False] * 2, pa.bool_()),
        "d": pa.array([decimal.Decimal(f"{v}.{v % 10}") for v in vals] * 2, pa.decimal128(18, 1))}),
        root / "m.parquet", row_group_size=2)
    return root


@pytest.mark.parametrize("pruning", [True, False])
@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(sql, pruning, mixed, connect):
    ours = connect(mixed, row_group_pruning=pruning).sql(sql).to_arrow()
    compare(ours, duckdb_connect(mixed).sql(sql).to_arrow_table())
