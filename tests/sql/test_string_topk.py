"""ORDER BY a string LIMIT k: each chunk's candidates are first cut by the strings' 8-byte
prefixes (ties kept), then sorted exactly -- against DuckDB on strings that share long
prefixes, differ past byte 8, are empty, NULL, or not ASCII."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.testing.oracle import compare, duckdb_tables


@pytest.fixture(scope="module")
def words_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("strtopk")
    r = random.Random(11)
    stems = ["http://www.example.com/", "http://www.example.org/", "abcdefgh", "abcdefg", "", "zz", "\u00fcber",
             "Stra\u00dfe", "\u65e5\u672c", "a", "abcdefgh\x00"]
    vals = [None if r.random() < 0.08 else r.choice(stems) + (str(r.randint(0, 50)) if r.random() < 0.7 else "")
            for _ in range(6000)]
    pq.write_table(pa.table({"i": pa.array(range(len(vals))), "s": pa.array(vals, pa.string())}),
                   root / "w.parquet", row_group_size=700)
    return root


@pytest.mark.parametrize("order", ["s", "s desc", "s nulls first", "s desc nulls last", "s, i desc"])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_order_by_a_string_limit_equals_duckdb(order, k, words_dir, connect):
    sql = f"select s, i from w order by {order}, i limit {k}"
    ours = connect(words_dir, chunk_rows=1000).sql(sql).to_arrow()
    compare(ours, duckdb_tables(words_dir).sql(sql).to_arrow_table(), order_cols=[0, 1])


def test_prefix_candidates_are_a_superset_of_the_best(words_dir):
    # The cut itself: every one of the k best rows of a chunk passes it.
    import torch

    from sluice.chunk import Column
    from sluice.exec.sort import _string_candidates_mask
    from sluice.plan.logical import SortKey
    from sluice.types import LType
    arr = pq.read_table(words_dir / "w.parquet").column("s").combine_chunks()
    enc = arr.dictionary_encode()
    codes = torch.tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=torch.int32)
    valid = torch.tensor(arr.is_valid().to_numpy(zero_copy_only=False))
    col = Column(codes, LType("string"), valid, enc.dictionary)
    for asc in (True, False):
        key = SortKey(None, asc, not asc)
        mask = _string_candidates_mask(col, 10, key)
        assert mask is not None
        best = sorted((s, i) for i, s in enumerate(arr.to_pylist()) if s is not None)
        best = best[:10] if asc else sorted(best, key=lambda t: t[0], reverse=True)[:10]
        assert all(bool(mask[i]) for _, i in best)
