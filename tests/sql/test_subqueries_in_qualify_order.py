"""Subqueries in QUALIFY and ORDER BY, as DuckDB answers them: scalar (correlated or not), EXISTS
and IN, joined as values before the filter or the sort, grouped and not; with DISTINCT an ORDER BY
subquery is refused in one line. Against DuckDB at default, tiny chunks and spilled."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("subqueries_in_qualify_order")
    pq.write_table(pa.table({"i": pa.array([1, None, 2, 2, 3, 3, 7], pa.int64()), "k": pa.array([3, 1, 2, 5, 4, 6, 7], pa.int32()),
                             "s": ["a", "b", "b", "c", "c", "d", None], "g": pa.array([1, 1, 1, 2, 2, 2, 3], pa.int32())}),
                   root / "t.parquet", row_group_size=3)
    return root


QUERIES = [
    "select * from t qualify row_number() over (partition by g order by k) = (select max(g) from t)",
    "select * from t qualify row_number() over (partition by g order by k) <= (select max(k) from t t2 where t2.g = t.g) - 4",
    "select * from t qualify i in (select i from t t2 where t2.k > 4) or row_number() over (order by k) = 1",
    "select * from t qualify exists (select 1 from t t2 where t2.k = t.k + 1) and row_number() over (order by k) > 2",
    "select g, sum(k) from t group by g order by (select sum(k) from t t2 where t2.g = t.g) desc",
    "select * from t order by (select max(k) from t t2 where t2.s = t.s) nulls first, k",
    "select * from t order by exists (select 1 from t t2 where t2.k = t.k + 1), k limit 4",
    "select * from t order by i in (select k from t), k",
    "select g, count(*) from t group by g order by (select max(i) from t t2 where t2.g = t.g) * sum(k) desc",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    """Row by row where the query orders (each ORDER BY here is a total order), else (QUALIFY)
    as sets."""
    ours = connect(str(data), **edge_settings).sql(sql).to_arrow()
    theirs = duckdb_tables(data).sql(sql).to_arrow_table()
    compare(ours, theirs, order_cols=list(range(theirs.num_columns)) if " qualify " not in sql else None)


def test_order_by_subquery_with_distinct_refused(data, connect):
    with pytest.raises(UnsupportedError, match="subquery in ORDER BY with DISTINCT"):
        connect(str(data)).sql("select distinct g from t order by (select 1)").to_arrow()
