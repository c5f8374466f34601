"""DISTINCT aggregates over values that are nearly all distinct (l_comment, l_orderkey with
l_linenumber): once the first chunk shows it, later chunks pass their (keys, value) pairs
through undeduplicated and the final pass alone deduplicates (``HashAggregateOp.execute``,
``raw``). Answers equal DuckDB's -- with and without group keys, beside a low-cardinality
DISTINCT that keeps the per-chunk pass, with small chunks and spilled."""

import pytest

from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.testing.oracle import compare

QUERIES = {
    "no_keys": "select count(distinct l_comment), count(*) from lineitem",
    "keys": "select l_returnflag, count(distinct l_comment), count(distinct l_shipmode), sum(l_quantity) "
            "from lineitem group by 1",
    "pairs": "select l_linestatus, count(distinct l_orderkey * 10 + l_linenumber) from lineitem group by 1",
    "filtered": "select l_shipmode, count(distinct l_comment) from lineitem where l_quantity < 5 group by 1",
}


@pytest.mark.parametrize("settings", [{}, {"chunk_rows": 5000}, {"chunk_rows": 20000, "force_spill": True}],
                         ids=["default", "small_chunks", "spilled"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_distinct_passthrough_matches_duckdb(name, settings, tpch_dir, tpch_duck, connect):
    sql = QUERIES[name]
    compare(connect(tpch_dir, **settings).sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())


def test_high_cardinality_pairs_pass_through(tpch_dir, connect, monkeypatch):
    # The premise: after the first chunk, l_comment's pairs skip the per-chunk pass, while
    # l_shipmode's (7 values) keep it.
    seen = []
    orig = HashAggregateOp._partial

    def spy(self, chunk, dev, passthrough=False, grouping=None, raw=frozenset()):
        seen.append({str(a) for a in raw})
        return orig(self, chunk, dev, passthrough, grouping, raw)
    monkeypatch.setattr(HashAggregateOp, "_partial", spy)
    connect(tpch_dir, chunk_rows=5000).sql(QUERIES["keys"]).to_arrow()
    assert len(seen) > 3 and not seen[0]
    assert all(any("l_comment" in a for a in s) and not any("l_shipmode" in a for a in s) for s in seen[1:])
