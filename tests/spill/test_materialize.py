"""The materializer never loses or duplicates a row, whatever the budget, the page sizes, when
partitioning starts, which partitions spill (on its own or when another operator asks), and
how deep a partition is split again; and it leaves no spill file behind."""

from __future__ import annotations

import collections
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from sluice.chunk import Chunk, Column
from sluice.config import Config
from sluice.exec.context import ExecContext
from sluice.kernels.hash import hash_columns
from sluice.exec.materialize import Materializer
from sluice.io.memory import MemoryPool
from sluice.types import INT64


def make_ctx(limit: int, force: bool, spill_dir) -> ExecContext:
    cfg = Config.from_settings({"force_spill": force, "spill_dir": str(spill_dir)}, environ={})
    return ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(limit))


def page(keys: list[int], tag: int) -> Chunk:
    k = torch.tensor(keys, dtype=torch.int64)
    return Chunk({"k": Column(k, INT64), "t": Column(torch.full_like(k, tag), INT64)}, len(keys))


def rows(pages) -> collections.Counter:
    out = collections.Counter()
    for p in pages:
        out.update(zip(p.columns["k"].data.tolist(), p.columns["t"].data.tolist()))
    return out


def by_key(p: Chunk) -> torch.Tensor:
    return hash_columns([p.columns["k"]], p.num_rows)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pages=st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=300), min_size=1, max_size=25),
       limit_kib=st.sampled_from([64, 96, 256, 4096]), force=st.booleans(),
       threshold=st.sampled_from([0, 2000, None]), poke=st.lists(st.integers(0, 24), max_size=4),
       fit_factor=st.sampled_from([1.0, 3.0, 1e9]))
def test_rows_are_conserved(tmp_path, pages, limit_kib, force, threshold, poke, fit_factor):
    ctx = make_ctx(limit_kib << 10, force, tmp_path)
    other = ctx.memory.reservation("another operator")
    mat = Materializer(ctx, "test", by_key, threshold=threshold)
    added = collections.Counter()
    for i, keys in enumerate(pages):
        p = page(keys, i)
        added += rows([p])
        mat.add(p)
        if i in poke:  # another operator asks for memory: this one must spill for it
            ctx.memory.reclaim(ctx.memory.limit, requester=other)
    mat.finish()
    got = collections.Counter()
    if not mat.spilled and fit_factor > 1e8:
        got = rows(mat.pages())
    else:
        def drain(m: Materializer, depth: int) -> None:
            nonlocal got
            for part in m.partitions():
                if not part.fits(fit_factor) and depth < 2:
                    sub = part.split(to_disk=depth % 2 == 1)
                    drain(sub, depth + 1)
                    sub.close()
                    continue
                res = ctx.memory.reservation("reader")
                got += rows(part.load(res))
                res.free()
                m.release(part.index)
        drain(mat, 0)
    assert got == added
    mat.close()
    ctx.close()
    assert not any(e.name.startswith("sluice-spill-") for e in tmp_path.iterdir())
    assert ctx.memory.used == other.size == 0


def test_spills_largest_partition_first(tmp_path):
    from sluice.kernels.hash import partition_of
    from sluice.exec.materialize import PARTITION_BITS

    def part_of(key: int) -> int:
        return int(partition_of(hash_columns([Column(torch.tensor([key]), INT64)], 1), PARTITION_BITS)[0])

    ctx = make_ctx(200 << 10, False, tmp_path)
    mat = Materializer(ctx, "test", by_key, threshold=0)
    mat.add(page([1] * 3000 + [2] * 10, 0))  # one big partition, one small
    assert not mat.spilled
    mat.add(page([3] * 12000, 1))  # does not fit: the biggest held partition goes first
    assert mat.files[part_of(1)] is not None
    assert mat.files[part_of(2)] is None or part_of(2) == part_of(1)
    mat.finish()
    mat.close()
    ctx.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("page_rows", [20_000, 16_000])  # split as they come; gathered, then split
def test_spills_what_is_missing_when_the_resident_set_lags(tmp_path, monkeypatch, page_rows):
    """Where the resident cap binds and the resident set does not fall as partitions are spilled
    (pages being written, heap not handed back), an operator spills what was missing by the
    pool's own account and stops: it once spilled all 64 partitions for half a MiB (and, with
    small pages gathered first, every piece of the gathered batch failed against the cap)."""
    import random

    import sluice.io.memory as M
    rss = {"now": 100 << 20}
    monkeypatch.setattr(M, "anonymous_resident_bytes", lambda: rss["now"])
    monkeypatch.setattr(M, "release_to_os", lambda: None)
    monkeypatch.setattr(M, "RESIDENT_CHECK_INTERVAL", 0.0)
    monkeypatch.setattr(M, "RESIDENT_FLOOR_MIN", 0)
    pool = MemoryPool(1 << 30, cap=(100 << 20) + (4 << 20))  # a 1 GiB budget, 4 MiB under the cap
    cfg = Config.from_settings({"spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=pool)
    mat = Materializer(ctx, "test", by_key, threshold=0)
    r = random.Random(7)
    added = []
    for i in range(200_000 // page_rows):  # about 3 MiB over the 64 partitions
        added.append(page([r.randrange(1 << 40) for _ in range(page_rows)], i))
        mat.add(added[-1])
    assert not mat.spilled
    rss["now"] = pool.cap  # untracked memory fills the rest, and stays
    assert not mat.make_room(256 << 10)
    spilled = sum(f is not None for f in mat.files)
    assert 0 < spilled < 16, spilled
    mat.finish()
    assert rows(p for part in mat.partitions() for p in part.load(mat.res)) == rows(added)
    mat.close()
    ctx.close()
    assert os.listdir(tmp_path) == []
