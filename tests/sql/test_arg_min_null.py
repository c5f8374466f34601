"""ARG_MIN_NULL / ARG_MAX_NULL (DuckDB's): ARG_MIN / ARG_MAX whose rows with a NULL value count
-- only a NULL key is skipped -- grouped and not, on empty input, over strings and numbers,
against DuckDB at default, tiny chunks and spilled."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("arg_min_null")
    # keys unique within each group (ties would let either row's value answer)
    g = [1, 2, 2, 3, 3, 4, 5, 5, 5]
    s = ["a", None, "c", "d", None, None, "x", None, "z"]
    k = [3, 1, None, 5, 2, None, 7, 8, 6]
    v = [1.5, 2.0, None, -1.0, 4.0, None, None, 0.5, 3.25]
    pq.write_table(pa.table({"g": pa.array(g, pa.int32()), "s": s, "k": pa.array(k, pa.int64()), "v": v}),
                   root / "t.parquet", row_group_size=4)
    return root


QUERIES = [
    "select g, arg_min_null(s, k), arg_max_null(s, k), arg_min_null(v, k), arg_max_null(v, k), arg_min(s, k) from t group by g",
    "select arg_min_null(s, k), arg_max_null(s, k), arg_min_null(v, -k), arg_max_null(k, v) from t",
    "select arg_min_null(NULL, NULL), arg_max_null(1, 1), arg_min_null(s, k) from t where g > 2",
    "select arg_min_null(s, k) from t where false",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["select arg_min_null(s) from t", "select arg_max_null(s, k, 2) from t"])
def test_wrong_arguments(sql, data, connect):
    with pytest.raises(PlanError):
        connect(str(data)).sql(sql).to_arrow()
