"""WITH RECURSIVE: the anchor's rows, then the step run again over the rows the last run
added, until a run adds none (the standard's iteration, as DuckDB and PostgreSQL run it).

The work table (the last run's rows) is held against the memory budget; the rows already
emitted are not kept, except for UNION (not ALL), which keeps one copy of every distinct
row to drop repeats -- that is also what ends a cycle. The step's operators run once per
iteration: scans in it start a fresh reader each time, and shared subplans in it are
recomputed (they may read the work table). ``recursion_limit`` bounds the iterations so a
recursion that never ends is an error, not a hang.

``recurring.<name>`` in the step (DuckDB's) reads every row the CTE has produced so far: for
UNION the distinct rows already kept, for UNION ALL the rows emitted, then kept (and
reserved) only where the step reads them. USING KEY runs in :mod:`sluice.exec.recursive_key`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Chunk, concat_chunks
from sluice.errors import ExecutionError
from sluice.kernels.keys import first_rows, group_ids
from sluice.exec.operators import Operator, ScanOp, SharedOp


def recurring_slot(key: int) -> tuple[str, int]:
    """Where ``ctx.recursive_work`` holds the rows ``recurring.<name>`` reads for CTE ``key``."""
    return ("recurring", key)


@dataclass(eq=False)
class WorkTableOp(Operator):
    key: int
    recurring: bool = False  # recurring.<name>: every row so far, not the last iteration's
    label = "WorkTable"

    def execute(self, ctx):
        yield from ctx.recursive_work.get(recurring_slot(self.key) if self.recurring else self.key, [])

    def describe(self):
        if self.recurring:
            return f"WorkTable (recurring: every row so far of recursive CTE #{self.key})"
        return f"WorkTable (rows of the previous iteration of recursive CTE #{self.key})"


@dataclass(eq=False)
class RecursiveUnionOp(Operator):
    anchor: Operator
    step: Operator
    key: int
    distinct: bool
    names: tuple[str, ...]
    recurring: bool = False  # the step reads recurring.<name>
    label = "RecursiveUnion"

    def __post_init__(self):
        self.children = (self.anchor, self.step)

    def describe(self):
        return f"RecursiveUnion{' distinct' if self.distinct else ' all'} #{self.key}"

    def execute(self, ctx):
        limit = ctx.config.recursion_limit
        names = list(self.names)
        with ctx.memory.reservation(f"{self.label} rows") as res:
            seen: Chunk | None = None
            emitted: list[Chunk] = []  # (UNION ALL, where the step reads recurring.<name>)
            work = [c for c in self.anchor.stream(ctx) if c.num_rows]
            runs = 0
            while True:
                if self.distinct:
                    work, seen = _new_rows(work, seen, names)
                elif self.recurring:
                    emitted += work
                res.resize(sum(c.nbytes for c in work) + (seen.nbytes if seen is not None else 0)
                           + sum(c.nbytes for c in emitted))
                yield from work
                if not work:
                    return
                runs += 1
                check_runs(runs, limit)
                ctx.recursive_work[self.key] = work
                if self.recurring:
                    ctx.recursive_work[recurring_slot(self.key)] = [seen] if self.distinct else list(emitted)
                reset_step(self.step, ctx)
                work = [c for c in self.step.stream(ctx) if c.num_rows]


def check_runs(runs: int, limit: int) -> None:
    """A recursion past ``recursion_limit`` iterations is an error, not a hang."""
    if runs > limit:
        raise ExecutionError(f"recursive CTE still adds rows after {limit} iterations "
                             f"(recursion_limit); is its stop condition right?")


def reset_step(step: Operator, ctx) -> None:
    """Let the step's operators run again: new scan readers, recomputed shared subplans,
    empty runtime filters and MIN / MAX bounds (the last step's keys are not this one's)."""
    for op in step.walk():
        for slot in getattr(op, "publishes", ()):  # a join's, an exchange's or a top-k's
            ctx.filters.pop(slot.spec, None)
        for spec in getattr(op, "minmax_bounds", ()):  # the last step's groups are not this one's
            ctx.bounds.pop(spec, None)
        if isinstance(op, ScanOp):
            for spec in op.runtime_filters:  # (filled above it, maybe outside the step)
                ctx.filters.pop(spec, None)
            ctx.run(op).reader = None
        elif isinstance(op, SharedOp):
            ctx.run(op).result = None


def _new_rows(chunks: list[Chunk], seen: Chunk | None, names: list[str]) -> tuple[list[Chunk], Chunk | None]:
    """The distinct rows of ``chunks`` not in ``seen`` (NULLs equal, as UNION compares), and
    ``seen`` with them added."""
    if not chunks:
        return [], seen
    parts = ([seen] if seen is not None else []) + [Chunk({k: c.columns[k] for k in names}, c.num_rows, home=c.device) for c in chunks]
    data = concat_chunks(parts)
    n = data.num_rows
    cols = [data.columns[k].expand(n) for k in names]
    ids, g = group_ids(cols, n)
    firsts = first_rows(ids, g)
    old = seen.num_rows if seen is not None else 0
    fresh = firsts[firsts >= old]
    if fresh.numel() == 0:
        return [], seen
    fresh, _ = torch.sort(fresh)
    added = Chunk({k: data.columns[k].expand(n).take(fresh.to(cols[0].data.device) if cols else fresh)
                   for k in names}, int(fresh.numel()), home=data.device)
    everything = Chunk({k: data.columns[k].expand(n).take(torch.sort(firsts)[0]) for k in names}, g, home=data.device)
    return [added], everything
