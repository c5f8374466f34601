"""ORDER BY inside an aggregate's call, as DuckDB answers it: ANY_VALUE (the first non-NULL value
in that order), ARBITRARY (FIRST: NULL too), MODE (of the values tied on count, the one seen first),
ARG_MIN / ARG_MAX (of the rows tied on the key, the first); the aggregates whose answer no order
changes (exact SUM / AVG, COUNT, MIN, MEDIAN, QUANTILE, MAD, HISTOGRAM, ENTROPY, over a window too)
drop it, while floating-point sums (whose rounding follows the order) refuse it;
FILTER (WHERE c) on those holistic aggregates; FIRST_VALUE / LAST_VALUE / NTH_VALUE (x ORDER BY k)
over a whole partition (a window with its own ORDER BY or frame refused).
Grouped and not, with NULL values and keys, against DuckDB at default, tiny chunks and spilled."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.errors import PlanError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_tables


def write_tables(root, row_group_size=4) -> None:
    """t: o is unique (the order is total); v ties in count within groups 1 and 2, k too."""
    g = [1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 4]
    o = [5, 1, 4, 2, 3, 12, 7, 8, 11, 10, 9, 13, None, 14]
    v = ["b", "a", "a", "b", None, "z", "y", "y", "z", None, "x", None, "q", None]
    k = [1, 1, 2, 1, None, 3, 3, 1, 1, 2, 1, 4, 4, None]
    i = [2, None, 1, 2, 1, 3, 3, None, 5, 5, 4, 7, None, None]
    pq.write_table(pa.table({"g": pa.array(g, pa.int32()), "o": pa.array(o, pa.int64()), "v": v,
                             "k": pa.array(k, pa.int32()), "i": pa.array(i, pa.int64())}),
                   root / "t.parquet", row_group_size=row_group_size)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ordered_aggregates")
    write_tables(root)
    return root


QUERIES = [
    "select g, any_value(v order by o), any_value(v order by o desc), arbitrary(v order by o), "
    "arbitrary(i order by o desc nulls first) from t group by g",
    "select any_value(i order by o), any_value(i order by o desc), arbitrary(v order by o desc) from t",
    "select g, mode(v order by o), mode(v order by o desc), mode(i order by o desc nulls first), "
    "mode(distinct v order by v desc) from t group by g",
    "select mode(v order by o), mode(v order by o desc), mode(k order by o) from t",
    "select g, arg_min(v, k order by o), arg_min(v, k order by o desc), max_by(i, k order by o), "
    "arg_max(v, k order by o desc) from t group by g",
    "select g, sum(i order by o), count(v order by o desc), min(v order by o), median(i order by o), "
    "quantile_disc(i, 0.5 order by o), mad(i order by o), entropy(v order by o), "
    "avg(distinct i order by i) from t group by g",
    "select g, sum(i order by o) over (partition by g), max(v order by o desc) over (order by o) from t",
    # FIRST_VALUE / LAST_VALUE / NTH_VALUE (x ORDER BY k) over a whole partition
    "select g, o, first_value(i order by o desc) over (partition by g), last_value(v order by o) over (partition by g), "
    "nth_value(i, 2 order by o) over (partition by g), first_value(i order by o ignore nulls) over (), "
    "last_value(v order by o desc nulls first ignore nulls) over (partition by g) from t",
    # FILTER on the holistic aggregates: the rows passing, NULL where none does
    "select g, mode(v order by o) filter (where k = 1), mode(k) filter (where o < 12), median(i) filter (where k > 1), "
    "arg_min(v, k order by o) filter (where o <> 2), string_agg(v, '|' order by o) filter (where k < 3), "
    "list(i order by o) filter (where v is not null), first(v order by o) filter (where k > 1), "
    "any_value(i order by o desc) filter (where o < 10), mad(i) filter (where k <> 4) from t group by g",
    "select list(v order by o) filter (where o > 100), mode(v) filter (where null), "
    "quantile_disc(i, 0.25) filter (where k = 1) from t",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_as_duckdb(sql, data, connect, edge_settings):
    compare(connect(str(data), **edge_settings).sql(sql).to_arrow(), duckdb_tables(data).sql(sql).to_arrow_table())


@pytest.mark.parametrize("sql", ["select sum(i::double order by o) from t", "select avg(i::real order by o) from t",
                                 "select stddev(i order by o) from t", "select product(i order by o) from t",
                                 "select g, sum(i::double order by o) over (partition by g) from t"])
def test_floating_point_sum_in_an_order_refused(sql, data, connect):
    """DuckDB adds floats in the ORDER BY's order (2^53 + 1 + 1 is 2^53 + 2 in one order, 2^53 in
    the other); sluice's sums are pairwise across chunks and ranks: refused, never a wrong answer."""
    with pytest.raises(UnsupportedError, match="with ORDER BY"):
        connect(str(data)).sql(sql).to_arrow()


def test_value_order_over_a_framed_window_refused(data, connect):
    with pytest.raises(UnsupportedError, match="ORDER BY inside this function's arguments"):
        connect(str(data)).sql("select first_value(i order by o) over (order by k) from t").to_arrow()


@pytest.mark.parametrize("sql", ["select sum(distinct i order by o) from t", "select sum(i order by nope) from t",
                                 "select mode(distinct v order by o) from t"])
def test_errors_as_duckdb(sql, data, connect):
    with pytest.raises(PlanError):
        connect(str(data)).sql(sql).to_arrow()
