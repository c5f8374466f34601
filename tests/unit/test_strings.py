"""String columns: which ones the scan decodes as dictionaries, and identity-coded plain
strings (non-unique, possibly filtered dictionaries) behaving like deduplicated ones."""

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from sluice.chunk import Column, concat_columns, unify_dictionaries
from sluice.arrow import arrow_to_column, column_to_arrow
from sluice.io.parquet.decoders import read_as_dictionary as _read_as_dictionary
from sluice.types import LType


def test_low_cardinality_columns_come_as_dictionaries(tpch_dir):
    md = pq.ParquetFile(tpch_dir / "lineitem.parquet").metadata
    groups = list(range(md.num_row_groups))
    assert _read_as_dictionary(md, "l_shipmode", groups)
    assert _read_as_dictionary(md, "l_returnflag", groups)
    assert not _read_as_dictionary(md, "l_comment", groups)  # values barely repeat


def test_identity_coded_strings_unify_like_a_dictionary():
    s = LType("string")
    a = arrow_to_column(pa.array(["x", None, "y", "x", "z"], pa.string_view()), s)
    assert a.dictionary.null_count == 0 and a.valid is not None
    b = arrow_to_column(pa.array(["y", "x", "y"]), s)
    d, (ca, cb) = unify_dictionaries([a, b])
    assert len(d) == len(set(d.to_pylist()))  # deduplicated
    assert d.take(pa.array(ca.numpy())).to_pylist()[2:] == ["y", "x", "z"]
    assert d.take(pa.array(cb.numpy())).to_pylist() == ["y", "x", "y"]
    # Filtered: two rows left of a five-entry dictionary; only those entries are hashed.
    f = a.filter(torch.tensor([False, False, True, False, True]))
    d2, (cf,) = unify_dictionaries([f])
    assert len(d2) == 2 and d2.take(pa.array(cf.numpy())).to_pylist() == ["y", "z"]
    both = concat_columns([a, f])
    assert column_to_arrow(both).to_pylist() == ["x", None, "y", "x", "z", "y", "z"]
    assert column_to_arrow(Column(a.data, s, a.valid, a.dictionary)).to_pylist() == ["x", None, "y", "x", "z"]


def test_a_large_dictionary_shared_by_many_small_chunks_is_encoded_once():
    # Chunks of 8 rows coded into one 5,000-entry dictionary with repeats (a join's gather of
    # a dimension's strings): the first are cut down to their entries, later ones use the
    # dictionary whole, encoded once -- every chunk's strings come back the same either way.
    import numpy as np
    from sluice.chunk import REUSED_AFTER
    s = LType("string")
    words = pa.array([f"w{i % 3000}" for i in range(5000)])
    rng = np.random.default_rng(1)
    sizes = []
    for _ in range(REUSED_AFTER + 3):
        codes = torch.from_numpy(rng.integers(0, 5000, 8).astype(np.int32))
        d, (c,) = unify_dictionaries([Column(codes, s, None, words)])
        assert d.take(pa.array(c.numpy())).to_pylist() == words.take(pa.array(codes.numpy())).to_pylist()
        sizes.append(len(d))
    assert max(sizes[:REUSED_AFTER]) <= 8 and sizes[-1] == 3000  # cut down, then whole and deduplicated


def test_appended_concat_keeps_every_string_without_hashing():
    s = LType("string")
    a = arrow_to_column(pa.array(["x", "y", "x"]), s)
    b = arrow_to_column(pa.array(["y", None, "z"]), s)
    both = concat_columns([a, b], unify=False)
    assert len(both.dictionary) == 6  # appended, repeats kept
    assert column_to_arrow(both).to_pylist() == ["x", "y", "x", "y", None, "z"]


def test_string_caches_release_dictionaries_with_their_columns(tpch_dir):
    """Dictionaries deduplicated, hashed or prefixed for a query die with its chunks: a cache
    entry that referenced its own key once kept every string column seen alive (328 MiB after
    TPC-H Q10 at SF 10)."""
    import gc

    import sluice
    from sluice.chunk import _ENCODED
    from sluice.exec.string_prefix import _PREFIXES
    from sluice.kernels.hash import _STRINGS

    con = sluice.connect(tpch_dir, device="cpu", chunk_rows=4096)
    con.sql("select c_name, c_comment, max(o_comment), count(*) from customer join orders on c_custkey = o_custkey "
            "group by all order by 4 desc limit 5").to_arrow()
    con.sql("select distinct c_comment from customer").to_arrow()
    gc.collect()
    pool = pa.default_memory_pool()
    for cache in (_ENCODED, _PREFIXES, _STRINGS):
        assert not [v for v in cache._d.values() if v[0]() is not None]
    assert pool.bytes_allocated() < 4 << 20


def test_filter_columns_equals_filtering_each_column():
    """The positions found once and gathered from every column give what a mask per column
    gives: values, NULLs, dictionary strings and constants."""
    from sluice.chunk import filter_columns
    g = torch.Generator().manual_seed(3)
    n = 1000
    mask = torch.rand(n, generator=g) < 0.3
    cols = {
        "i": arrow_to_column(pa.array([None if k % 7 == 0 else k for k in range(n)], pa.int64()), LType("int64")),
        "s": arrow_to_column(pa.array([f"v{k % 5}" if k % 11 else None for k in range(n)]).dictionary_encode(),
                             LType("string")),
        "f": arrow_to_column(pa.array([k / 3 for k in range(n)]), LType("float64")),
    }
    got = filter_columns(cols, mask)
    for c, col in cols.items():
        want = column_to_arrow(col.filter(mask))
        assert column_to_arrow(got[c]).to_pylist() == want.to_pylist()
        assert column_to_arrow(got[c]).to_pylist() == [v for v, k in zip(column_to_arrow(col).to_pylist(),
                                                                         mask.tolist()) if k]


def test_map_slices_equals_one_call():
    import pyarrow.compute as pc
    from sluice.kernels import parallel
    arr = pa.array([f"x{i % 977} special {i} requests" if i % 5 else None for i in range(3 * parallel.MIN_SLICE + 7)])
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        got = parallel.map_slices(lambda d: pc.match_like(d, "%7%requests%"), arr)
        assert got.equals(pc.match_like(arr, "%7%requests%"))
        up = parallel.map_slices(pc.utf8_upper, arr)
        assert up.equals(pc.utf8_upper(arr))
    finally:
        torch.set_num_threads(before)


SLICED = [
    "select count(*) from orders where o_comment not like '%special%requests%'",
    "select count(*) from orders where o_comment ilike '%SPECIAL%'",
    "select count(*) from orders where starts_with(o_comment, 'fur') or contains(o_comment, 'ly ')",
    "select sum(strpos(o_comment, 'a')), max(regexp_replace(o_comment, '[aeiou]', '#', 'g')) from orders",
    "select max(lpad(o_comment, 20, '*')), min(split_part(o_comment, ' ', 2)) from orders",
]


def test_string_functions_over_sliced_dictionaries(tpch_dir, tpch_duck, connect, monkeypatch):
    # Slices of 1,000 entries: every string function of these queries runs slice by slice.
    from sluice.kernels import parallel
    from sluice.testing.oracle import compare
    monkeypatch.setattr(parallel, "MIN_SLICE", 1000)
    pool = parallel.compute_pool()
    used = []
    monkeypatch.setattr(parallel, "compute_pool", lambda: used.append(1) or pool)
    for mode in ("direct", "pushdown"):  # filters on the consumer (sliced), on I/O threads (not)
        con = connect(tpch_dir, threads=2, scan_mode=mode)
        for sql in SLICED:
            compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())
    assert len(used) >= len(SLICED)
