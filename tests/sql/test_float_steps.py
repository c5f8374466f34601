"""ROUND_EVEN / ROUNDBANKERS and NEXTAFTER against DuckDB: over doubles, REALs, decimals and
integers, exact halves (to the even neighbour) and doubles just off a half (by their exact
binary value: 2.85 up, 0.15 down), negative and huge precisions, NULLs, integer overflow as
DuckDB's error; NEXTAFTER's results compared bit for bit (REAL and DOUBLE, NaN, infinity, -0)."""

import math
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("float_steps")
    r = random.Random(12)
    n = 80
    halves = [r.randint(-999, 999) + 0.5 for _ in range(n // 4)]
    near = [r.randint(-99, 99) * 5 / 100 for _ in range(n // 4)]  # 2.85, 0.15, ... (not exact in binary)
    spread = [r.randint(-99999, 99999) / 10 ** r.randint(0, 4) for _ in range(n // 2)]
    f = [None if i % 13 == 0 else v for i, v in enumerate(halves + near + spread)]
    pq.write_table(pa.table({
        "id": pa.array(range(n), pa.int32()), "f": pa.array(f, pa.float64()), "r": pa.array(f, pa.float32()),
        "d": pa.array([None if v is None else round(v, 2) for v in f], pa.float64()).cast(pa.decimal128(9, 2)),
        "i": pa.array([None if v is None else int(v * 10) for v in f], pa.int32()),
        "t": pa.array([None if v is None else max(-128, min(127, int(v) % 120)) for v in f], pa.int8()),
        "g": pa.array([r.choice([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e308, 5e-324, 99.0])
                       for _ in range(n)], pa.float64())}), root / "t.parquet", row_group_size=16)
    return root


@pytest.mark.parametrize("digits", [-3, -1, 0, 1, 2, 5, 400, -400])
def test_round_even_as_duckdb(digits, data, connect):
    sql = (f"select id, roundbankers(f, {digits}), round_even(r, {digits}), roundbankers(d, {digits}), "
           f"round_even(i, {min(digits, 2)}), roundbankers(t, {max(min(digits, 0), -2)}) from t")
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


def test_round_even_constants(data, connect):
    sql = ("select roundbankers(45, -1), roundbankers(35, -1), roundbankers(45.5, 0), roundbankers(44.5, 0), "
           "roundbankers(-45.55, 1), roundbankers(0.125::double, 2), roundbankers(0.375::double, 2), "
           "roundbankers(2.85::double, 1), roundbankers(0.15::double, 1), roundbankers(NULL, 1), roundbankers(45, NULL), "
           "roundbankers(-250, -2), roundbankers(150, -2), roundbankers(45.5::decimal(18, 1), -30)")
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [("select roundbankers(127::tinyint, -1)", ExecutionError),
                                       ("select roundbankers(9223372036854775807, -19)", ExecutionError),
                                       ("select roundbankers(d, id) from t", PlanError),
                                       ("select roundbankers('4.5', 0)", PlanError),
                                       ("select roundbankers(4.5)", PlanError),
                                       ("select nextafter('a', 'b')", PlanError),
                                       ("select nextafter(1)", PlanError)])
def test_errors(sql, error, data, connect):
    with pytest.raises(duckdb.Error):
        duckdb_tables(data).sql(sql).fetchall()
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()


def test_column_precision_refused(data, connect):
    """DuckDB takes a column as a DOUBLE's precision; sluice's kernel takes a constant."""
    with pytest.raises(UnsupportedError):
        connect(str(data)).sql("select roundbankers(f, id) from t").to_arrow()


def _bits(rows):
    return [tuple(repr(v) for v in row) for row in rows]


@pytest.mark.parametrize("sql", [
    "select id, nextafter(f, g), nextafter(g, f), nextafter(g, 0), nextafter(r, 0::float), nextafter(r, 100::float) from t",
    "select id, nextafter(r, i), typeof(nextafter(r, i)) from t",
    "select id, nextafter(d, i), nextafter(i, 1), nextafter(null, f), nextafter(f, null) from t",
])
def test_nextafter_bit_for_bit(sql, data, connect):
    if "typeof" in sql:  # (sluice's TYPEOF names its own types: compare the values only)
        sql = sql.replace(", typeof(nextafter(r, i))", "")
    ours = [tuple(row.values()) for row in connect(str(data)).sql(sql + " order by id").to_arrow().to_pylist()]
    theirs = duckdb_tables(data).sql(sql + " order by id").fetchall()
    assert _bits(ours) == _bits(theirs)


def test_nextafter_types(data, connect):
    for sql, kind in [("select nextafter(r, 2) from t", pa.float32()), ("select nextafter(r, i) from t", pa.float32()),
                      ("select nextafter(f, r) from t", pa.float64()), ("select nextafter(i, 1) from t", pa.float64())]:
        assert connect(str(data)).sql(sql).to_arrow().schema.field(0).type == kind
        assert duckdb_tables(data).sql(sql).to_arrow_table().schema.field(0).type == kind
