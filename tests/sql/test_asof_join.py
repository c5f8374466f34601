"""ASOF JOIN against DuckDB on generated data: each left row with the right row of equal keys
whose value is nearest on the side the inequality allows (sluice.exec.asof_join).

Every inequality (>=, >, <=, <, either way round), none to several equality keys, string
keys whose dictionaries differ between the sides and between row groups, NULL keys (and
IS NOT DISTINCT FROM keys) and values, left values equal to right ones (> against >=), no match, empty sides, INNER / LEFT
/ RIGHT / FULL / SEMI / ANTI, USING, integer / double / decimal / date / timestamp values --
each in 3-row chunks and with every buffer spilled too (``edge_settings``), and under a host
budget far below the right side.

DuckDB picks any one of several right rows with equal keys and value (its choice differs
between runs and join kinds), so the right table ``b`` holds each value once; the table
``dup`` repeats them, and its queries show only what every choice agrees on (the value).
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.exec.asof_join import AsofJoinOp
from sluice.testing.oracle import compare, duckdb_tables

NAN = float("nan")


def write_asof_tables(root, seed: int = 7, rows: int = 300, row_group_size: int = 37) -> None:
    """Tables a (left), b (right, each value once), dup (right, values repeated) and e (empty)."""
    rng = np.random.default_rng(seed)

    def nulls(values, p):
        return [None if rng.random() < p else v for v in values]

    n = rows
    at = rng.integers(-20, 120, n)
    a = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "k1": pa.array(nulls(rng.integers(0, 6, n).tolist(), 0.05), pa.int32()),
        "k2": pa.array(nulls([["s", "tt", "u", "zz"][i] for i in rng.integers(0, 4, n)], 0.05)),
        "t": pa.array(nulls(at.tolist(), 0.05), pa.int64()),
        "f": pa.array(nulls((at * 0.5 + 0.25 * rng.integers(0, 2, n)).tolist(), 0.05)),
        "dec": pa.array(nulls([decimal.Decimal(int(v)) / 4 for v in at], 0.05), pa.decimal128(9, 2)),
        "d": pa.array(nulls([dt.date(2024, 1, 1) + dt.timedelta(days=int(v)) for v in at], 0.05)),
        "ts": pa.array(nulls([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(v) * 7) for v in at], 0.05),
                       pa.timestamp("us")),
    })
    m = rows * 2 // 3
    bt = rng.permutation(np.arange(0, 3 * m, 3))[:m] - 10  # every value once: no ties to break
    b = pa.table({
        "j": pa.array(range(m), pa.int64()),
        "k1": pa.array(nulls(rng.integers(0, 5, m).tolist(), 0.05), pa.int16()),
        "k2": pa.array(nulls([["u", "s", "v", "tt"][i] for i in rng.integers(0, 4, m)], 0.05)),
        "t": pa.array(nulls((bt // 2).tolist(), 0.05), pa.int32()),
        "f": pa.array(nulls((bt * 0.25).tolist(), 0.05)),
        "dec": pa.array(nulls([decimal.Decimal(int(v)) / 8 for v in bt], 0.05), pa.decimal128(9, 3)),
        "d": pa.array(nulls([dt.date(2024, 1, 1) + dt.timedelta(days=int(v) // 2) for v in bt], 0.05)),
        "ts": pa.array(nulls([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(v) * 3) for v in bt], 0.05),
                       pa.timestamp("us")),
    })
    dup = pa.table({
        "k1": pa.array(rng.integers(0, 4, m).tolist(), pa.int32()),
        "t": pa.array(rng.integers(0, 40, m).tolist(), pa.int64()),
        "v": pa.array(rng.integers(0, 1000, m).tolist(), pa.int64()),
    })
    pq.write_table(a, root / "a.parquet", row_group_size=row_group_size)
    pq.write_table(b, root / "b.parquet", row_group_size=row_group_size)
    pq.write_table(dup, root / "dup.parquet", row_group_size=row_group_size)
    pq.write_table(pa.table({"k1": pa.array([], pa.int32()), "t": pa.array([], pa.int64())}), root / "e.parquet")


#: name -> query; run in sluice and DuckDB and compared as multisets.
QUERIES = {
    "ge": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t >= b.t",
    "gt": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t > b.t",
    "le": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t <= b.t",
    "lt": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t < b.t",
    "flipped": "select a.id, b.j from a asof join b on b.t <= a.t and b.k1 = a.k1",
    "flipped_gt": "select a.id, b.j from a asof join b on b.t > a.t and b.k1 = a.k1",
    "two_keys": "select a.id, b.j, b.t from a asof join b on a.k1 = b.k1 and a.k2 = b.k2 and a.t >= b.t",
    "string_key": "select a.id, b.j from a asof left join b on a.k2 = b.k2 and a.t < b.t",
    "no_keys": "select a.id, b.j from a asof join b on a.t >= b.t",
    "no_keys_left": "select a.id, b.j from a asof left join b on a.t <= b.t",
    "no_keys_full": "select a.id, b.j from a asof full join b on a.t > b.t",
    "double": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.f >= b.f",
    "int_double": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t <= b.f",
    "decimal": "select a.id, b.j, b.dec from a asof join b on a.k2 = b.k2 and a.dec > b.dec",
    "date": "select a.id, b.j from a asof left join b on a.k1 = b.k1 and a.d >= b.d",
    "timestamp": "select a.id, b.j, b.ts from a asof join b on a.k1 = b.k1 and a.ts < b.ts",
    # strings as the value, in byte order (right rows repeat them: the matched value is shown)
    "string_value": "select a.id, b.k1, b.k2 from a asof join b on a.k1 = b.k1 and a.k2 >= b.k2",
    "string_value_lt": "select a.id, b.k2 from a asof left join b on a.k2 < b.k2",
    "string_value_right": "select b.k1, b.k2 from a asof right join b on a.k1 = b.k1 and a.k2 > b.k2",
    "left": "select a.id, a.t, b.j, b.t from a asof left join b on a.k1 = b.k1 and a.t >= b.t",
    "right": "select a.id, b.j from a asof right join b on a.k1 = b.k1 and a.t >= b.t",
    "full": "select a.id, b.j from a asof full join b on a.k1 = b.k1 and a.t <= b.t",
    "semi": "select a.id from a asof semi join b on a.k1 = b.k1 and a.t > b.t",
    "anti": "select a.id from a asof anti join b on a.k1 = b.k1 and a.t > b.t",
    "using": "select k1, t, a.id, b.j from a asof join b using (k1, t)",
    "using_left": "select * from a asof left join b using (k1, t)",
    # RIGHT / FULL ... USING: the merged columns are the right side's values / COALESCE of both
    "using_right": "select *, a.t as at, b.t as bt from a asof right join b using (k1, t)",
    "using_full": "select k1, t, a.id, b.j from a asof full join b using (k1, t)",
    "star": "select * from a asof join b on a.k1 = b.k1 and a.k2 = b.k2 and a.ts >= b.ts",
    "expressions": "select a.id, b.j from a asof join b on a.k1 + 1 = b.k1 and a.t * 2 >= b.t + 3",
    "where_both": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t >= b.t where a.id % 3 = 0 and b.j % 2 = 1",
    "where_left_outer": "select a.id, b.j from a asof left join b on a.k1 = b.k1 and a.t >= b.t "
                        "where a.k2 = 'tt' and b.j is null",
    "aggregate": "select a.k1, count(*), count(b.j), sum(a.t - b.t), max(b.t) from a asof left join b "
                 "on a.k1 = b.k1 and a.t >= b.t group by a.k1",
    "subquery_sides": "select x.id, y.j from (select * from a where t > 10) x asof join "
                      "(select * from b where k2 <> 'v') y on x.k1 = y.k1 and x.t >= y.t",
    "then_join": "select a.id, b.j, c.id from a asof join b on a.k1 = b.k1 and a.t >= b.t "
                 "join a c on c.id = b.j",
    # conditions on one side: the right rows failing them are not candidates, the left rows
    # failing them match nothing (DuckDB's meanings)
    "on_right_side": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t >= b.t and b.j % 3 <> 0",
    "on_left_side": "select a.id, b.j from a asof left join b on a.k1 = b.k1 and a.t >= b.t and a.id % 2 = 0",
    "on_both_one_side": "select a.id, b.j from a asof left join b on a.t < b.t and b.k2 <> 'v' and a.k2 = 'tt' "
                        "and b.f > 0",
    "on_false": "select a.id, b.j from a asof left join b on a.k1 = b.k1 and a.t >= b.t and false",
    "on_true_full": "select a.id, b.j from a asof full join b on a.k1 = b.k1 and a.t >= b.t and true",
    "semi_on_one_side": "select a.id from a asof semi join b on a.k1 = b.k1 and a.t >= b.t and b.j > 50 and a.id > 7",
    "anti_on_null": "select a.id from a asof anti join b on a.k1 = b.k1 and a.t >= b.t and null",
    # a condition reading both sides: the nearest right row passing it (a few candidates, or
    # -- passing rarely -- the whole side of the row's group)
    "both_sides": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.t >= b.t and a.id + b.j < 150",
    "both_sides_rare": "select a.id, b.j from a asof left join b on a.k1 = b.k1 and a.t <= b.t "
                       "and (a.id * 7 + b.j) % 23 = 0",
    "both_sides_no_keys": "select a.id, b.j, b.t from a asof left join b on a.t > b.t and a.k2 <> b.k2 "
                          "and a.f + b.f > 3",
    "both_sides_strings": "select a.id, b.j from a asof join b on a.k1 = b.k1 and a.ts < b.ts and a.k2 <> b.k2",
    # SEMI / ANTI with a condition reading both sides: whether some right row passes it
    "semi_reading_both": "select a.id from a asof semi join b on a.k1 = b.k1 and a.t >= b.t and a.id + b.j > 150",
    "anti_reading_both": "select a.id from a asof anti join b on a.k2 = b.k2 and a.t >= b.t and a.f + b.f > 3",
    # IS NOT DISTINCT FROM: NULL keys match each other
    "not_distinct": "select a.id, b.j from a asof left join b on a.k1 is not distinct from b.k1 and a.t >= b.t",
    "not_distinct_strings": "select a.id, b.j from a asof right join b on a.k2 is not distinct from b.k2 "
                            "and a.k1 = b.k1 and a.ts < b.ts",
    "empty_right": "select a.id, e.t from a asof left join e on a.k1 = e.k1 and a.t >= e.t",
    "empty_right_inner": "select a.id from a asof join e on a.t >= e.t",
    "empty_left": "select e.t, b.j from e asof right join b on e.k1 = b.k1 and e.t >= b.t",
    # right rows repeated: only the value is the same whichever DuckDB picks
    "dup_value": "select a.id, dup.t from a asof join dup on a.k1 = dup.k1 and a.t >= dup.t",
    "dup_left_lt": "select a.id, dup.t from a asof left join dup on a.k1 = dup.k1 and a.t < dup.t",
}


#: queries whose DuckDB answer is wrong, with an equivalent query DuckDB answers right. DuckDB
#: 2.0.1's ASOF RIGHT JOIN with an empty (or one-row) left side drops every right row of the
#: first key partition (161 of b's 200 rows here, k1 = 0 missing) and at times never returns
#: under several threads; every right row must come back, with the left columns NULL.
ORACLE_QUERIES = {
    "empty_left": "select cast(null as bigint) as t, b.j from b",
}


@pytest.fixture(scope="module")
def asof_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("asof")
    write_asof_tables(root)
    return root


@pytest.fixture(scope="module")
def asof_duck(asof_dir):
    return duckdb_tables(asof_dir)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_asof_join(name, asof_dir, asof_duck, connect, edge_settings):
    sql = QUERIES[name]
    oracle = ORACLE_QUERIES.get(name, sql)
    compare(connect(asof_dir, **edge_settings).sql(sql).to_arrow(), asof_duck.sql(oracle).to_arrow_table())


@pytest.mark.parametrize("name", ["ge", "lt", "two_keys", "string_key", "no_keys_full", "date", "timestamp", "decimal",
                                  "not_distinct", "dup_left_lt", "double", "both_sides_rare", "string_value"])
def test_ranked_index(name, asof_dir, asof_duck, connect, monkeypatch):
    """Groups and values ranked (as where their ranges are too wide for one int64) answer as
    the direct codes and offsets do."""
    from sluice.exec import asof_join
    monkeypatch.setattr(asof_join, "FORCE_RANKED", True)
    sql = QUERIES[name]
    compare(connect(asof_dir, chunk_rows=50).sql(sql).to_arrow(), asof_duck.sql(sql).to_arrow_table())


def test_right_side_unique(asof_duck):
    """The premise of the queries on b: no two right rows DuckDB could choose between."""
    for col in ("t", "f", "dec", "d", "ts"):
        dups = asof_duck.sql(f"select count(*) from (select k1, k2, {col} from b where {col} is not null "
                             f"group by all having count(*) > 1)").fetchall()[0][0]
        assert dups == 0, col


def test_spills_and_matches(asof_dir, asof_duck, connect):
    """force_spill: the right side's partitions go to disk and are joined one at a time."""
    sql = QUERIES["left"]
    rel = connect(asof_dir, force_spill=True).sql(sql)
    compare(rel.to_arrow(), asof_duck.sql(sql).to_arrow_table())
    op, ctx = rel.last_run
    asof = [o for o in op.walk() if isinstance(o, AsofJoinOp)]
    assert asof and ctx.runs[asof[0]].memory.spilled_bytes > 0


def test_budget_below_the_right_side(tpch_dir, tpch_duck, connect):
    """orders as of lineitem (600 K right rows, many per order and date: only the matched value
    is compared) under a 16 MiB host budget: it spills, and answers as DuckDB does."""
    sql = ("select count(*), count(l_shipdate), sum(l_shipdate - o_orderdate), max(l_shipdate) "
           "from orders asof left join lineitem on o_orderkey = l_orderkey and o_orderdate + 60 <= l_shipdate")
    rel = connect(tpch_dir, host_memory_limit=16 << 20).sql(sql)
    compare(rel.to_arrow(), tpch_duck.sql(sql).to_arrow_table())
    _, ctx = rel.last_run
    assert ctx.spilled_bytes() > 0


def test_explain_names_it(asof_dir, connect):
    text = connect(asof_dir).sql(QUERIES["no_keys"]).explain()
    assert "AsofJoin inner [a.t >= b.t] (no equality keys" in text


REFUSED = {
    "select a.id from a asof full join b on a.k1 = b.k1 and a.t >= b.t and a.id + b.j < 100":
        (UnsupportedError, "ASOF FULL JOIN with a condition reading both sides"),
    "select a.id from a asof right join b on a.k1 = b.k1 and a.t >= b.t and a.id < 5":
        (UnsupportedError, "ASOF RIGHT JOIN with a condition on one side"),
    "select a.id from a asof join b on a.k2 >= b.t": (PlanError, "cannot compare string with int32"),
    "select a.id from a asof join b on a.k1 = b.k1": (PlanError, "needs an inequality"),
    "select a.id from a asof join b on a.t >= b.t and a.t <= b.t": (PlanError, "one inequality"),
    "select a.id from a asof semi join b on a.t >= b.t and a.id < b.j": (PlanError, "one inequality"),
    "select a.id from a asof join b on a.t >= b.t and a.k1 = (select max(k1) from b)":
        (UnsupportedError, "subqueries in the ON condition of an ASOF JOIN"),
}


@pytest.mark.parametrize("sql", sorted(REFUSED))
def test_refused_in_one_line(sql, asof_dir, asof_duck, connect):
    cls, text = REFUSED[sql]
    with pytest.raises(cls) as ei:
        connect(asof_dir).sql(sql).to_arrow()
    assert text in str(ei.value) and "\n" not in str(ei.value)
