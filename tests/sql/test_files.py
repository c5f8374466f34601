"""Querying files directly, without a data directory: quoted paths and globs in FROM,
read_parquet of a path or a list, folders; Hive partition columns from key=value folders
(detected, forced on or off, typed as DuckDB types them, pruning files); CSV files through
read_csv / read_csv_auto / a quoted .csv path; files with nested and binary columns stay
queryable for their other columns. Answers checked against DuckDB, which reads the same SQL."""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sluice
from sluice.errors import DataError, PlanError, UnsupportedError
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
    # Hive partitions: an integer, a date and a string key (one value URL-encoded, one NULL).
    for y in (2020, 2021):
        for d in ("2020-01-01", "2021-06-30"):
            for r in ("east", "north west", "__HIVE_DEFAULT_PARTITION__"):
                sub = root / "sales" / f"year={y}" / f"day={d}" / f"region={r.replace(' ', '%20')}"
                sub.mkdir(parents=True)
                pq.write_table(pa.table({"amount": pa.array([y % 7 + len(r), 3, None], pa.int64()),
                                         "item": ["x", r[:3], None]}), sub / "part-0.parquet")
    (root / "t.csv").write_text("id,name,price,day,flag,empty\n1,apple,1.5,2020-01-02,true,\n"
                                "2,NA,,2021-03-04,false,\n3,\"c,d\",2.25,,true,\n4,pear,-3,1999-12-31,,\n")
    (root / "u.csv").write_text("id,name,price,day,flag,empty\n5,fig,10,2000-02-29,false,\n")
    (root / "v.psv").write_text("7|seven|0.5\n8||8\n")
    (root / "bad.csv").write_text("id,x\n" + "1,2\n" * 5 + "oops,3\n")
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
    "select a, l, n.st, n.st.x from '{root}/nested.parquet' n",  # nested columns (docs/nested.md)
    "select count(*) from '{root}/nested.parquet' where name is not null",
    # Hive partitions
    "select year, day, region, count(*), sum(amount) from '{root}/sales/**/*.parquet' group by all order by all",
    "select * from read_parquet('{root}/sales/*/*/*/*.parquet', hive_partitioning = true) "
    "where year = 2021 and region = 'north west' and day > date '2020-06-01'",
    "select region is null, count(*) from '{root}/sales/*/*/*/*.parquet' group by 1",
    "select count(*) from read_parquet('{root}/sales/*/*/*/*.parquet', hive_partitioning = false)",
    "select * from read_parquet('{root}/sales/*/*/*/*.parquet', hive_partitioning = false) limit 0",
    "select y, count(*), sum(k) from '{root}/parts/*/*.parquet' group by y",
    # CSV
    "select * from '{root}/t.csv'",
    "select name, price * 2, day + 1, flag from read_csv('{root}/t.csv') where flag or flag is null",
    "select * from read_csv('{root}/v.psv', header = false, delim = '|')",
    "select count(*), sum(id), max(day) from read_csv_auto(['{root}/t.csv', '{root}/u.csv'])",
    "select t.name, u.name from '{root}/t.csv' t join read_csv('{root}/u.csv') u on t.id + 4 = u.id",
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
    ("select b from '{root}/nested.parquet'", UnsupportedError, "column b of type binary"),
    ("select * from '{root}/nested.parquet'", UnsupportedError, "column b of type binary"),
    ("select count(*) from '{root}/none/*.parquet'", DataError, "no files match"),
    ("select count(*) from '{root}/missing.parquet'", DataError, "no such file"),
    ("select count(*) from read_parquet('{root}/parts', union_by_name = true)", UnsupportedError,
     "read_parquet option union_by_name"),
    ("select count(*) from read_parquet('{root}/parts/*/*.parquet', hive_partitioning = 1)", PlanError,
     "true or false"),
    ("select count(*) from read_parquet('{root}/nested.parquet', hive_partitioning = true)", DataError,
     "key=value"),
    ("select count(*) from '{root}/x.csv'", DataError, "no such file"),
    ("select count(*) from read_csv('{root}/t.csv', quote = '|')", UnsupportedError, "read_csv option quote"),
    ("select count(*) from read_csv('{root}/t.csv', delim = '||')", PlanError, "one character"),
    ("select count(*) from read_csv('{root}')", DataError, "is a folder"),
])
def test_file_query_errors(sql, err, match, files, connect):
    with pytest.raises(err, match=match):
        connect(files).sql(sql.format(root=files)).to_arrow()


def test_partition_filters_prune_files(files, connect):
    rel = connect(files).sql(f"select count(*) from '{files}/sales/**/*.parquet' where year = 2020 and region = 'east'")
    assert rel.to_arrow().column(0)[0].as_py() == 6  # two days x three rows
    scan = next(o for o in rel.last_run[0].walk() if o.label == "Scan")
    assert scan.pruned == 8  # 12 files: 2 match, 2 with a NULL region have no statistics to prune by


def test_a_data_directory_table_folder_with_partitions(files, tmp_path, connect):
    import shutil
    shutil.copytree(files / "sales", tmp_path / "sales")
    sql = "select year, count(*), sum(amount) from sales group by year"
    compare(connect(tmp_path).sql(sql).to_arrow(),
            duckdb.connect().sql(sql.replace("from sales", f"from '{tmp_path}/sales/**/*.parquet'")).to_arrow_table())


def test_csv_in_small_chunks_equals_default(files, connect):
    sql = f"select name, id, price from read_csv_auto(['{files}/t.csv', '{files}/u.csv']) where id > 1"
    compare(connect(files, chunk_rows=1).sql(sql).to_arrow(), duckdb.connect().sql(sql).to_arrow_table())


def test_csv_value_that_does_not_fit_the_inferred_type(files, connect, monkeypatch):
    # The first block says id is an integer; a later block's "oops" is an error naming the file.
    import sluice.io.csv as csv
    monkeypatch.setattr(csv, "BLOCK_BYTES", 16)
    with pytest.raises(DataError, match="bad.csv"):
        connect(files).sql(f"select sum(id) from '{files}/bad.csv'").to_arrow()


def test_table_names_are_case_insensitive(tmp_path, connect):
    """``FROM sales`` reads ``Sales.parquet`` (a table DuckDB created as ``Sales``), as DuckDB's
    names are case-insensitive; two files differing in case only are ambiguous."""
    duck = duckdb.connect()
    duck.execute("create table Sales as select range % 3 as g, range as a from range(20)")
    duck.execute(f"copy Sales to '{tmp_path / 'Sales.parquet'}' (format parquet)")
    (tmp_path / "Parts").mkdir()
    duck.execute(f"copy (select 1 as p) to '{tmp_path / 'Parts' / 'x.parquet'}' (format parquet)")
    con = connect(tmp_path)
    for sql in ["select g, sum(a) from sales group by g", "select g, count(*) from SALES group by g",
                "select count(*), sum(s.a) from Sales s join parts on true"]:
        compare(con.sql(sql).to_arrow(), duck.sql(sql.replace("parts", "(select 1 as p)")).to_arrow_table())
    pq.write_table(pa.table({"a": [1]}), tmp_path / "SALES.parquet")
    with pytest.raises(PlanError, match="ambiguous"):
        connect(tmp_path).sql("select * from sales").to_arrow()
