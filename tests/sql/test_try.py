"""TRY(x) against DuckDB: x, and NULL on exactly the rows where x fails a value check --
integer overflow, a cast of a string or a number that does not convert, division checks --
inside filters and projections, under CASE / COALESCE, over tiny chunks and with checks
deferred (a GPU's way, on the CPU); an error TRY does not catch (a limit of sluice's) still
raises, and an error sluice cannot place on rows is refused, never turned into NULLs."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def try_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("try")
    r = random.Random(5)
    n = 200
    big = [2 ** 31 - 1, -2 ** 31, 2 ** 30, -5, 0, 7, 1000000000]
    c0 = [None if r.random() < .1 else r.choice(big + [r.randint(-100, 100)]) for _ in range(n)]
    c1 = [None if r.random() < .1 else r.choice(big + [r.randint(-100, 100)]) for _ in range(n)]
    b0 = [None if r.random() < .1 else r.choice([2 ** 63 - 1, -2 ** 63, 3, -1, 0, 2 ** 40]) for _ in range(n)]
    s = [None if r.random() < .1 else r.choice(["1", "x", "300", "-7", "", "2147483648", "12"]) for _ in range(n)]
    pq.write_table(pa.table({"i": pa.array(range(n), pa.int64()), "c0": pa.array(c0, pa.int32()),
                             "c1": pa.array(c1, pa.int32()), "b0": pa.array(b0, pa.int64()), "s": s}),
                   root / "t.parquet", row_group_size=37)
    return root


def _same(sql, root, connect, **settings):
    compare(connect(root, **settings).sql(sql).to_arrow(), duckdb_connect(root).sql(sql).to_arrow_table())


QUERIES = [
    "select i, try(c1 - c0), try(c0 + c1), try(c0 * c1), try(-b0), try(b0 * 3), try(abs(b0)) from t",
    "select i, c0, c1 from t where try(c1 - c0) is null",
    "select i, try(c1 - c0) from t where try(c1 - c0) is not null",
    "select i, try(cast(s as integer)), try(cast(s as tinyint)), try(s::int + c0), try(cast(b0 as integer)) from t",
    "select i, try(case when c0 > 0 then c0 * c1 else c1 - c0 end), try(coalesce(s::int, c0 * c1)) from t",
    "select i, try(b0 // (c0 - 7)), try(c0 % (c1 - 7)), try(1 + 2), try(cast('abc' as int)) from t",
    "select count(try(c0 * c1)), sum(try(c0 + c1)) from t",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_try_is_null_where_the_row_fails(sql, try_dir, connect):
    _same(sql, try_dir, connect)


@pytest.mark.parametrize("sql", QUERIES[:5])
def test_tiny_chunks_and_deferred_checks(sql, try_dir, connect, monkeypatch):
    from sluice.kernels import checks
    _same(sql, try_dir, connect, chunk_rows=5)
    monkeypatch.setattr(checks, "DEFER_ON_CPU", True)
    _same(sql, try_dir, connect)


def test_the_same_expression_outside_try_still_raises(try_dir, connect):
    sql = "select try(c1 - c0), c1 - c0 from t"
    with pytest.raises(Exception):
        duckdb_connect(try_dir).sql(sql).fetchall()
    with pytest.raises(Exception, match="overflow"):
        connect(try_dir).sql(sql).to_arrow()


def test_a_limit_of_sluice_is_no_null(try_dir, connect):
    # a decimal product past 64 bits: DuckDB answers (38 digits); sluice refuses, under TRY too
    with pytest.raises(UnsupportedError):
        connect(try_dir).sql("select try(cast(b0 as decimal(18, 0)) * 1000000.5) from t").to_arrow()


def test_parse_formatted_bytes_is_refused_with_its_reason(try_dir, connect):
    # DuckDB's result is UBIGINT (to 2^64 - 1): a BIGINT would type and overflow otherwise
    with pytest.raises(UnsupportedError, match="UBIGINT"):
        connect(try_dir).sql("select try(parse_formatted_bytes(s)) from t").to_arrow()


@pytest.mark.parametrize("sql", ["select try((select max(c0) from t))", "select try(sum(c0 * c1)) from t",
                                 "select try(row_number() over ()) from t", "select try(c0 in (select c1 from t)) from t"])
def test_what_duckdb_refuses_inside_try(sql, try_dir, connect):
    from sluice.errors import PlanError
    with pytest.raises(Exception):
        duckdb_connect(try_dir).sql(sql).fetchall()
    with pytest.raises(PlanError):
        connect(try_dir).sql(sql).to_arrow()
