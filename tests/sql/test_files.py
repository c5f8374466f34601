"""Querying Parquet files directly, without a data directory: quoted paths and globs in FROM,
read_parquet of a path or a list, folders; files with nested and binary columns stay
queryable for their other columns. Answers checked against DuckDB, which reads the same SQL."""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.errors import DataError, UnsupportedError
from sluice.testing.oracle import compare


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    (root / "parts" / "y=2020").mkdir(parents=True)
    (root / "parts" / "y=2021").mkdir(parents=True)
    for i in range(3):
        t = pa.table({"k": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                      "s": pa.array([f"v{j % 4}" for j in range(10)])})
        sub = "y=2020" if i < 2 else "y=2021"
        pq.write_table(t, root / "parts" / sub / f"p{i}.parquet")
    nested = pa.table({
        "a": pa.array([1, 2, 3, None], pa.int32()),
        "l": pa.array([[1], [2, 3], None, []], pa.list_(pa.int64())),
        "st": pa.array([{"x": 1}, {"x": 2}, None, {"x": 4}]),
        "b": pa.array([b"x", None, b"z", b""], pa.binary()),
        "name": pa.array(["p", "q", None, "r"]),
    })
    pq.write_table(nested, root / "nested.parquet")
    return root


QUERIES = [
    "select count(*), sum(k) from '{root}/parts/*/*.parquet'",
    "select s, count(*) from '{root}/parts/**/*.parquet' group by s",
    "select k from '{root}/parts/y=2021/p2.parquet' where k > 25",
    "select count(*) from read_parquet('{root}/parts/y=2020/*.parquet')",
    "select count(*), max(k) from read_parquet(['{root}/parts/y=2020/p0.parquet', '{root}/parts/y=2021/p2.parquet'])",
    "select p.k, n.name from '{root}/parts/y=2020/p1.parquet' p join '{root}/nested.parquet' n on p.k - 10 = n.a",
    "select a, name, a * 2 from '{root}/nested.parquet'",
    "select * exclude (l, st, b) from '{root}/nested.parquet'",
    "select count(*) from '{root}/nested.parquet' where name is not null",
]


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_file_queries(i, files, connect):
    sql = QUERIES[i].format(root=files)
    ours = connect(files).sql(sql).to_arrow()
    theirs = duckdb.connect().sql(sql).to_arrow_table()
    compare(ours, theirs)


def test_a_folder_reads_all_its_files(files, connect):
    got = connect(files).sql(f"select count(*) from '{files}/parts/'").to_arrow().column(0)[0].as_py()
    assert got == 30


def test_relative_paths_and_the_file_name_as_alias(files, monkeypatch):
    monkeypatch.chdir(files)
    con = sluice.connect(device="cpu")  # no data directory at all
    got = con.sql("select p0.k from 'parts/y=2020/p0.parquet' where p0.k = 3").to_arrow()
    assert got.column(0).to_pylist() == [3]


@pytest.mark.parametrize("sql,err,match", [
    ("select l from '{root}/nested.parquet'", UnsupportedError, "column l of type list"),
    ("select * from '{root}/nested.parquet'", UnsupportedError, "column l of type list"),
    ("select n.st from '{root}/nested.parquet' n", UnsupportedError, "column st of type struct"),
    ("select count(*) from '{root}/none/*.parquet'", DataError, "no files match"),
    ("select count(*) from '{root}/missing.parquet'", DataError, "no such file"),
    ("select count(*) from read_parquet('{root}/parts', hive_partitioning = true)", UnsupportedError,
     "read_parquet option hive_partitioning"),
    ("select count(*) from '{root}/x.csv'", UnsupportedError, "only Parquet files"),
])
def test_file_query_errors(sql, err, match, files, connect):
    with pytest.raises(err, match=match):
        connect(files).sql(sql.format(root=files)).to_arrow()
