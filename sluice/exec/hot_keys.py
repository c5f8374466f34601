"""Hot join keys split across ranks (issue 52 item 5).

A hash-partitioned join sends every row of one key value to one rank: a key holding half the
probe side's rows makes that rank receive half of them while the others idle. For a key found hot
when the plan was lowered (:mod:`sluice.physical.hot_keys`), the probe side's rows of that key
instead stay on the rank that read them (the scans share rows out evenly) and the build side's
rows of that key go to every rank: each probe row still meets every build row of its key, once.
That is exact for joins that emit each probe row's matches or decide a probe row alone (inner,
probe-outer, semi, anti); a join that emits unmatched build rows (build-outer, full) or build
rows once (build semi / anti) would repeat them, so it keeps the plain hash.

:meth:`HotKeys.destinations` is the exchange's routing of a chunk's rows under this rule (the
rest go where their hash says).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Chunk
from sluice.expr.evaluate import evaluate
from sluice.expr.nodes import Expr


@dataclass(frozen=True)
class HotKeys:
    """The hot values of a join's single integer key and this side's role: ``stay`` (probe rows
    of a hot key stay on their rank) or ``all`` (build rows of a hot key go to every rank)."""

    key: Expr
    values: tuple[int, ...]
    role: str

    def __post_init__(self):
        if self.role not in ("stay", "all"):
            raise ValueError(f"hot key role {self.role!r}")

    def describe(self) -> str:
        how = "kept on their rank" if self.role == "stay" else "sent to every rank"
        return f"hot keys {list(self.values)} {how}"

    def hot_rows(self, chunk: Chunk) -> torch.Tensor:
        """Which rows hold a hot key (a NULL key never does)."""
        n = chunk.num_rows
        k = evaluate(self.key, chunk).expand(n)
        hot = torch.tensor(self.values, dtype=torch.int64, device=k.data.device)
        mask = torch.isin(k.data.to(torch.int64), hot)
        return mask if k.valid is None else mask & k.valid

    def destinations(self, chunk: Chunk, dest: torch.Tensor, world: int, rank: int) -> list[tuple[int, Chunk]]:
        """(rank, rows) for every destination: ``dest`` (each row's hash destination) for the
        rows of other keys, this rank (``stay``) or every rank (``all``) for the hot ones."""
        hot = self.hot_rows(chunk)
        if self.role == "stay":
            dest = torch.where(hot, torch.full_like(dest, rank), dest)
            return split_by_destination(chunk, dest, world)
        if not bool(hot.any()):
            return split_by_destination(chunk, dest, world)
        cold = split_by_destination(chunk.take(torch.nonzero(~hot).flatten()), dest[~hot], world)
        rows = chunk.take(torch.nonzero(hot).flatten())
        return cold + [(d, rows) for d in range(world)]



def split_by_destination(chunk: Chunk, dest: torch.Tensor, world: int) -> list[tuple[int, Chunk]]:
    """(destination, its rows) for each destination in ``dest`` (a rank per row) that gets any,
    in rank order, each destination's rows in their order."""
    counts = torch.bincount(dest, minlength=world).tolist()
    order = torch.argsort(dest, stable=True)
    out, start = [], 0
    for d, c in enumerate(counts):
        if c:
            out.append((d, chunk.take(order[start:start + c])))
        start += c
    return out
