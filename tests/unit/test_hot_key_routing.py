"""The exchange's routing of a join's hot key values (exec/hot_keys.py): a probe side's hot rows
stay on the sending rank, a build side's go to every rank, every other row (NULL keys too) to
its hash destination, each exactly once."""

from __future__ import annotations

import torch

from sluice.chunk import Chunk, Column
from sluice.exec.hot_keys import HotKeys
from sluice.expr.nodes import Col
from sluice.types import INT64


def _chunk() -> Chunk:
    k = Column(torch.tensor([0, 1, 0, 5, 2, 0]), INT64, torch.tensor([True, True, True, False, True, True]))
    ids = Column(torch.arange(6), INT64)
    return Chunk({"k": k, "id": ids}, 6, 0, torch.device("cpu"))


def _ids(parts, d):
    return sorted(i for dest, c in parts if dest == d for i in c.columns["id"].data.tolist())


def test_probe_rows_of_a_hot_key_stay():
    dest = torch.tensor([1, 2, 1, 0, 0, 1])  # the hash's destinations
    parts = HotKeys(Col("k", INT64), (0,), "stay").destinations(_chunk(), dest, 3, rank=2)
    assert _ids(parts, 2) == [0, 1, 2, 5] and _ids(parts, 0) == [3, 4] and _ids(parts, 1) == []


def test_build_rows_of_a_hot_key_go_everywhere():
    dest = torch.tensor([1, 2, 1, 0, 0, 1])
    parts = HotKeys(Col("k", INT64), (0, 5), "all").destinations(_chunk(), dest, 3, rank=0)
    hot = [0, 2, 5]  # (row 3's key is NULL: never hot, whatever its value)
    assert _ids(parts, 0) == sorted(hot + [3, 4]) and _ids(parts, 1) == hot and _ids(parts, 2) == sorted(hot + [1])
