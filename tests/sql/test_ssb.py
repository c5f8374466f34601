"""All 13 SSB queries (text unchanged, table named ``date``) against DuckDB."""

import pytest

from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, ssb_queries

QUERIES = ssb_queries()


@pytest.mark.parametrize("chunk_rows", [None, 4096], ids=["default_chunks", "tiny_chunks"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_ssb_query(name, chunk_rows, ssb_dir, ssb_duck, connect):
    sql = QUERIES[name]
    settings = {"chunk_rows": chunk_rows} if chunk_rows else {}
    ours = connect(ssb_dir, **settings).sql(sql).to_arrow()
    theirs = ssb_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


def test_ssb_money_sums_exceed_32_bits(ssb_dir, connect):
    # lo_extendedprice is int32 cents; its total does not fit 32 bits even at SF 0.1.
    t = connect(ssb_dir).sql("select sum(lo_extendedprice) as s, sum(lo_extendedprice * lo_discount) as r "
                             "from lineorder").to_arrow()
    assert t.column("s")[0].as_py() > 2**31
