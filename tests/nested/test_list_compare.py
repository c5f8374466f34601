"""Comparisons of LISTs of numbers, dates, booleans and decimals answer as DuckDB's
(:mod:`sluice.kernels.list_compare`, element by element without order keys): NULL elements
above every value and equal to each other, a prefix first, NaN above +inf and -0.0 equal to 0.0,
NULL and empty lists, a constant on either side, column against column -- as a user runs it, in
7-row chunks and spilled (the ``con`` fixture)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.testing.oracle import compare, duckdb_answer

ROWS = 300
OPS = ["=", "<>", "<", "<=", ">", ">="]


def _lists(rng, values: list, null_share: float = 0.15) -> list:
    out = []
    for _ in range(ROWS):
        r = rng.random()
        if r < 0.05:
            out.append(None)
        else:
            n = int(rng.integers(0, 4))
            out.append([None if rng.random() < null_share else values[int(rng.integers(0, len(values)))]
                        for _ in range(n)])
    return out


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("list_compare")
    rng = np.random.default_rng(5)
    floats = [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf")]
    decs = [Decimal("1.00"), Decimal("-2.50"), Decimal("0.01")]
    dates = [dt.date(2024, 1, 1), dt.date(1999, 12, 31)]
    table = pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "a": pa.array(_lists(rng, [0, 1, 2]), pa.list_(pa.int64())),
        "b": pa.array(_lists(rng, [0, 1, 2]), pa.list_(pa.int32())),
        "f": pa.array(_lists(rng, floats), pa.list_(pa.float64())),
        "g": pa.array(_lists(rng, floats), pa.list_(pa.float64())),
        "d": pa.array(_lists(rng, decs), pa.list_(pa.decimal128(10, 2))),
        "e": pa.array(_lists(rng, decs), pa.list_(pa.decimal128(10, 2))),
        "t": pa.array(_lists(rng, dates), pa.list_(pa.date32())),
        "u": pa.array(_lists(rng, dates), pa.list_(pa.date32())),
        "p": pa.array(_lists(rng, [True, False]), pa.list_(pa.bool_())),
        "q": pa.array(_lists(rng, [True, False]), pa.list_(pa.bool_())),
    })
    pq.write_table(table, d / "lists.parquet", row_group_size=100)
    return d


QUERIES = [
    "select id, " + ", ".join(f"a {op} b" for op in OPS) + " from lists order by id",
    "select id, " + ", ".join(f"f {op} g" for op in OPS) + " from lists order by id",
    "select id, " + ", ".join(f"d {op} e" for op in OPS) + " from lists order by id",
    "select id, " + ", ".join(f"t {op} u" for op in OPS) + " from lists order by id",
    "select id, " + ", ".join(f"p {op} q" for op in OPS) + " from lists order by id",
    "select id, a < [1], a >= [1, null], [1, null] > a, a = [], a <> [0, 1], [] < a, a <= [2, 2, 2, 2] "
    "from lists order by id",
    "select id, f < [0.0::double], f = [-0.0::double, 'nan'::double], f > ['inf'::double], ['nan'::double] <= f from lists order by id",
    "select id, a = a, f = f, a is distinct from b, a is not distinct from [null::bigint] from lists order by id",
    "select count(*), count(a < b), sum((a > b)::int) from lists where a < [2] or f >= [1.5::double]",
]


@pytest.mark.parametrize("sql", QUERIES, ids=[f"q{i}" for i in range(len(QUERIES))])
def test_list_comparisons_answer_as_duckdb(sql, con, duck):
    compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), [0] if "order by id" in sql else None)


@pytest.fixture(scope="module")
def long_dir(tmp_path_factory):
    """Lists of up to 9 elements over a two-value alphabet with NULLs: many rows agree on more
    positions than :data:`~sluice.kernels.list_compare.POSITIONS` and are decided by the
    all-elements kernel (the path after the position-by-position one)."""
    d = tmp_path_factory.mktemp("list_compare_long")
    rng = np.random.default_rng(210_000)

    def lists():
        return [None if rng.random() < 0.05 else
                [None if rng.random() < 0.1 else int(rng.integers(0, 2)) for _ in range(int(rng.integers(0, 10)))]
                for _ in range(120)]
    pq.write_table(pa.table({"id": pa.array(range(120), pa.int64()), "a": pa.array(lists(), pa.list_(pa.int64())),
                             "b": pa.array(lists(), pa.list_(pa.int64())),
                             "f": pa.array([None if x is None else [float(v) if v is not None else None for v in x]
                                            for x in lists()], pa.list_(pa.float64()))}),
                   d / "lists.parquet", row_group_size=50)
    return d


def test_lists_agreeing_past_the_positions_answer_as_duckdb(long_dir, monkeypatch):
    """Rows equal on their first positions go to the all-elements kernel: the same answers
    whether it decides from the fifth position on or (forced) from the second, in 7-row
    chunks too."""
    import duckdb

    from sluice.kernels import list_compare
    sql = ("select id, " + ", ".join(f"a {op} b" for op in OPS) + ", a < [0, 0, 0, 0, 0, 1], "
           "[1, null, 1, 0, 1] <= a, f > [0.0::double, 1.0, 0.0, 1.0, 1.0], a = a from lists order by id")
    duck = duckdb.connect()
    duck.execute(f"create view lists as select * from read_parquet('{long_dir / 'lists.parquet'}')")
    want = duckdb_answer(duck, sql)
    for positions, settings in ((list_compare.POSITIONS, {}), (1, {}), (1, {"chunk_rows": 7})):
        monkeypatch.setattr(list_compare, "POSITIONS", positions)
        con = sluice.connect(str(long_dir), device="cpu", **settings)
        compare(con.sql(sql).to_arrow(), want, [0])
