"""A hash join's build side appends its pages' string dictionaries without deduplicating them
(``HashJoinOp._concat``): the same string can then sit at several codes of one dictionary. Every
use of such a column downstream -- grouping, DISTINCT, equality and order against constants and
other columns, MIN/MAX, a further join keyed on it, set operations, an aggregation merging its
partial pages (appended the same way) -- must still see equal strings as equal. Small chunks give the build side many pages, each with its own dictionary of the same
few values. Answers equal DuckDB's."""

import pytest

from sluice.chunk import concat_chunks
from sluice.testing.oracle import compare

# orders (build, probed by lineitem) carries o_orderpriority and o_orderstatus: 5 and 3 values
# repeated in every page; customer (build) carries c_mktsegment.
BUILD = ("select l_linenumber, o_orderpriority p, o_orderstatus s, l_returnflag f from lineitem "
         "join orders on l_orderkey = o_orderkey where l_orderkey < 20000")
QUERIES = {
    "group_by": f"select p, count(*), sum(l_linenumber) from ({BUILD}) group by p",
    "distinct": f"select distinct p, s from ({BUILD})",
    "eq_const": f"select count(*) from ({BUILD}) where p = '1-URGENT'",
    "order_const": f"select count(*) from ({BUILD}) where p < '3-MEDIUM'",
    "eq_column": f"select count(*) from ({BUILD}) where s = f",
    "min_max": f"select s, min(p), max(p) from ({BUILD}) group by s",
    "order_by": f"select p, s, l_linenumber from ({BUILD}) order by p desc, s, l_linenumber limit 40",
    "join_on_it": f"select b.p, count(*) from ({BUILD}) b join (select distinct o_orderpriority q from orders) o "
                  "on b.p = o.q group by b.p",
    "intersect": f"select p from ({BUILD}) intersect select o_orderpriority from orders where o_orderkey < 100",
    "two_builds": "select c_mktsegment, o_orderpriority, count(*) from orders join customer on o_custkey = c_custkey "
                  "where o_orderkey < 20000 group by 1, 2",
    # An aggregation's partial pages are merged with their dictionaries appended too
    # (HashAggregateOp._merge_pages): a key that determines the strings (c_custkey), one that
    # does not (l_linenumber: its groups' strings differ across pages), strings alone.
    "merge_determined": "select c_custkey, c_name, c_mktsegment, count(*), sum(o_totalprice) from orders "
                        "join customer on o_custkey = c_custkey where o_orderkey < 20000 group by 1, 2, 3",
    "merge_key_varies": f"select l_linenumber, p, count(*) from ({BUILD}) group by 1, 2",
    "merge_strings": "select o_orderstatus, o_orderpriority, max(o_clerk), count(*) from orders "
                     "where o_orderkey < 20000 group by 1, 2",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_build_side_strings_match_duckdb(tpch_dir, tpch_duck, connect, name):
    sql = QUERIES[name]
    compare(connect(tpch_dir, chunk_rows=500).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())


def test_appended_dictionaries_repeat_strings_and_codes_still_agree():
    """The premise of the tests above, and what keeps it right: pages appended keep each page's
    copy of a string, and key codes and comparisons deduplicate them."""
    import pyarrow as pa
    import torch
    from sluice.chunk import Chunk, Column
    from sluice.expr.functions.comparison import _compare_strings
    from sluice.kernels.keys import column_codes
    from sluice.types import STRING

    def page(words, codes):
        col = Column(torch.tensor(codes, dtype=torch.int32), STRING, None, pa.array(words))
        return Chunk({"s": col}, len(codes))

    built = concat_chunks([page(["a", "b"], [0, 1, 1]), page(["b", "a"], [0, 1, 0])], unify=False)
    col = built.columns["s"]
    assert col.dictionary.to_pylist() == ["a", "b", "b", "a"]  # repeats: not deduplicated
    codes, _ = column_codes(col, 6)  # rows: a b b b a b
    assert codes.tolist()[0] == codes.tolist()[4] and len(set(codes.tolist())) == 2
    assert codes.tolist()[1] == codes.tolist()[3] == codes.tolist()[5]
    assert _compare_strings("=", col, col).all()
    other = page(["b", "a"], [1, 0, 0, 0, 1, 0]).columns["s"]  # a b b b a b, other codes
    assert _compare_strings("=", col, other).all() and not _compare_strings("<", col, other).any()
