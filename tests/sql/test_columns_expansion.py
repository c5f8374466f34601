"""DuckDB's COLUMNS(...) as a select-list item and a DISTINCT ON key: ``COLUMNS(*)`` with EXCLUDE /
REPLACE, a regular expression over the names, a list of names (in the FROM clause's order), over
joins; no match is an error, and COLUMNS inside an expression is refused in one line. Against
DuckDB at default, tiny chunks and spilled."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("columns_expansion")
    pq.write_table(pa.table({"key1": pa.array([1, 1, 2, 2, None], pa.int32()), "key2": pa.array([1, 1, 1, 3, 3], pa.int64()),
                             "v": pa.array([2, 3, 4, 5, 6], pa.int64()), "Name": ["x", "y", None, "w", "x"]}),
                   root / "t.parquet", row_group_size=2)
    pq.write_table(pa.table({"key1": pa.array([1, 2], pa.int32()), "other": ["a", "b"]}), root / "u.parquet")
    return root


QUERIES = [
    "select columns('key'), v from t",
    "select columns(* exclude (v) replace (key1 + 1 as key1)) from t",
    "select columns(['v', 'KEY1']) from t",
    "select columns('^k.*2$'), columns('N') from t",
    "select distinct columns('key') from t",
    "select distinct on (columns('key')) * from t order by key1, key2, v",
    "select distinct on (columns('key'), v) key1, key2, v from t order by key1, v",
    "select distinct on (columns(* exclude (v, \"Name\"))) * from t order by key1, key2, v desc",
    "select columns('key'), other from t join u using (key1)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["select columns('zz') from t", "select columns(['nope']) from t",
                                 "select distinct on (columns('zz')) * from t"])
def test_no_match_is_an_error(sql, data, connect):
    with pytest.raises(PlanError):
        connect(str(data)).sql(sql).to_arrow()


@pytest.mark.parametrize("sql", ["select min(columns(*)) from t", "select columns('key') as k from t",
                                 "select * from t order by columns('key')"])
def test_inside_an_expression_refused(sql, data, connect):
    with pytest.raises(UnsupportedError):
        connect(str(data)).sql(sql).to_arrow()
