"""ASOF join: each probe (left) row with the one build (right) row of equal keys whose
inequality value is nearest on the side the condition allows (``left.t >= right.t``: the
latest right value not after the left one).

The hash join's machinery materialises the right side and streams the left (a subclass of
:class:`sluice.exec.hash_join.HashJoinOp`): rows of one key set hash to one partition, so
hybrid spilling, the partition-by-partition join of spilled partitions and the exchanges
between ranks all keep each key set's right rows together. What differs is the join of a
partition held in memory -- sort-based, no pairs enumerated:

1. Index the right rows with no NULL key or value: their key group ``g`` (the rank of
   their key code among the distinct ones) and the rank ``r`` of their value among the ``R``
   distinct values, as one sortable int64 ``g * (2R + 1) + 2r + 1``; sort.
2. A left row's composite is ``g * (2R + 1) + s``, ``s = 2i + 1`` where its value equals
   the ``i``-th distinct value and ``2i`` where it falls just below it: one searchsorted
   places it among the right rows, and the nearest right row is the one just before (>=, >)
   or at (<=, <) that place -- if it has the same group.
3. Emit by mode as the hash join does: pairs (inner), left rows without a match
   null-extended (left), left rows with / without one (semi / anti), right rows no left row
   picked, after the left side (right, full).

Equal right rows (same keys and value) are interchangeable to DuckDB, which picks any; this
picks the last one read. Without equality keys the whole right side is one group (held in
memory, as a join without keys is; across ranks it is broadcast or gathered, not hashed).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sluice.chunk import Chunk
from sluice.errors import ResourcesExhausted
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.join_mode import BUILD_EMITTING
from sluice.exec.range_join import _keys, _valid
from sluice.expr.evaluate import evaluate, evaluate_predicate
from sluice.expr.nodes import Expr
from sluice.kernels.keys import BuildKeys
from sluice.types import LType, common_numeric

#: Composite codes stay below this (group count x (2 x distinct values + 1)).
_COMPOSITE_LIMIT = 1 << 62


def order_type(a: LType, b: LType) -> LType:
    """The type both sides of the inequality are ordered in."""
    return a if a == b else common_numeric(a, b)


@dataclass(eq=False)
class AsofJoinOp(HashJoinOp):
    probe_on: Expr | None = None  # the left side's inequality value
    build_on: Expr | None = None  # the right side's
    op: str = ">="  # probe_on op build_on
    probe_filter: Expr | None = None  # probe rows failing it match nothing
    label = "AsofJoin"

    def describe(self):
        keys = ", ".join([f"{p} = {b}" for p, b in zip(self.probe_keys, self.build_keys)]
                         + [f"{self.probe_on} {self.op} {self.build_on}"])
        where = "" if self.probe_keys else " (no equality keys: the right side is held whole)"
        if self.probe_filter is not None:
            where += f" left rows matching only where {self.probe_filter}"
        return f"AsofJoin {self.mode} [{keys}]{where} (probe=first child, build=second)"

    def _no_keys(self, ctx, build: Chunk):
        return self._join(ctx, build, self.probe.stream(ctx), [], None, None)

    def _join(self, ctx, build: Chunk, probe, types, info, res=None):
        """The ASOF join of ``build`` (a partition, all in memory) with the ``probe`` chunks."""
        dev = ctx.device
        m = build.num_rows
        index = _AsofIndex(self, build, types)
        if res is not None:
            res.force(index.nbytes())
        flags = torch.zeros(m, dtype=torch.bool, device=dev) if self.mode in BUILD_EMITTING else None
        for chunk in probe:
            p, b = index.match(chunk)
            if flags is not None:
                flags[b] = True
            out = self._emit_probe(chunk, build, p, b, None, p, m, False, [])
            if out is not None and out.num_rows:
                yield out
        if flags is not None:
            out = self._emit_build(build, flags, dev)
            if out is not None and out.num_rows:
                yield out


class _AsofIndex:
    """The right rows of a partition sorted by (key group, value) as one int64 (step 1)."""

    def __init__(self, op: AsofJoinOp, build: Chunk, types) -> None:
        self.op = op
        self.type = order_type(op.probe_on.type, op.build_on.type)
        m = build.num_rows
        on = evaluate(op.build_on, build).expand(m)
        ok = _valid(on, m)
        values = _keys(on, self.type)
        self.keys = None
        codes = torch.zeros(m, dtype=torch.int64, device=values.device)
        if op.build_keys:
            self.keys = BuildKeys([evaluate(k, build) for k in op.build_keys], list(types))
            codes = self.keys.key.to(values.device)
            if self.keys.valid is not None:
                ok = ok & self.keys.valid.expand(m)
        rows = torch.nonzero(ok).squeeze(1)
        codes, values = codes[rows], values[rows]
        self.groups = torch.unique(codes)
        self.values = torch.unique(values)
        self.width = 2 * int(self.values.numel()) + 1
        if int(self.groups.numel()) * self.width >= _COMPOSITE_LIMIT:
            raise ResourcesExhausted("ASOF JOIN: too many key groups and values in one partition to index")
        comp = torch.searchsorted(self.groups, codes) * self.width + 2 * torch.searchsorted(self.values, values) + 1
        self.comp, order = torch.sort(comp, stable=True)
        self.rows = rows[order]

    def nbytes(self) -> int:
        return 8 * (2 * int(self.comp.numel()) + int(self.groups.numel()) + int(self.values.numel()))

    def match(self, chunk: Chunk) -> tuple[torch.Tensor, torch.Tensor]:
        """(probe row, build row) of each probe row of ``chunk`` that has a nearest row (step 2)."""
        op = self.op
        n = chunk.num_rows
        on = evaluate(op.probe_on, chunk).expand(n)
        ok = _valid(on, n)
        if op.probe_filter is not None:
            ok = ok & evaluate_predicate(op.probe_filter, chunk).to(ok.device)
        pv = _keys(on, self.type)
        dev = pv.device
        none = torch.zeros(0, dtype=torch.int64, device=dev)
        g_count, r_count, m = int(self.groups.numel()), int(self.values.numel()), int(self.comp.numel())
        if n == 0 or m == 0:
            return none, none
        if self.keys is not None:
            codes, kok = self.keys.probe([evaluate(k, chunk) for k in op.probe_keys], n)
            codes = codes.to(dev)
            ok = ok & kok.to(dev)
        else:
            codes = torch.zeros(n, dtype=torch.int64, device=dev)
        g = torch.searchsorted(self.groups, codes).clamp_(max=g_count - 1)
        ok = ok & (self.groups[g] == codes)
        i = torch.searchsorted(self.values, pv)
        equal = (i < r_count) & (self.values[i.clamp(max=r_count - 1)] == pv)
        q = g * self.width + 2 * i + equal.to(torch.int64)
        if op.op == ">=":  # the last right value <= the left one
            at = torch.searchsorted(self.comp, q, right=True) - 1
        elif op.op == ">":
            at = torch.searchsorted(self.comp, q) - 1
        elif op.op == "<=":  # the first right value >= the left one
            at = torch.searchsorted(self.comp, q)
        else:
            at = torch.searchsorted(self.comp, q, right=True)
        inside = (at >= 0) & (at < m)
        at = at.clamp(0, m - 1)
        hit = ok & inside & (torch.div(self.comp[at], self.width, rounding_mode="floor") == g)
        p = torch.nonzero(hit).squeeze(1)
        return p, self.rows[at[p]]
