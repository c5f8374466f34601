"""A join's build side is broadcast only when that moves fewer bytes than hashing both sides
(issue 52 item 5): the choice depends on the rank count and the probe side's size, not only
on a fixed build size."""

from types import SimpleNamespace

from sluice.physical.distribute import _build_bytes, broadcasts
from sluice.plan.logical import Scan
from sluice.catalog import RowGroup, TableInfo
from sluice.types import LType

import pyarrow as pa


def _scan(rows: int) -> Scan:
    t = TableInfo("t", ("/x.parquet",), pa.schema([("k", pa.int64())]), {"k": LType("int64")},
                  (RowGroup("/x.parquet", 0, rows, {}, rows * 8),))
    return Scan(t, "t", {"k": "k"})


def test_broadcast_when_it_moves_fewer_bytes():
    small, big = _scan(1_000), _scan(100_000)
    join = SimpleNamespace(build=small, probe=big)
    assert _build_bytes(small) > 0
    assert broadcasts(join, 32 << 20, 2) and broadcasts(join, 32 << 20, 64)
    assert not broadcasts(join, 32 << 20, 128)  # 127 copies of the build side outweigh hashing
    same = SimpleNamespace(build=big, probe=_scan(100_000))
    assert not broadcasts(same, 32 << 20, 2)  # as big as the probe side: hashed
    assert not broadcasts(join, 1024, 2)  # over the memory a rank may give it
    assert broadcasts(same, -1, 8) and not broadcasts(join, 0, 2)
