"""Range partitioning for a sort over several ranks (issue 52: no rank-0 funnel under ORDER BY).

An ORDER BY without LIMIT used to gather every row to rank 0 and sort there: one process held
and sorted the whole input. Instead the rows are split into ``world`` ranges of the sort keys,
rank ``r`` receives the ``r``-th range and sorts it, and rank 0 gathers the sorted ranges in
rank order (:class:`sluice.exec.ordered_pages.OrderedPages`): the concatenation is the sorted
whole.

The ranges come from samples (the usual sample sort): every rank draws evenly spaced rows of
its input's sort keys, the samples are shared with one ``all_gather_object``, and every rank
sorts the same union the same way and takes the same ``world - 1`` splitters. A row goes to the
number of splitters that sort at or before it, found by sorting the splitters together with the
chunk's keys (stable, splitters first): rows with equal keys always meet on one rank, whatever
chunk or rank they come from, and the order is exactly :func:`sluice.exec.sort.sort_permutation`'s
(directions, NULLs first or last, strings by their bytes).
"""

from __future__ import annotations

import torch

from sluice.chunk import Chunk, concat_chunks
from sluice.exec.sort import sort_permutation
from sluice.expr.evaluate import evaluate
from sluice.expr.nodes import Col
from sluice.plan.logical import SortKey

#: Sampled key rows per rank and destination: enough that ranges come out within a few per
#: cent of even (the sample sort's oversampling), few enough to cross in one small message.
SAMPLES_PER_RANK = 64


def key_columns(chunk: Chunk, keys: tuple[SortKey, ...]) -> Chunk:
    """The chunk's sort keys as columns ``k0, k1, ...`` (what is sampled and compared)."""
    n = chunk.num_rows
    cols = {f"k{i}": evaluate(k.expr, chunk).expand(n) for i, k in enumerate(keys)}
    return Chunk(cols, n, home=chunk.device)


def key_order(keys: tuple[SortKey, ...]) -> tuple[SortKey, ...]:
    """The sort keys as they apply to :func:`key_columns`' output."""
    return tuple(SortKey(Col(f"k{i}", k.expr.type), k.ascending, k.nulls_first) for i, k in enumerate(keys))


class Sampler:
    """Evenly spaced key rows of a rank's input, at most ``cap`` of them kept."""

    def __init__(self, keys: tuple[SortKey, ...], world: int) -> None:
        self.keys = keys
        self.cap = SAMPLES_PER_RANK * world
        self.rows = 0
        self.parts: list[Chunk] = []

    def add(self, chunk: Chunk) -> None:
        n = chunk.num_rows
        if not n:
            return
        self.rows += n
        take = min(n, self.cap)
        idx = torch.linspace(0, n - 1, take, device=chunk.device).round().long()
        self.parts.append(key_columns(chunk.take(idx), self.keys))
        if sum(p.num_rows for p in self.parts) > 4 * self.cap:
            self.parts = [self._thin(concat_chunks(self.parts))]

    def _thin(self, rows: Chunk) -> Chunk:
        idx = torch.linspace(0, rows.num_rows - 1, self.cap, device=rows.device).round().long()
        return rows.take(idx)

    def sample(self) -> Chunk | None:
        """The kept rows (None: this rank had no input)."""
        rows = concat_chunks(self.parts)
        if rows is None or rows.num_rows <= self.cap:
            return rows
        return self._thin(rows)


def splitters(samples: list[Chunk], keys: tuple[SortKey, ...], world: int) -> Chunk | None:
    """``world - 1`` key rows cutting the sorted union of every rank's sample into even parts
    (None: no rank had input). ``samples`` in rank order: every rank computes the same rows."""
    union = concat_chunks([s for s in samples if s is not None and s.num_rows])
    if union is None:
        return None
    ordered = union.take(sort_permutation(union, key_order(keys)))
    n = ordered.num_rows
    cut = torch.tensor([(i * n) // world for i in range(1, world)], dtype=torch.long, device=ordered.device)
    return ordered.take(cut.clamp(max=n - 1))


def destinations(chunk: Chunk, cuts: Chunk | None, keys: tuple[SortKey, ...]) -> torch.Tensor:
    """Each row's rank: how many splitters sort at or before its keys."""
    n = chunk.num_rows
    if cuts is None or not n:
        return torch.zeros(n, dtype=torch.long, device=chunk.device)
    s = cuts.num_rows
    both = concat_chunks([cuts, key_columns(chunk, keys)])  # both on the query's device
    perm = sort_permutation(both, key_order(keys))  # stable: a splitter before the rows equal to it
    is_cut = perm < s
    before = torch.cumsum(is_cut.to(torch.long), 0)
    dest = torch.empty(n, dtype=torch.long, device=chunk.device)
    rows = ~is_cut
    dest[perm[rows] - s] = before[rows]
    return dest
