"""Compare a sluice result with DuckDB's on the same files (the test oracle, docs/design.md §8).

Rows are compared as multisets (sorted on all columns); numbers exactly when both sides are
exact (integers, decimals), within a relative 1e-9 when either side is floating point. When
the query orders its result, the ORDER BY key columns must also appear in DuckDB's order.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow as pa


def duckdb_connect(data_dir: str | Path, threads: int | None = None):
    import duckdb  # deferred: duckdb only for this call
    con = duckdb.connect()
    # sluice's session time zone is UTC: TIMESTAMP WITH TIME ZONE values print, extract and
    # truncate in UTC, so DuckDB is asked to do the same (its default is the machine's zone).
    con.execute("SET TimeZone = 'UTC'")
    if threads:
        con.execute(f"SET threads TO {int(threads)}")
    root = Path(data_dir)
    for p in sorted(root.iterdir()):
        if p.suffix == ".parquet":
            name, src = p.stem, str(p)
        elif p.is_dir() and any(p.rglob("*.parquet")):
            name, src = p.name, str(p / "**" / "*.parquet")
        else:
            continue
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM read_parquet(\'{src}\')')
    return con


def duckdb_answer(con, sql: str) -> pa.Table:
    """DuckDB's result of ``sql`` as one Arrow table (``.arrow()`` gives a record batch reader
    in DuckDB 2.0, a table before it)."""
    out = con.sql(sql).arrow()
    return out.read_all() if hasattr(out, "read_all") else out


def duckdb_tables(data_dir: str | Path):
    """DuckDB with every Parquet file of ``data_dir`` loaded as an in-memory table of its name
    (DuckDB reading Parquet prunes float row groups by a max that leaves NaN out and drops NaN
    rows: the tables, not views, are the oracle)."""
    import duckdb  # deferred: duckdb only for this call
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for p in sorted(Path(data_dir).glob("*.parquet")):
        con.execute(f"create table \"{p.stem}\" as select * from read_parquet('{p}')")
    for d in sorted(p for p in Path(data_dir).iterdir() if p.is_dir() and any(p.glob("*.parquet"))):
        # a folder of files is one table (sluice's rule); DuckDB unifies their types by name
        con.execute(f"create table \"{d.name}\" as select * from read_parquet('{d}/*.parquet', union_by_name=true)")
    return con


def _norm(v):
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    return v


def _key(row):
    out = []
    for v in row:
        if v is None:
            out.append((0, 0))
        elif isinstance(v, float) and math.isnan(v):
            out.append((1.5, 0))  # NaN sorts above every number (a NaN in the key breaks sorted())
        elif isinstance(v, float):  # to 12 digits: values equal within rounding sort alike
            out.append((1, float(f"{v:.12g}")))
        elif isinstance(v, (int, decimal.Decimal)):
            out.append((1, float(v)))
        elif isinstance(v, dt.datetime):
            out.append((2, v.isoformat()))
        elif isinstance(v, dt.date):
            out.append((2, dt.datetime(v.year, v.month, v.day).isoformat()))
        else:
            out.append((3, str(v)))
    return out


def values_equal(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    if isinstance(a, dt.datetime) != isinstance(b, dt.datetime) and isinstance(a, dt.date) and isinstance(b, dt.date):
        # DuckDB's date + interval is a timestamp; sluice keeps a date. Equal at midnight.
        a2 = a if isinstance(a, dt.datetime) else dt.datetime(a.year, a.month, a.day)
        b2 = b if isinstance(b, dt.datetime) else dt.datetime(b.year, b.month, b.day)
        return a2 == b2
    if isinstance(a, float) or isinstance(b, float):
        if math.isinf(float(a)) or math.isinf(float(b)) or math.isnan(float(a)) or math.isnan(float(b)):
            return str(float(a)) == str(float(b))
        fa, fb = float(a), float(b)
        return math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, (int, decimal.Decimal)) and isinstance(b, (int, decimal.Decimal)):
        return decimal.Decimal(a) == decimal.Decimal(b)
    if isinstance(a, dict) and isinstance(b, dict):  # a STRUCT: its floats with the same tolerance
        return list(a) == list(b) and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list) and any(isinstance(x, (float, dict, list)) for x in a + b):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    return a == b


def _pylist(c) -> list:
    """A column's values; dates and timestamps beyond Python's (before year 1, after 9999) as
    microseconds since the epoch, on both sides alike."""
    try:
        return c.to_pylist()
    except (OverflowError, ValueError):
        if not (pa.types.is_date(c.type) or pa.types.is_timestamp(c.type)):
            raise
        us = c.cast(pa.int32()).cast(pa.int64()) if pa.types.is_date32(c.type) else c.cast(pa.int64())
        per = 86_400_000_000 if pa.types.is_date32(c.type) else {"s": 10**6, "ms": 10**3, "us": 1, "ns": None}[c.type.unit]
        vals = us.to_pylist()
        return [None if v is None else ("instant", v * per if per else v // 1000) for v in vals]


def rows_of(table: pa.Table) -> list[tuple]:
    cols = [_pylist(c) for c in table.columns]
    return list(zip(*cols)) if cols else []


def type_family(t: pa.DataType) -> tuple:
    """What a column's type must agree on with DuckDB's: exact numbers by their scale (sluice's
    64-bit SUM is DuckDB's HUGEINT, a DECIMAL(11,1) is any decimal of scale 1), floats by width,
    the rest by kind."""
    if pa.types.is_integer(t):
        return ("exact", 0)
    if pa.types.is_decimal(t):
        return ("exact", t.scale)
    if pa.types.is_floating(t):
        return ("float", t.bit_width)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return ("string",)
    if pa.types.is_timestamp(t):
        return ("timestamp", t.tz is not None)
    return (str(t),)


def compare(ours: pa.Table, theirs: pa.Table, order_cols: list[int] | None = None,
            check_types: bool = False) -> None:
    """Raise AssertionError describing the first difference (with ``check_types``, also a
    column whose type is of another :func:`type_family` than DuckDB's)."""
    assert ours.num_columns == theirs.num_columns, \
        f"column count {ours.num_columns} != duckdb's {theirs.num_columns}"
    if check_types:
        for i, (a, b) in enumerate(zip(ours.schema, theirs.schema)):
            assert type_family(a.type) == type_family(b.type), f"column {i}: type {a.type}, duckdb's {b.type}"
    assert ours.num_rows == theirs.num_rows, f"row count {ours.num_rows} != duckdb's {theirs.num_rows}"
    a, b = rows_of(ours), rows_of(theirs)
    if order_cols:
        for i, (ra, rb) in enumerate(zip(a, b)):
            for c in order_cols:
                assert values_equal(ra[c], rb[c]), \
                    f"row {i}: ORDER BY column {c} is {ra[c]!r}, duckdb has {rb[c]!r}"
    sa, sb = sorted(a, key=_key), sorted(b, key=_key)
    for i, (ra, rb) in enumerate(zip(sa, sb)):
        for c, (x, y) in enumerate(zip(ra, rb)):
            assert values_equal(x, y), f"sorted row {i}, column {c}: {x!r} != duckdb's {y!r}\n ours: {ra}\n duck: {rb}"


def compare_limited(ours: pa.Table, theirs: pa.Table, full: pa.Table, order_cols: list[int]) -> None:
    """A query with LIMIT whose last rows may tie (``ORDER BY count DESC LIMIT 10``) or that has
    no ORDER BY at all (any ten groups): DuckDB and sluice may rightly keep other rows. Checked:
    the row count, the ORDER BY columns row by row (``theirs``), and that every row sluice
    returned is a row of the query without its LIMIT / OFFSET (``full``, DuckDB's)."""
    assert ours.num_columns == theirs.num_columns, \
        f"column count {ours.num_columns} != duckdb's {theirs.num_columns}"
    assert ours.num_rows == theirs.num_rows, f"row count {ours.num_rows} != duckdb's {theirs.num_rows}"
    a, b = rows_of(ours), rows_of(theirs)
    for i, (ra, rb) in enumerate(zip(a, b)):
        for c in order_cols:
            assert values_equal(ra[c], rb[c]), f"row {i}: ORDER BY column {c} is {ra[c]!r}, duckdb has {rb[c]!r}"
    by_first: dict = {}
    for rb in rows_of(full):
        by_first.setdefault(repr(rb[0]) if isinstance(rb[0], (int, str)) else None, []).append(rb)
    for ra in a:
        near = by_first.get(repr(ra[0]) if isinstance(ra[0], (int, str)) else None, []) + by_first.get(None, [])
        assert any(all(values_equal(x, y) for x, y in zip(ra, rb)) for rb in near), \
            f"row {ra} is not a row of the query without its LIMIT"
