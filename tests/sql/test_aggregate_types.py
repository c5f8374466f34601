"""Every aggregate over every numeric type, against DuckDB: integers of 8 to 64 bits (and the
unsigned ones Parquet can hold), REAL, DOUBLE and decimals, grouped, ungrouped and as
windows. SUM of a REAL column once answered 0.0 (its float64 sum was labelled float32)."""

import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables

D = decimal.Decimal
VALUES = [1, 2, None, 3, 100, -7, 5, None, 8, 9, 0, 3]
GROUPS = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3]
COLUMNS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "f32", "f64", "d41", "d183"]


@pytest.fixture(scope="module")
def num_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("numeric_types")
    absent = [None if v is None else abs(v) for v in VALUES]
    t = pa.table({
        "g": pa.array(GROUPS, pa.int32()),
        "o": pa.array(range(len(VALUES)), pa.int64()),
        "i8": pa.array(VALUES, pa.int8()), "i16": pa.array(VALUES, pa.int16()),
        "i32": pa.array(VALUES, pa.int32()), "i64": pa.array(VALUES, pa.int64()),
        "u8": pa.array(absent, pa.uint8()), "u16": pa.array(absent, pa.uint16()),
        "u32": pa.array(absent, pa.uint32()),
        "f32": pa.array([None if v is None else v * 1.5 for v in VALUES], pa.float32()),
        "f64": pa.array([None if v is None else v * 1.25 for v in VALUES], pa.float64()),
        "d41": pa.array([None if v is None else D(v) / 10 for v in VALUES], pa.decimal128(4, 1)),
        "d183": pa.array([None if v is None else D(v) * 1000 + D("0.125") for v in VALUES], pa.decimal128(18, 3)),
    })
    pq.write_table(t, root / "t.parquet", row_group_size=5)
    return root


@pytest.fixture(scope="module")
def num_duck(num_dir):
    return duckdb_tables(num_dir)


AGGREGATES = ["sum({})", "avg({})", "min({})", "max({})", "count({})", "stddev_samp({})", "stddev_pop({})",
              "var_samp({})", "var_pop({})", "median({})", "quantile_cont({}, 0.25)", "quantile_disc({}, 0.5)",
              "sum(distinct {})", "avg(distinct {})", "count(distinct {})", "arg_min({0}, o)", "arg_max(o, {0})",
              "sum({0}) filter (where {0} > 2)", "min({0}) filter (where {0} < 5)", "mad({})"]
WINDOWS = ["sum({0}) over (partition by g)", "sum({0}) over (order by o rows between 1 preceding and current row)",
           "avg({0}) over (order by o)", "min({0}) over (partition by g order by o)", "max({0}) over ()"]


@pytest.mark.parametrize("agg", AGGREGATES)
@pytest.mark.parametrize("grouped", [False, True], ids=["whole", "grouped"])
def test_aggregate_of_every_numeric_type(agg, grouped, num_dir, num_duck, connect, edge_settings):
    items = ", ".join(agg.format(c) for c in COLUMNS)
    sql = f"select g, {items} from t group by g" if grouped else f"select {items} from t"
    compare(connect(num_dir, **edge_settings).sql(sql).to_arrow(), num_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("window", WINDOWS)
def test_window_aggregate_of_every_numeric_type(window, num_dir, num_duck, connect, edge_settings):
    sql = f"select o, {', '.join(window.format(c) for c in COLUMNS)} from t"
    compare(connect(num_dir, **edge_settings).sql(sql).to_arrow(), num_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", [
    "select sum('inf'::float), sum('-inf'::real), sum(x) from (values (1.5::real), (2.25::real)) v(x)",
    "select sum(f32 * 1e30::real) from t",
])
def test_real_sums_are_doubles(sql, num_dir, num_duck, connect):
    ours = connect(num_dir).sql(sql).to_arrow()
    assert all(str(f.type) == "double" for f in ours.schema), ours.schema  # DuckDB's SUM(REAL) is a DOUBLE
    compare(ours, num_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("vals", [("-7.34", "-7.35"), ("7.34", "7.35"), ("-0.01", "-0.02"), ("-1.00", "-2.01"),
                                  ("0.00", "0.03", "0.04"), ("-0.01", "0.02")])
def test_decimal_quantiles_truncate_toward_zero(vals, num_dir, num_duck, connect):
    """DuckDB interpolates decimals in their scaled integers and truncates the result toward
    zero (the median of -7.34 and -7.35 is -7.34; sluice once truncated the step, -7.35)."""
    rows = ", ".join(f"({v}::decimal(4,2))" for v in vals)
    sql = f"select median(x), quantile_cont(x, 0.25), quantile_cont(x, 0.1) from (values {rows}) t(x)"
    compare(connect(num_dir).sql(sql).to_arrow(), num_duck.sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", [
    "select g, mode(x), mode(s), mode(d) from (values (1, 2, 'b', 1.5), (1, 2, 'a', 1.5), (1, 3, 'b', 2.0), "
    "(2, null, null, null), (2, 7, 'z', 0.25), (2, 7, 'z', 0.25), (2, null, null, null), (2, null, null, null), "
    "(3, null, null, null)) v(g, x, s, d) group by g",
    "select mode(x) from (values (5), (5), (1), (null)) v(x)",
    "select g, first(x order by y), last(x order by y), first(s order by y desc nulls first) from (values "
    "(1, 10, 3, 'p'), (1, null, 1, 'q'), (1, 30, 2, null), (2, 4, null, 'r'), (2, 5, 9, 's')) v(g, x, y, s) group by g",
])
def test_mode_first_last(sql, num_dir, num_duck, connect, edge_settings):
    """MODE (the most frequent non-NULL value; data without ties, where DuckDB takes the first
    seen) and FIRST / LAST with ORDER BY (a NULL value counts), against DuckDB."""
    compare(connect(num_dir, **edge_settings).sql(sql).to_arrow(), num_duck.sql(sql).to_arrow_table())
