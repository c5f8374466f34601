"""Sort and top-k.

Full sort materialises its input and orders it with one stable sort per key, last key first
(NULL placement is one more stable sort on the null flag). With a LIMIT, a running top-k keeps
only ``offset + limit`` rows between chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Chunk, concat_chunks
from sluice.exec.evaluate import evaluate
from sluice.exec.kernels.keys import sortable
from sluice.exec.operators import Operator
from sluice.plan.logical import SortKey


def sort_permutation(chunk: Chunk, keys: tuple[SortKey, ...]) -> torch.Tensor:
    n = chunk.num_rows
    dev = next(iter(chunk.columns.values())).data.device if chunk.columns else torch.device("cpu")
    perm = torch.arange(n, device=dev)
    for k in reversed(keys):
        col = evaluate(k.expr, chunk).expand(n)
        v = sortable(col)
        if v.dtype == torch.bool:
            v = v.to(torch.int8)
        order = torch.sort(v[perm], stable=True, descending=not k.ascending).indices
        perm = perm[order]
        if col.valid is not None:
            nullkey = col.valid[perm] if k.nulls_first else ~col.valid[perm]
            perm = perm[torch.sort(nullkey.to(torch.int8), stable=True).indices]
    return perm


@dataclass
class SortOp(Operator):
    child: Operator
    keys: tuple[SortKey, ...]
    limit: int | None = None
    offset: int = 0
    label = "Sort"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        ks = ", ".join(f"{k.expr} {'ASC' if k.ascending else 'DESC'}" for k in self.keys)
        lim = f" limit={self.limit} offset={self.offset}" if self.limit is not None else ""
        return f"Sort [{ks}]{lim}"

    def execute(self, ctx):
        if self.limit is not None:
            keep = self.offset + self.limit
            best = None
            for chunk in self.child.stream(ctx):
                both = concat_chunks([best, chunk]) if best is not None else chunk
                perm = sort_permutation(both, self.keys)[:keep]
                best = both.take(perm)
            if best is None:
                return
            out = best.slice(self.offset, keep)
        else:
            data = concat_chunks(list(self.child.stream(ctx)))
            if data is None:
                return
            out = data.take(sort_permutation(data, self.keys))
            if self.offset:
                out = out.slice(self.offset, out.num_rows)
        if out.num_rows:
            yield out
