"""DESCRIBE, SHOW TABLES, SUMMARIZE against DuckDB on the same files, and the Relation API's
fetchall() / df() (pandas dtypes: datetime64 dates, Arrow-backed decimals)."""

import math

import pytest

from sluice.errors import SluiceError
from sluice.testing.oracle import duckdb_connect


@pytest.mark.parametrize("target", ["lineitem", "orders", "nation",
                                    "select 1 as x, n_name, n_nationkey * 1.5 as y, date '2020-01-01' as d "
                                    "from nation"])
def test_describe(target, tpch_dir, connect):
    sql = f"describe {target}"
    ours = connect(tpch_dir).sql(sql).fetchall()
    theirs = duckdb_connect(tpch_dir).sql(sql).fetchall()
    def norm(rows):
        # sluice tracks a computed decimal's scale, not its precision (it holds 18 digits):
        # for columns of a query, DECIMAL(p,s) is compared by s
        out = []
        for name, typ, null, *_ in rows:
            if target.startswith("select") and typ.startswith("DECIMAL"):
                typ = "DECIMAL(," + typ.split(",")[1]
            out.append((name, typ, null))
        return out
    assert norm(ours) == norm(theirs)
    assert all(r[3:] == (None, None, None) for r in ours)


def test_show_tables(tpch_dir, connect):
    ours = [r[0] for r in connect(tpch_dir).sql("show tables").fetchall()]
    theirs = sorted(r[0] for r in duckdb_connect(tpch_dir).sql("show tables").fetchall())
    assert ours == theirs


@pytest.mark.parametrize("table", ["orders", "part", "nation"])
def test_summarize(table, tpch_dir, connect):
    ours = {r["column_name"]: r for r in connect(tpch_dir).sql(f"summarize {table}").to_arrow().to_pylist()}
    rel = duckdb_connect(tpch_dir).sql(f"summarize {table}")
    theirs = {r[0]: dict(zip(rel.columns, r)) for r in rel.fetchall()}
    assert list(ours) == list(theirs)
    for name, want in theirs.items():
        got = ours[name]
        assert got["column_type"] == want["column_type"]
        assert (got["min"], got["max"], got["count"]) == (want["min"], want["max"], want["count"])
        assert float(got["null_percentage"]) == float(want["null_percentage"])
        if want["avg"] is not None and got["avg"] is not None:
            assert math.isclose(got["avg"], float(want["avg"]), rel_tol=1e-9)
            assert math.isclose(got["std"], float(want["std"]), rel_tol=1e-6)
        assert abs(got["approx_unique"] - want["approx_unique"]) <= 0.2 * want["approx_unique"] + 1


def test_fetchall_and_df(tpch_dir, connect):
    import pandas as pd
    sql = "select o_orderkey, o_orderdate, o_totalprice, o_orderstatus from orders order by o_orderkey limit 5"
    rel = connect(tpch_dir).sql(sql)
    assert rel.fetchall() == duckdb_connect(tpch_dir).sql(sql).fetchall()
    df = rel.df()
    assert pd.api.types.is_datetime64_any_dtype(df["o_orderdate"])
    assert isinstance(df["o_totalprice"].dtype, pd.ArrowDtype) and str(df["o_totalprice"].iloc[0]) != ""
    assert df["o_orderkey"].dtype == pd.Int64Dtype()


def test_pl_gives_a_polars_frame_equal_to_duckdb(tpch_dir, connect):
    polars = pytest.importorskip("polars")
    sql = "select o_orderkey, o_orderdate, o_totalprice, o_orderstatus from orders order by o_orderkey limit 5"
    frame = connect(tpch_dir).sql(sql).pl()
    assert isinstance(frame, polars.DataFrame) and frame.columns == ["o_orderkey", "o_orderdate", "o_totalprice",
                                                                     "o_orderstatus"]
    assert frame.rows() == duckdb_connect(tpch_dir).sql(sql).fetchall()


@pytest.mark.parametrize("sql", ["show databases", "summarize select 1", "describe nosuchtable"])
def test_command_errors(sql, tpch_dir, connect):
    with pytest.raises(SluiceError):
        connect(tpch_dir).sql(sql).to_arrow()
