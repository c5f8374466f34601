"""Window operator: window functions over a stream sorted by (partition, order) keys.

The child is a Sort (which spills past the memory budget), so the rows of one partition
arrive together. Chunks are held only until their partitions are complete: when a chunk
starts a new partition, every row before that point is computed at once (each function as
registered in ``exec/window_functions.py``) and emitted. Held rows count against the memory
budget; a single partition larger than the budget is the one thing that cannot be spilled
here, and ends the query with a line naming the operator and the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, concat_chunks
from sluice.exec.operators import Operator
from sluice.exec.window_functions import OFFSET_BOUNDS, compute
from sluice.expr.evaluate import evaluate
from sluice.expr.nodes import Expr
from sluice.kernels import window as K
from sluice.plan.logical import SortKey, WindowCall


@dataclass(eq=False)
class WindowOp(Operator):
    child: Operator
    partition: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    calls: tuple[tuple[str, WindowCall], ...]
    label = "Window"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        part = ", ".join(str(e) for e in self.partition)
        order = ", ".join(f"{k.expr}{'' if k.ascending else ' desc'}" for k in self.order)
        calls = ", ".join(f"{n}={c}" for n, c in self.calls)
        return f"Window partition=[{part}] order=[{order}] [{calls}]"

    def execute(self, ctx) -> Iterator[Chunk]:
        pending: list[Chunk] = []
        with ctx.memory.reservation(f"{self.label} partition") as res:
            for chunk in self.child.stream(ctx):
                n = chunk.num_rows
                if n == 0:
                    continue
                res.grow(chunk.nbytes, "rows of one window partition")
                cut = self._last_partition_start(pending, chunk) if self.partition else 0
                if cut == 0:
                    pending.append(chunk)
                    continue
                done = pending + ([chunk.slice(0, cut)] if cut < n else [chunk])
                pending = [chunk.slice(cut, n)] if cut < n else []
                yield from self._compute(concat_chunks(done))
                res.resize(sum(c.nbytes for c in pending))
            if pending:
                yield from self._compute(concat_chunks(pending))

    def _last_partition_start(self, pending: list[Chunk], chunk: Chunk) -> int:
        """Index in ``chunk`` of the last row that starts a partition (0: none after row 0 or
        row 0 continues the held rows); rows before it complete every held partition."""
        n = chunk.num_rows
        cols = [evaluate(e, chunk).expand(n) for e in self.partition]
        starts = K.row_starts(cols, n, chunk.device)
        if pending:
            prev = pending[-1]
            edge = concat_chunks([prev.slice(prev.num_rows - 1, prev.num_rows), chunk.slice(0, 1)])
            two = [evaluate(e, edge).expand(2) for e in self.partition]
            starts[0] = bool(K.row_starts(two, 2, chunk.device)[1])
        else:
            starts[0] = False
        hits = torch.nonzero(starts).flatten()
        return int(hits[-1]) if hits.numel() else 0

    def _compute(self, data: Chunk) -> Iterator[Chunk]:
        n = data.num_rows
        dev = data.device
        pcols = [evaluate(e, data).expand(n) for e in self.partition]
        part_starts = K.row_starts(pcols, n, dev)
        part = K.Segments.of(part_starts)
        ocols = [evaluate(k.expr, data).expand(n) for k in self.order]
        peers = K.Segments.of(part_starts | K.row_starts(ocols, n, dev))
        idx = torch.arange(n, device=dev)
        key = None
        if any(c.frame[0] == "range" and (c.frame[1][0] in OFFSET_BOUNDS or c.frame[2][0] in OFFSET_BOUNDS)
               for _, c in self.calls):
            key = K.range_key(ocols[0], self.order[0].ascending, self.order[0].nulls_first)
        cols = dict(data.columns)
        for name, call in self.calls:
            cols[name] = compute(call, data, idx, part, peers, dev, key)
        yield Chunk(cols, n, data.seq, dev)
