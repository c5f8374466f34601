"""EQUI_WIDTH_BINS(min, max, bin_count, nice_rounding) of constants against DuckDB: integers
(up to BIGINT's ends, where DuckDB's bounds wrap and the first becomes max), doubles and
decimals (the nice steps, std::round's halves), dates and timestamps (nice calendar steps at
every unit), each with and without nice rounding, the result typed as ``max``; NULLs; DuckDB's
errors as one line; column arguments refused."""

import datetime as dt
import random

import pytest

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def empty_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bins")


def _same(sql, root, connect):
    ours = connect(root).sql(sql).to_arrow()
    theirs = duckdb_connect(root).sql(sql).to_arrow_table()
    compare(ours, theirs)
    for a, b in zip(ours.schema, theirs.schema):  # the lists' element types, as DuckDB's
        assert getattr(a.type, "value_type", a.type) == getattr(b.type, "value_type", b.type), (a.name, a.type, b.type)


def _cases(r: random.Random, make, n: int) -> str:
    return ", ".join(f"equi_width_bins({make(r)}, {r.choice([1, 2, 3, 5, 7, 10, 13, 40])}, "
                     f"{r.choice(['true', 'false'])}) AS c{i}" for i in range(n))


def _ints(r):
    lo = r.choice([0, -10, 1, 99, -1000, r.randint(-10 ** 6, 10 ** 6), -2 ** 63, r.randint(-10 ** 17, 0)])
    hi = lo + r.choice([0, 1, 2, 9, 10, 101, 1734, r.randint(0, 10 ** 7), 2 ** 62])
    return f"{lo}, {min(hi, 2 ** 63 - 1)}"


def _doubles(r):
    lo = r.choice([0.0, -1.0, 0.5, r.uniform(-100, 100), -1e308, r.uniform(-1e-3, 0)])
    hi = lo + r.choice([0.0, 1.0, 6.347, 3.974, 9.0, r.uniform(0, 1000), r.uniform(0, 1e-2), 1e308])
    return f"'{lo!r}'::DOUBLE, '{hi!r}'::DOUBLE"


def _timestamps(r):
    base = r.randint(0, 10 ** 9) * 1_000_000 + r.choice([0, r.randint(0, 999_999)])
    span = r.choice([2, 10 ** 6, 59 * 10 ** 6, 3_600 * 10 ** 6, 86_400 * 10 ** 6 - 7, 40 * 86_400 * 10 ** 6,
                     400 * 86_400 * 10 ** 6 + 12_345, r.randint(0, 10 ** 15)])
    return f"TIMESTAMP '{_ts(base)}', TIMESTAMP '{_ts(base + span)}'"


def _ts(us: int) -> str:
    return str(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us))


@pytest.mark.parametrize("family", [_ints, _doubles, _timestamps])
def test_random_bounds(family, empty_dir, connect):
    r = random.Random(family.__name__)
    _same(f"select {_cases(r, family, 40)}", empty_dir, connect)


def test_types_and_edges(empty_dir, connect):
    _same("select equi_width_bins(0, 10, 2, true) a, equi_width_bins(0::TINYINT, 100::TINYINT, 2, true) b, "
          "equi_width_bins(0, 101.5, 5, true) c, equi_width_bins(0.0, 9.0, 7, false) d, "
          "equi_width_bins(0::DECIMAL(18,3), 10::DECIMAL(18,3), 3, false) e, "
          "equi_width_bins(DATE '1992-01-01', DATE '2000-01-01', 5, true) f, "
          "equi_width_bins(0::FLOAT, 1::FLOAT, 3, false) g, equi_width_bins(1, 1, 3, true) h, "
          "equi_width_bins(0, 10, 5999, true) i, equi_width_bins(-9223372036854775808, 9223372036854775807, 5, true) j, "
          "equi_width_bins(-1e308, 1e308, 5, true) k, equi_width_bins(0, 1, NULL, true) l", empty_dir, connect)


@pytest.mark.parametrize("sql, error", [
    ("equi_width_bins(-0.0, -1.0, 5, true)", ExecutionError),
    ("equi_width_bins(0.0, 'inf'::double, 5, true)", ExecutionError),
    ("equi_width_bins(0.0, 1.0, -1, true)", ExecutionError),
    ("equi_width_bins(0.0, 1.0, 99999999, true)", ExecutionError),
    ("equi_width_bins('a'::VARCHAR, 'z'::VARCHAR, 2, true)", PlanError),
])
def test_errors(sql, error, empty_dir, connect):
    with pytest.raises(Exception):
        duckdb_connect(empty_dir).sql(f"select {sql}").fetchall()
    with pytest.raises(error):
        connect(empty_dir).sql(f"select {sql}").to_arrow()


def test_column_arguments_refused(tmp_path, connect):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "t.parquet")
    with pytest.raises(UnsupportedError, match="EQUI_WIDTH_BINS"):
        connect(tmp_path).sql("select equi_width_bins(0, x, 2, true) from t").to_arrow()


#: Bounds whose nice steps sit on each rule's edge (a step of 2 or 5 times a power of ten, an
#: interval of 6 months, 5 days, 6 hours, an hour, 10 minutes, a minute, 10 seconds).
EDGES = ["0.0, 6.347, 3", "0.0, 6.347, 10", "0.0, 6.347, 30", "0.0, 3.974, 7", "0.0, 3.974, 40", "0, 1734, 10",
         "0, 39343341, 10", "1, 6000000, 7", "-1.0, 1.0, 5", "0, 101, 5", "0.0, 2.5, 1", "-2.5, 0.0, 1",
         "TIMESTAMP '1992-01-01 12:23:37', TIMESTAMP '1994-01-01 04:03:21', 4",
         "TIMESTAMP '1992-01-01 12:23:37', TIMESTAMP '1992-12-01 04:03:21', 4",
         "TIMESTAMP '1992-01-01 12:23:37', TIMESTAMP '1992-01-31 04:03:21', 4",
         "TIMESTAMP '1992-01-01 01:23:37.999', TIMESTAMP '1992-01-01 23:03:21.3', 4",
         "TIMESTAMP '1992-01-01 01:23:37.999', TIMESTAMP '1992-01-01 01:53:21.3', 4",
         "TIMESTAMP '1992-01-01 01:23:01.999', TIMESTAMP '1992-01-01 01:23:49.377', 4",
         "TIMESTAMP '1992-01-01 01:23:01.2', TIMESTAMP '1992-01-01 01:23:01.943', 4",
         "TIMESTAMP '2024-06-21 15:00:00', TIMESTAMP '2024-07-21 09:00:00', 4",
         "TIMESTAMP '2024-01-31 15:00:00', TIMESTAMP '2024-12-31 09:00:00', 2",
         "TIMESTAMP '2024-06-21 15:00:00.123456', TIMESTAMP '2024-06-21 15:00:00.123458', 10"]


def test_nice_edges(empty_dir, connect):
    _same("select " + ", ".join(f"equi_width_bins({c}, {nice}) c{i}_{nice}" for i, c in enumerate(EDGES)
                                for nice in ("true", "false")), empty_dir, connect)
