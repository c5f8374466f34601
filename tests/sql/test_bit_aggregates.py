"""BIT_AND / BIT_OR / BIT_XOR as aggregates against DuckDB: over each integer type (negatives,
the types' ends, the sign bit) and BIT values, by group, with NULLs, empty input, DISTINCT, FILTER
and ROLLUP, in tiny chunks and spilled (partial states merged); BIT values of different lengths
are DuckDB's error; other types and windows are one-line errors."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("bit_aggregates")
    r = random.Random(47)
    n = 60

    def ints(bits):
        lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
        return [None if r.random() < .15 else r.choice([lo, hi, -1, 0, r.randint(lo, hi), r.randint(0, min(hi, 255))])
                for _ in range(n)]
    pq.write_table(pa.table({"g": pa.array([i % 6 for i in range(n)], pa.int32()),
                             "a": pa.array(ints(8), pa.int8()), "b": pa.array(ints(16), pa.int16()),
                             "c": pa.array(ints(32), pa.int32()), "d": pa.array(ints(64), pa.int64()),
                             "e": pa.array([None if i % 6 == 5 else i | 6 for i in range(n)], pa.int64()),
                             # BIT values as DuckDB writes them (text), as long as each other within a group
                             "s": [None if i % 13 == 4 else "".join(r.choice("01") for _ in range(3 + i % 6))
                                   for i in range(n)]}),
                   root / "t.parquet", row_group_size=7)
    return root


QUERIES = [
    "select g, bit_and(a), bit_or(a), bit_xor(a), bit_and(b), bit_or(b), bit_xor(b) from t group by g",
    "select g, bit_and(c), bit_or(c), bit_xor(c), bit_and(d), bit_or(d), bit_xor(d) from t group by g",
    "select bit_and(a), bit_or(b), bit_xor(c), bit_and(d), bit_and(e), bit_or(e), bit_xor(e) from t",
    "select g, bit_and(e), bit_or(e), bit_xor(e) from t group by g",
    "select bit_xor(distinct d), bit_or(distinct a), bit_and(distinct e) from t",
    "select g, bit_xor(c) filter (where g > 2), bit_and(e) filter (where d > 0) from t group by g",
    "select g, bit_or(c), bit_xor(e) from t group by rollup(g)",
    "select bit_and(d), bit_or(d), bit_xor(d) from t where g > 100",
    "select bit_and(3), bit_and(null), bit_or(-5), bit_xor(1)",
    "select g, cast(bit_and(s::bit) as varchar), cast(bit_or(s::bit) as varchar), cast(bit_xor(s::bit) as varchar), "
    "cast(bit_xor(distinct s::bit) as varchar) from t group by g",
    "select g, cast(bit_and(s::bit) as varchar) from t where g > 10 group by g",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [("select bit_and(cast(g as double)) from t", PlanError),
                                       ("select bit_or(g = 1) from t", PlanError),
                                       ("select bit_xor(cast(g as varchar)) from t", PlanError),
                                       ("select bit_and(s::bit) from t", ExecutionError),
                                       ("select bit_xor(s::bit) from t where g in (1, 2)", ExecutionError),
                                       ("select bit_and(g) over (partition by g) from t", UnsupportedError),
                                       ("select bit_and(g, g) from t", PlanError)])
def test_one_line_errors(sql, error, data, connect):
    if error is ExecutionError:  # DuckDB's own error (bit strings of different sizes)
        with pytest.raises(Exception, match="bit strings of different sizes"):
            duckdb_tables(data).sql(sql).fetchall()
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()
