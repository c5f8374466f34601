"""ARRAY_EXTRACT / LIST_EXTRACT / LIST_ELEMENT of a string, against DuckDB: SUBSTRING(s, i, 1) as
``s[i]`` is -- code points, 1-based, negative from the end, '' out of range, NULL for NULL --
with constant and column indexes, and SUBSTRING's range error for huge offsets."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_connect


@pytest.fixture(scope="module")
def str_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("subs")
    s = ["hello", "world", "b", None, "e\u0301x🦆", "", "語ab"] * 5
    off = [1, 2, 1, 2, -2, None, 0, 4, -5, 3, -1, 7, 2, -8, 5] + [1] * 20
    pq.write_table(pa.table({"s": s, "off": pa.array(off, pa.int32())}), root / "strings.parquet", row_group_size=8)
    return root


@pytest.mark.parametrize("sql", [
    "select array_extract('🦆ab', 4), array_extract('abc', 4), list_element('abc', -1), array_extract('é', 1)",
    "select s, array_extract(s, 2), list_extract(s, 3), list_element(s, -1), array_extract(s, 0) from strings",
    "select s, off, array_extract(s, off), array_extract('hello', off), array_extract(NULL::VARCHAR, off), "
    "array_extract('hello', NULL), array_extract(NULL::VARCHAR, NULL), s[off] from strings",
])
def test_string_element(sql, str_dir, connect):
    compare(connect(str_dir, chunk_rows=6).sql(sql).to_arrow(), duckdb_connect(str_dir).sql(sql).to_arrow_table())


def test_huge_offsets_raise_as_duckdb(str_dir, connect):
    sql = "select array_extract(s, 9223372036854775807) from strings"
    with pytest.raises(Exception, match="outside of supported range"):
        duckdb_connect(str_dir).sql(sql).fetchall()
    with pytest.raises(Exception, match="outside of supported range"):
        connect(str_dir).sql(sql).to_arrow()
