"""Nested-loop join: a join without equality keys -- a cross join, a scalar subquery's one
row beside every probe row, EXISTS with only non-equality correlation. Every probe row meets
every build row, in batches of about a chunk of pairs (memory bounded whatever the result's
size); with an inequality between the sides only the pairs it allows
(:mod:`sluice.exec.range_join`). Join modes and null extension as the hash join's."""

from __future__ import annotations

from typing import Iterator

import torch

from sluice.chunk import Chunk
from sluice.errors import ExecutionError
from sluice.exec.join_mode import BUILD_EMITTING, JoinMode
from sluice.exec.null_extend import null_column, null_extended
from sluice.exec.range_join import SortedBuild, find_range_condition
from sluice.expr.evaluate import evaluate_predicate


def nested_loop_join(op, ctx, build: Chunk) -> Iterator[Chunk]:
    """A join without equality keys (``op``, a HashJoinOp whose build side is ``build``):
    a scalar subquery's single row beside every probe row, or every pair the condition keeps."""
    m = build.num_rows
    dev = ctx.device
    if op.single_row:
        if m > 1:
            raise ExecutionError("a scalar subquery returned more than one row")
        if m == 0:
            consts = {k: null_column(t, 1, dev, None) for k, t in op.build_schema.items()}
        else:
            consts = dict(build.columns)
        for chunk in op.probe.stream(ctx):
            cols = dict(chunk.columns)
            for k, c in consts.items():
                cols[k] = c.expand(1).take(torch.zeros(chunk.num_rows, dtype=torch.long, device=dev)) \
                    if chunk.num_rows else c.filter(torch.zeros(1, dtype=torch.bool, device=dev))
            yield Chunk(cols, chunk.num_rows, chunk.seq, dev)
        return
    flags = torch.zeros(m, dtype=torch.bool, device=dev)
    cond = find_range_condition(op.residual, set(op.probe_schema), set(op.build_schema))
    ranged = SortedBuild(cond, build) if cond is not None and m else None
    residual = cond.rest if ranged is not None else op.residual
    emits_pairs = op.mode in (JoinMode.INNER, JoinMode.CROSS, JoinMode.BUILD_OUTER, JoinMode.PROBE_OUTER, JoinMode.FULL)
    with ctx.state_pool.reservation(f"{op.label} pairs") as res:
        batch = _pair_batch(op, ctx, res, m)
        yield from _pairs_out(op, ctx, build, m, flags, ranged, residual, emits_pairs, batch)
    if op.mode in BUILD_EMITTING:
        out = op._emit_build(build, flags, dev)
        if out is not None and out.num_rows:
            yield out


def _pair_batch(op, ctx, res, m: int) -> int:
    """Pairs made at a time: a chunk's worth, fewer where the budget cannot hold them (the
    pairs' columns, their indices and the residual's temporaries, reserved), never below
    a floor that keeps the work in tensors."""
    cols = [t for k, t in {**op.probe_schema, **op.build_schema}.items()
            if op._pair_cols is None or k in op._pair_cols]
    per_pair = 3 * (16 + sum(t.torch_dtype.itemsize + 1 for t in cols))
    batch = max(min(ctx.config.chunk_rows, _MAX_PAIR_BATCH), 1)
    while batch > _MIN_PAIR_BATCH and not res.try_grow(batch * per_pair):
        batch //= 2
    if res.size == 0:
        res.force(batch * per_pair)  # the floor: counted, past the budget (throttled, not killed)
    return max(batch, 1)


def _pairs_out(op, ctx, build: Chunk, m: int, flags, ranged, residual, emits_pairs: bool, batch: int):
    dev = ctx.device
    for chunk in op.probe.stream(ctx):
        n = chunk.num_rows
        matched = torch.zeros(n, dtype=torch.bool, device=dev)
        # Pairs are made (and emitted) a batch of about a chunk at a time: memory stays
        # bounded whatever the result's size.
        for p, b in (ranged.pairs(chunk, batch) if ranged is not None else _all_pairs(n, m, batch, dev)):
            pair = op._pair(chunk, build, p, b)
            if residual is not None:
                keep = evaluate_predicate(residual, pair)
                p, b = p[keep], b[keep]
                pair = pair.filter(keep)
            matched[p] = True
            flags[b] = True
            if emits_pairs and pair.num_rows:
                yield pair
        outs = []
        if op.mode == JoinMode.SEMI:
            outs = [chunk.filter(matched)]
        elif op.mode == JoinMode.MARK:
            outs = [op._marked(chunk, matched, m, False, [])]
        elif op.mode == JoinMode.ANTI:
            outs = [chunk.filter(~matched)]
        elif op.mode in (JoinMode.PROBE_OUTER, JoinMode.FULL):
            um = chunk.filter(~matched)
            if um.num_rows:
                outs.append(null_extended(um, op.build_schema, dev))
        for o in outs:
            if o.num_rows:
                yield o


#: Pairs of a non-equi join made at once, at least: below this the per-batch overhead dominates.
_MIN_PAIR_BATCH = 4096
#: ... and at most: each pair's columns are gathered and the condition's temporaries made per
#: batch. Three 1,000-row tables joined on < (115 M result rows), RSS above an idle process:
#: 1 M pairs a batch peaked 370-550 MB higher, 256 K 180-290 MB, in 9-10 s either way.
_MAX_PAIR_BATCH = 1 << 18


def _all_pairs(n: int, m: int, batch: int, dev):
    """Every (probe row, build row) pair of ``n`` x ``m``, about ``batch`` pairs at a time."""
    rows = max(1, batch // max(m, 1))
    for s in range(0, n, rows):
        e = min(n, s + rows)
        yield torch.arange(s, e, device=dev).repeat_interleave(m), torch.arange(m, device=dev).repeat(e - s)
