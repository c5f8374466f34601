"""STRING_SPLIT_REGEX against DuckDB: its splitter's rules for empty matches (a character taken
at the remainder's start, none after the last), alternations that match empty text first or
last, an empty pattern (characters; '' none), separators at the ends, NULL strings and a NULL
pattern, UNNEST, tiny chunks; assertions that look behind the remainder are refused."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables

TEXTS = ["a1a11a111a", "aaaaa", "a a  a   a", "abc", "1,2,3,4,,6", "1,2,3,4,*,6", "", ",a,", "abab", "aaa",
         "\u00fc\u00fc\u00fc\u00fc\u00fc", "a\nb", "x", None, "caf\u00e9,\u65e5\u672c,,"]
PATTERNS = ["[0-9]+", "", "\\s+", "(|abc)", "(abc|)", "(,|abc)", "(,|)", "(|,)", "(,|\\*)", ",", "x*", "b$", "a", ".",
            "\u00fc?", "[^0-9]+", "\\^"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("string_split_regex")
    pq.write_table(pa.table({"id": pa.array(range(len(TEXTS)), pa.int32()), "s": TEXTS}), root / "t.parquet",
                   row_group_size=4)
    return root


def _list_text(sql):  # (compare() sorts rows: a list as its text keeps its order)
    return f"select id, cast(l as varchar) from ({sql}) x"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_as_duckdb(pattern, data, connect):
    sql = _list_text(f"select id, string_split_regex(s, '{pattern}') l from t")
    compare(connect(str(data), chunk_rows=3).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", [
    "select id, unnest(str_split_regex(s, '[0-9,]+')) from t",
    "select cast(string_split_regex('a,b', NULL) as varchar), cast(string_split_regex(NULL, ',') as varchar), "
    "cast(string_split_regex('aXbxc', 'x', 'c') as varchar)",
    "select id, len(string_split_regex(s, 'a')), cast(regexp_split_to_array(s, ',') as varchar) from t",
])
def test_forms_as_duckdb(sql, data, connect):
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql,error", [("select string_split_regex(s, '^a') from t", UnsupportedError),
                                       ("select string_split_regex(s, '\\bx') from t", UnsupportedError),
                                       ("select string_split_regex(s, 'a', 'i') from t", UnsupportedError),
                                       ("select string_split_regex(s, s) from t", UnsupportedError),
                                       ("select string_split_regex(s, '[') from t", PlanError),
                                       ("select string_split_regex(id, ',') from t", PlanError)])
def test_one_line_errors(sql, error, data, connect):
    with pytest.raises(error):
        connect(str(data)).sql(sql).to_arrow()
