"""All 13 SSB queries (text unchanged, table named ``date``) against DuckDB."""

import pytest

from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, ssb_queries

QUERIES = ssb_queries()


#: Default path, tiny chunks, runtime filters off, and each scan data-movement mode forced
#: (auto with tiny chunks: many slices to sample on). Every one must give DuckDB's answer.
SETTINGS = {"default_chunks": {}, "tiny_chunks": {"chunk_rows": 4096},
            "runtime_filters_off": {"runtime_filters": False}, "scan_pushdown": {"scan_mode": "pushdown"},
            "scan_staging": {"scan_mode": "staging"},
            "scan_auto": {"scan_mode": "auto", "chunk_rows": 4096}}


@pytest.mark.parametrize("variant", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_ssb_query(name, variant, ssb_dir, ssb_duck, connect):
    sql = QUERIES[name]
    settings = SETTINGS[variant]
    ours = connect(ssb_dir, **settings).sql(sql).to_arrow()
    theirs = ssb_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


def test_ssb_money_sums_exceed_32_bits(ssb_dir, connect):
    # lo_extendedprice is int32 cents; its total does not fit 32 bits even at SF 0.1.
    t = connect(ssb_dir).sql("select sum(lo_extendedprice) as s, sum(lo_extendedprice * lo_discount) as r "
                             "from lineorder").to_arrow()
    assert t.column("s")[0].as_py() > 2**31
