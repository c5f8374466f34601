"""ORDER BY a LIST LIMIT k: each chunk is cut to the rows whose first element can still be among
the k best (``exec/list_topk.py``) before the whole lists are keyed. Against DuckDB on lists of
integers, strings (sharing long prefixes), floats (NaN, -0.0, infinities), booleans, dates and
decimals, with empty lists, NULL lists and NULL first elements, ASC / DESC, NULLS FIRST / LAST --
as a user runs it, in 7-row chunks and spilled (the ``con`` fixture) -- and the cut itself."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_answer

ROWS = 400


def _lists(rng, values: list, empty: float, null_head: float) -> list:
    out = []
    for _ in range(ROWS):
        r = rng.random()
        if r < 0.05:
            out.append(None)
        elif r < 0.05 + empty:
            out.append([])
        else:
            n = int(rng.integers(1, 4))
            lst = [values[int(rng.integers(0, len(values)))] for _ in range(n)]
            if rng.random() < null_head:
                lst[0] = None
            out.append(lst)
    return out


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("list_topk")
    rng = np.random.default_rng(9)
    words = ["", "a", "abcdefghij", "abcdefghik", "abcdefgh", "zz", "\u00fcber"]
    floats = [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf")]
    table = pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "i": pa.array(_lists(rng, [0, 1, 2, -7], 0.02, 0.02), pa.list_(pa.int64())),
        "few": pa.array(_lists(rng, [5, 6], 0.0, 0.0), pa.list_(pa.int32())),  # no empty list, no NULL head
        "s": pa.array(_lists(rng, words, 0.1, 0.05), pa.list_(pa.string())),
        "f": pa.array(_lists(rng, floats, 0.0, 0.1), pa.list_(pa.float64())),
        "b": pa.array(_lists(rng, [True, False], 0.01, 0.0), pa.list_(pa.bool_())),
        "d": pa.array(_lists(rng, [dt.date(2024, 1, 1), dt.date(1999, 12, 31)], 0.03, 0.03), pa.list_(pa.date32())),
        "m": pa.array(_lists(rng, [Decimal("1.00"), Decimal("-2.50")], 0.03, 0.03), pa.list_(pa.decimal128(10, 2))),
    })
    pq.write_table(table, d / "events.parquet", row_group_size=150)
    return d


@pytest.mark.parametrize("col", ["i", "few", "s", "f", "b", "d", "m"])
@pytest.mark.parametrize("order", ["", " desc", " nulls first", " desc nulls last"])
@pytest.mark.parametrize("k", [1, 6, 30])
def test_order_by_a_list_limit_equals_duckdb(col, order, k, con, duck):
    sql = f"select {col}, id from events order by {col}{order}, id limit {k}"
    compare(con.sql(sql).to_arrow(), duckdb_answer(duck, sql), order_cols=[1])


def test_the_cut_keeps_the_best_and_leaves_rows_out(events_dir, duck):
    import torch

    from sluice.arrow import arrow_to_column
    from sluice.exec.list_topk import list_candidates_mask
    arr = pq.read_table(events_dir / "events.parquet").column("i")
    col = arrow_to_column(arr)
    for asc in (True, False):
        mask = list_candidates_mask(col, 10, asc, False)
        assert mask is not None and int(mask.sum()) < ROWS  # it cuts
        best = duckdb_answer(duck, f"select id from events where i is not null order by i {'asc' if asc else 'desc'}, id "
                                   "limit 10").column("id").to_pylist()
        assert bool(mask[torch.tensor(best)].all())  # and keeps the 10 best
