"""An ordered gather's received pages that go to disk stay counted until they are written: the
spill writer holds them meanwhile (a rank whose gather spilled every page held tens of MiB no
pool saw), and a source spilled to make room is waited for, not followed by every other."""

from __future__ import annotations

import torch

from sluice.chunk import Chunk, Column
from sluice.config import Config
from sluice.exec.context import ExecContext
from sluice.exec.ordered_pages import OrderedPages
from sluice.io.memory import MemoryPool
from sluice.types import INT64


class SlowFile:
    """A spill target whose writes land only when told (``land``)."""

    def __init__(self) -> None:
        self.pages, self.pending = [], []

    def append(self, pages, on_written=None) -> None:
        self.pages += pages
        self.pending.append(on_written)

    def land(self) -> None:
        for done in self.pending:
            if done is not None:
                done()
        self.pending = []

    def flush(self) -> None:
        self.land()

    def read(self, device=None):
        yield from self.pages

    def delete(self) -> None:
        pass


def page(start: int, n: int = 1000) -> Chunk:
    return Chunk({"k": Column(torch.arange(start, start + n), INT64)}, n)


def test_pages_being_written_stay_counted(tmp_path, monkeypatch):
    cfg = Config.from_settings({"force_spill": True, "spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(1 << 30, cap=None))
    files = []
    monkeypatch.setattr(ExecContext, "spill_target", lambda self, label: files.append(SlowFile()) or files[-1])
    got = OrderedPages(ctx, "Gather received", 2)
    got.add(1, page(100))
    got.add(0, page(0))
    assert ctx.memory.used == 2 * page(0).nbytes  # both on their way to disk
    for f in files:
        f.land()
    assert ctx.memory.used == 0
    assert torch.equal(torch.cat([p.columns["k"].data for p in got.stream()]),
                       torch.cat([torch.arange(0, 1000), torch.arange(100, 1100)]))
    got.close()


def test_a_source_spilled_for_room_is_waited_for(tmp_path, monkeypatch):
    nb = page(0).nbytes
    cfg = Config.from_settings({"spill_dir": str(tmp_path)}, environ={})
    ctx = ExecContext(cfg, torch.device("cpu"), None, None, memory=MemoryPool(3 * nb, cap=None))
    files = []
    monkeypatch.setattr(ExecContext, "spill_target", lambda self, label: files.append(SlowFile()) or files[-1])
    got = OrderedPages(ctx, "Gather received", 3)
    got.add(0, page(0))
    got.add(0, page(1000))
    got.add(1, page(5000))
    got.add(2, page(9000))  # no room: source 0 (the largest) goes to disk, and is waited for
    assert len(files) == 1 and got.held_bytes == [0, nb, nb]
    assert ctx.memory.used == 2 * nb
    assert torch.equal(torch.cat([p.columns["k"].data for p in got.stream()]),
                       torch.cat([torch.arange(0, 2000), torch.arange(5000, 6000), torch.arange(9000, 10000)]))
    got.close()
