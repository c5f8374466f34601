"""REGEXP_ESCAPE against DuckDB (RE2's QuoteMeta): every ASCII punctuation, space and control
byte escaped, letters, digits, '_' and non-ASCII characters kept, NUL as \\x00, NULL and ''."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError
from sluice.testing.oracle import compare, duckdb_tables

TEXTS = ["https://duckdb.org", "abc123ABC", "a.b[c]*", "a b c", "\\n", "line1\nline2", "@", "path\\to\\wonderland",
         "$()*+.?[\\]^{|}-", "", None, "caf\u00e9 \u65e5\u672c_x", "tab\there\x7f~`", "nul\x00byte", "'\"#%&,;<=>!"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("regexp_escape")
    pq.write_table(pa.table({"id": pa.array(range(len(TEXTS)), pa.int32()), "s": TEXTS}), root / "t.parquet",
                   row_group_size=4)
    return root


@pytest.mark.parametrize("sql", [
    "select id, regexp_escape(s) from t",
    "select id, regexp_escape(s) || regexp_escape(upper(s)) from t where id > 3",
    "select regexp_escape('$()*+.?[\\]^{|}-'), regexp_escape(NULL), regexp_escape('')",
    "select count(*) from t where regexp_escape(s) = s",
])
def test_as_duckdb(sql, data, connect):
    compare(connect(str(data)).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


def test_not_a_string(data, connect):
    with pytest.raises(PlanError):
        connect(str(data)).sql("select regexp_escape(id) from t").to_arrow()
