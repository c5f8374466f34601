"""Every optimization that is a setting gives the same answers when turned off (issue 28):
the optional plan rewrites (``disabled_rules``, all of them at once), the dictionary page form of
spilled pages (``page_dictionaries=false`` under forced spilling), and the infinite-date check's
fast path (exercised by every scan of a date column)."""

import pytest

from sluice.config import OPTIONAL_RULES
from sluice.testing.oracle import compare
from sluice.testing.queries import order_by_columns, ssb_queries, tpch_queries

ALL_OFF = ",".join(OPTIONAL_RULES)


@pytest.mark.parametrize("name", sorted(tpch_queries()))
def test_tpch_without_optional_rewrites(name, tpch_dir, tpch_duck, connect):
    sql = tpch_queries()[name]
    ours = connect(tpch_dir, disabled_rules=ALL_OFF).sql(sql).to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))


@pytest.mark.parametrize("name", sorted(ssb_queries()))
def test_ssb_without_optional_rewrites(name, ssb_dir, ssb_duck, connect):
    sql = ssb_queries()[name]
    ours = connect(ssb_dir, disabled_rules=ALL_OFF).sql(sql).to_arrow()
    compare(ours, ssb_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))


def test_a_disabled_rule_is_not_applied(tpch_dir, connect):
    sql = ("select l_returnflag, sum(l_linenumber::smallint + 1) as a, sum(l_linenumber::smallint - 3) as b "
           "from lineitem group by 1 order by 1")
    on = connect(tpch_dir).sql(sql)
    off = connect(tpch_dir, disabled_rules="sum_offsets").sql(sql)
    assert "count(" in on.explain() and "count(" not in off.explain()
    assert on.to_arrow().equals(off.to_arrow())


@pytest.mark.parametrize("name", ["q01", "q10", "q16", "q18"])
def test_spilled_strings_by_value(name, tpch_dir, tpch_duck, connect):
    sql = tpch_queries()[name]
    rel = connect(tpch_dir, force_spill=True, page_dictionaries=False).sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
    _, ctx = rel.last_run
    assert ctx.spill_manager.pages_written and ctx.spill_manager.page_dictionaries is False


def test_page_dictionaries_setting_changes_the_page_form():
    import pyarrow as pa
    import torch

    from sluice.chunk import Column
    from sluice.ranks.wire import chunk_to_bytes
    from sluice.chunk import Chunk
    from sluice.types import from_arrow
    n = 10_000
    col = Column(torch.randint(0, 3, (n,), dtype=torch.int32), from_arrow(pa.string()), None,
                 pa.array(["DELIVER IN PERSON", "TAKE BACK RETURN", "COLLECT COD"]))
    page = Chunk({"s": col}, n)
    assert chunk_to_bytes(page, True).nbytes * 3 < chunk_to_bytes(page, False).nbytes


@pytest.mark.parametrize("name", sorted(tpch_queries()))
def test_tpch_with_decimals_through_decimal128(name, tpch_dir, tpch_duck, connect):
    """``integer_decimals=false, plain_strings=false``: pyarrow decodes the INT64-stored decimals
    as decimal128 and the strings as the file's Arrow schema says (string views), and the scan
    copies them out, as before the footer rewrites; ``selective_filters=false``: every conjunct
    of a filter over every row; ``disjoint_groups=false``: partial pages always merged."""
    sql = tpch_queries()[name]
    ours = connect(tpch_dir, integer_decimals=False, plain_strings=False, selective_filters=False,
                   disjoint_groups=False).sql(sql).to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), order_by_columns(sql, ours.column_names))
