"""WITH RECURSIVE t USING KEY (k, agg(v) ...): a recursive CTE whose result is a table keyed by
``k`` -- each iteration's rows update the rows of their key instead of adding rows (DuckDB's).

::

    anchor / step rows --update by key--> state [keys | last values | aggregate states]
                                              |-- finalize --> t (the CTE's rows, and recurring.t)
                                              '-- UNION: the keys whose row changed --> work table
                                                  UNION ALL: the step's rows as they came

1. An iteration's rows (the anchor's, then the step's) are candidates: each becomes one row of
   states (every USING KEY aggregate's accumulator over that row alone), appended after the
   state's rows, and the rows are grouped by the key: the state's row and the candidates of a
   key merge (the accumulators' merge), and a column without an aggregate takes the value of
   the key's last candidate (DuckDB's LAST). Groups keep the order of their first row, so the
   state's keys stay where they were and new keys follow in the order they came.
2. The state finalized is the CTE's table: ``recurring.t`` in the step reads it as it was
   when the step started, and the query reads it at the end.
3. The next work table: with UNION, the finalized rows of the new keys and of the keys whose
   row is distinct (IS DISTINCT FROM, column by column) from before; with UNION ALL, the
   candidates themselves. The recursion stops when it is empty (``recursion_limit`` as for
   any recursive CTE).

Each iteration is a few grouping passes over the state and the candidates (no loop over rows);
the state, its finalized rows and the work table are held against the memory budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Chunk, Column, concat_chunks
from sluice.exec.aggregate_functions import make_accumulator, result
from sluice.exec.operators import Operator
from sluice.exec.recursive import check_runs, recurring_slot, reset_step
from sluice.expr.evaluate import evaluate
from sluice.kernels.keys import first_rows, group_ids
from sluice.plan.logical import AggCall


@dataclass(eq=False)
class KeyedRecursiveUnionOp(Operator):
    anchor: Operator
    step: Operator
    key: int
    distinct: bool  # UNION: the work table is the changed keys' rows; UNION ALL: the step's rows
    names: tuple[str, ...]
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]
    recurring: bool = False
    label = "RecursiveUnion"

    def __post_init__(self):
        self.children = (self.anchor, self.step)
        aggregated = dict(self.aggs)
        self.lasts = [n for n in self.names if n not in self.keys and n not in aggregated]
        self.accs = {n: make_accumulator(f"a{i}", call.func, call.arg.type if call.arg is not None else None)
                     for i, (n, call) in enumerate(self.aggs)}

    def describe(self):
        aggs = "".join(f", {call}" for _, call in self.aggs)
        return f"RecursiveUnion{' distinct' if self.distinct else ' all'} #{self.key} USING KEY ({', '.join(self.keys)}{aggs})"

    def execute(self, ctx):
        limit = ctx.config.recursion_limit
        with ctx.memory.reservation(f"{self.label} keyed rows") as res:
            state: Chunk | None = None
            final: Chunk | None = None
            candidates = [c for c in self.anchor.stream(ctx) if c.num_rows]
            runs = 0
            while True:
                state, final, changed = self._update(state, final, candidates, ctx.device)
                work = candidates if not self.distinct else ([changed] if changed is not None else [])
                res.resize(sum(c.nbytes for c in [state, final, *work] if c is not None))
                if not work:
                    break
                runs += 1
                check_runs(runs, limit)
                ctx.recursive_work[self.key] = work
                if self.recurring:
                    ctx.recursive_work[recurring_slot(self.key)] = [final]
                reset_step(self.step, ctx)
                candidates = [c for c in self.step.stream(ctx) if c.num_rows]
            if final is None:
                return
            rows = ctx.config.chunk_rows
            for s in range(0, final.num_rows, rows):
                yield final.slice(s, min(final.num_rows, s + rows))

    def _update(self, state: Chunk | None, final: Chunk | None, candidates: list[Chunk],
                dev) -> tuple[Chunk | None, Chunk | None, Chunk | None]:
        """(the state, its finalized rows, the finalized rows of the keys that are new or
        changed) after ``candidates`` (step 1 and 3 of the module docstring)."""
        if not candidates:
            return state, final, None
        data = concat_chunks([c.select(list(self.names)) for c in candidates])
        n = data.num_rows
        rows = {k: data.columns[k].expand(n) for k in (*self.keys, *self.lasts)}
        each, ones = torch.arange(n, device=dev), torch.ones(n, dtype=torch.int64, device=dev)
        for name, call in self.aggs:
            arg = evaluate(call.arg, data).expand(n) if call.arg is not None else None
            rows.update(self.accs[name].update(arg, each, n, ones))
        both = concat_chunks(([state] if state is not None else []) + [Chunk(rows, n, home=data.device)])
        total, old = both.num_rows, (state.num_rows if state is not None else 0)
        ids, g = group_ids([both.columns[k] for k in self.keys], total, dev)
        ids = ids.to(dev)
        # groups in the order of their first row: the state's keys first, where they were
        order = torch.argsort(first_rows(ids, g))
        rank = torch.empty_like(order)
        rank[order] = torch.arange(g, device=order.device)
        ids = rank[ids]
        firsts = first_rows(ids, g)
        lasts = torch.full((g,), -1, dtype=torch.int64, device=ids.device).scatter_reduce_(
            0, ids, torch.arange(total, device=ids.device), reduce="amax")
        cols = {k: both.columns[k].take(firsts) for k in self.keys}
        cols.update({k: both.columns[k].take(lasts) for k in self.lasts})
        for name, acc in self.accs.items():
            cols.update(acc.merge({k: v for k, v in both.columns.items() if k.startswith(acc.prefix + "#")}, ids, g))
        new_state = Chunk(cols, g, home=both.device)
        new_final = self._finalize(new_state)
        if not self.distinct:
            return new_state, new_final, None
        keep = torch.cat([_changed(final, new_final.slice(0, old), self._payload()) if old else
                          torch.zeros(0, dtype=torch.int64, device=ids.device),
                          torch.arange(old, g, device=ids.device)])
        return new_state, new_final, (new_final.take(keep) if keep.numel() else None)

    def _payload(self) -> list[str]:
        return [n for n in self.names if n not in self.keys]

    def _finalize(self, state: Chunk) -> Chunk:
        aggregated = dict(self.aggs)
        cols: dict[str, Column] = {}
        for n in self.names:
            if n in aggregated:
                acc = self.accs[n]
                cols[n] = result(aggregated[n].func, acc,
                                 {k: v for k, v in state.columns.items() if k.startswith(acc.prefix + "#")},
                                 aggregated[n].type)
            else:
                cols[n] = state.columns[n]
        return Chunk(cols, state.num_rows, home=state.device)


def _changed(before: Chunk, after: Chunk, payload: list[str]) -> torch.Tensor:
    """Positions of the rows of ``after`` distinct from the same row of ``before`` in some
    ``payload`` column (NULLs equal, as IS DISTINCT FROM compares; none without payload)."""
    m = before.num_rows
    dev = next(iter(after.columns.values())).data.device
    if not payload:
        return torch.zeros(0, dtype=torch.int64, device=dev)
    both = concat_chunks([before.select(payload), after.select(payload)])
    ids, _ = group_ids([both.columns[k].expand(2 * m) for k in payload], 2 * m, determining=False)
    ids = ids.to(dev)
    return torch.nonzero(ids[:m] != ids[m:]).flatten()
