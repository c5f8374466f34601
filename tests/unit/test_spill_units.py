"""Units of the spill machinery: the self-regulating codec policy with scripted costs, the value
hash, page round trips, and the memory pool."""

from __future__ import annotations

import pyarrow as pa
import pytest
import torch

from sluice.adapt.spill_codec import LEVELS, WINDOW, SpillCodec
from sluice.chunk import Chunk, Column
from sluice.errors import ResourcesExhausted
from sluice.kernels.hash import hash_columns, partition_of, string_hashes
from sluice.io.memory import MemoryPool
from sluice.arrow import batch_to_page, page_to_batch
from sluice.types import BOOL, DATE, FLOAT64, INT32, INT64, STRING, decimal


def feed(codec: SpillCodec, cost, windows: int) -> list[int]:
    """Run ``windows`` measurement windows; ``cost(level) -> (cpu_s, io_s)`` per MiB page."""
    seen = []
    for _ in range(windows):
        for _ in range(WINDOW):
            lv = codec.level
            cpu, io = cost(lv)
            codec.record(lv, 1 << 20, cpu, io)
        seen.append(codec.level)
    return seen


def test_slow_disk_steps_compression_up():
    # Writes cost 10 ms/MiB raw, compression 1 ms more per level and halves I/O per level.
    seen = feed(SpillCodec("auto"), lambda lv: (0.001 * lv, 0.010 / (2 ** lv)), 12)
    assert seen[-1] >= 2 and max(seen) < len(LEVELS)


def test_fast_disk_keeps_pages_uncompressed():
    seen = feed(SpillCodec("auto"), lambda lv: (0.004 * lv + 0.0001, 0.0005), 10)
    assert seen[-1] == 0


def test_never_slower_than_uncompressed():
    # Compression shrinks nothing: any level is slower in total, the policy returns to none.
    seen = feed(SpillCodec("auto"), lambda lv: (0.003 * lv, 0.005), 12)
    assert seen[-1] == 0


def test_balanced_costs_do_not_oscillate():
    seen = feed(SpillCodec("auto"), lambda lv: (0.002 * lv, 0.004 / (1 + lv)), 16)
    assert len(set(seen[-6:])) == 1


def test_fixed_codecs():
    assert SpillCodec("lz4").current() == ("lz4", None)
    c = SpillCodec("zstd")
    feed(c, lambda lv: (0.0, 1.0), 3)
    assert c.current() == ("zstd", 1)


def test_hash_equal_values_equal_hashes():
    a = Column(torch.tensor([0, 1, 2], dtype=torch.int32), STRING, None, pa.array(["x", "yy", "zzz"]))
    b = Column(torch.tensor([2, 0], dtype=torch.int32), STRING, None, pa.array(["yy", "q", "x"]))
    ha, hb = hash_columns([a], 3), hash_columns([b], 2)
    assert ha[0] == hb[0] and ha[1] == hb[1] and ha[2] != ha[0]
    i32 = Column(torch.tensor([5, -7], dtype=torch.int32), INT32)
    i64 = Column(torch.tensor([5, -7]), INT64)
    assert torch.equal(hash_columns([i32], 2, [INT64]), hash_columns([i64], 2, [INT64]))
    d2 = Column(torch.tensor([150]), decimal(2))
    d1 = Column(torch.tensor([15]), decimal(1))
    assert torch.equal(hash_columns([d2], 1, [decimal(2)]), hash_columns([d1], 1, [decimal(2)]))
    f = Column(torch.tensor([0.0, -0.0], dtype=torch.float64), FLOAT64)
    h = hash_columns([f], 2)
    assert h[0] == h[1]
    n = Column(torch.tensor([1, 2]), INT64, torch.tensor([False, False]))
    hn = hash_columns([n], 2)
    assert hn[0] == hn[1]


def test_string_hash_spreads_strings_differing_in_the_middle():
    s = pa.array([f"comment number {k} about things" for k in range(64000)])
    counts = torch.bincount(partition_of(string_hashes(s), 6), minlength=64)
    assert counts.min() > 500 and counts.max() < 1500


def test_page_round_trip_keeps_values_types_and_nulls():
    page = Chunk({
        "s": Column(torch.tensor([1, 0, 1], dtype=torch.int32), STRING, torch.tensor([True, False, True]),
                    pa.array(["a", "bb"])),
        "d": Column(torch.tensor([150, -3, 7]), decimal(2)),
        "b": Column(torch.tensor([True, False, True]), BOOL, torch.tensor([True, True, False])),
        "t": Column(torch.tensor([1, 2, 3], dtype=torch.int32), DATE),
    }, 3)
    back = batch_to_page(page_to_batch(page))
    assert back.columns["s"].dictionary.take(pa.array(back.columns["s"].data.numpy())).to_pylist()[0] == "bb"
    assert back.columns["s"].valid.tolist() == [True, False, True]
    assert back.columns["d"].type == decimal(2) and back.columns["d"].data.tolist() == [150, -3, 7]
    assert back.columns["b"].valid.tolist() == [True, True, False]
    assert back.columns["t"].type == DATE


def _strings(col: Column) -> list:
    return [None if col.valid is not None and not v else col.dictionary[int(k)].as_py()
            for k, v in zip(col.data.tolist(), (col.valid if col.valid is not None else [True] * col.data.numel()))]


def test_low_cardinality_strings_travel_as_dictionary_and_codes():
    # A flag-like column (3 entries for 12 rows) travels as its dictionary and codes, through an
    # IPC stream as spill files and the exchange write it; plain strings (identity codes) and a
    # big dictionary that a few rows point into travel by value.
    import pyarrow.ipc as ipc
    flags = Column(torch.tensor([0, 1, 2, 1] * 3, dtype=torch.int32), STRING,
                   torch.tensor([True, True, False, True] * 3), pa.array(["A", "N", "R"]))
    plain = Column(torch.arange(12, dtype=torch.int32), STRING, None, pa.array([f"c{i}" for i in range(12)]))
    big = Column(torch.tensor([5, 7] * 6, dtype=torch.int32), STRING, None, pa.array([f"x{i}" for i in range(100)]))
    page = Chunk({"f": flags, "p": plain, "b": big}, 12)
    batch = page_to_batch(page)
    assert pa.types.is_dictionary(batch.schema.field("f").type)
    assert batch.schema.field("p").type == pa.string() and batch.schema.field("b").type == pa.string()
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    back = batch_to_page(ipc.open_stream(sink.getvalue()).read_next_batch())
    for name, col in page.columns.items():
        assert _strings(back.columns[name]) == _strings(col), name
        assert back.columns[name].type == STRING


def test_pool_watches_the_resident_set(monkeypatch):
    """Near the resident cap a pool refuses what could spill or wait (try_grow, available),
    never what must not fail (grow: the budget alone decides); trims are tried first."""
    import sluice.io.memory as M
    rss = {"now": 100 << 20}
    trims = []
    monkeypatch.setattr(M, "anonymous_resident_bytes", lambda: rss["now"])
    monkeypatch.setattr(M, "release_to_os", lambda: trims.append(1))
    monkeypatch.setattr(M, "RESIDENT_CHECK_INTERVAL", 0.0)
    pool = MemoryPool(1 << 30, cap=200 << 20)   # a 1 GiB budget, 100 MiB resident already
    assert pool._floor == M.RESIDENT_FLOOR_MIN  # an eighth of the room under the cap, at least this
    r = pool.reservation("A")
    assert r.try_grow(60 << 20)                 # resident 100 + 60 MiB: under the cap
    rss["now"] = 160 << 20                      # the allocation is resident now
    assert pool.available == 40 << 20           # the cap, not the budget's 964 MiB
    rss["now"] = 190 << 20                      # memory no pool counts came on top
    assert not r.try_grow(20 << 20) and trims and pool.resident_refusals == 1
    r.grow(20 << 20)                            # must not fail: the budget allows it
    assert pool.used == 80 << 20
    rss["now"] = 120 << 20                      # freed -- but 80 MiB are reserved on a 100 MiB start:
    assert pool.available == 20 << 20           # reservations count before their memory exists
    assert r.try_grow(10 << 20)
    assert MemoryPool(1 << 30, "device_memory_limit", "device").cap is None
    monkeypatch.setattr(M, "physical_memory", lambda: 4 << 30)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # two ranks on this machine share it
    monkeypatch.setattr(M, "launcher_resident_bytes", lambda: 200 << 20)  # beside their launcher
    monkeypatch.setattr(M, "charged_mapped_bytes", lambda: 50 << 20)      # and the libraries' pages
    assert M.resident_cap() == int((4 << 30) * (1 - M.RESIDENT_MARGIN_SHARE) - (250 << 20)) // 2


def test_pool_reservations_and_errors():
    pool = MemoryPool(1000)
    a, b = pool.reservation("A"), pool.reservation("B")
    assert a.try_grow(600) and not b.try_grow(600) and b.try_grow(400)
    assert pool.available == 0 and pool.holders()[0] == ("A", 600)
    with pytest.raises(ResourcesExhausted, match=r"B needs .* \(held by A 600 B"):
        b.grow(10, "a page")
    a.free()
    assert pool.used == 400 and pool.peak == 1000
