"""Joins on an inequality (``a.x < b.y``) without enumerating the pairs it rules out.

A join with no equality keys paired every probe row with every build row and filtered: three
tables of a thousand rows joined on ``<`` conditions make hundreds of millions of pairs. When
the condition has a conjunct ``probe_expr OP build_expr`` (OP one of < <= > >=, both sides of
one ordered kind), the build side is sorted by its expression once; each probe value then
finds the run of build rows it satisfies by binary search, and only those pairs are made --
in batches of at most a chunk, so memory stays bounded whatever the result's size. The rest
of the condition filters those pairs. (DuckDB's piecewise merge join; its IEJoin also orders
by a second inequality.)

Comparisons follow SQL: a NULL on either side matches nothing; floats are ordered as DuckDB
orders them (NaN above +inf, -0.0 = 0.0) through :func:`float_order_key`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, Column
from sluice.expr.evaluate import evaluate
from sluice.kernels.keys import float_order_key
from sluice.expr.functions.common import to_type
from sluice.expr import nodes as N
from sluice.expr.nodes import Expr, Func
from sluice.types import LType, common_numeric

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass
class RangeCondition:
    """``probe OP build`` of a join's condition, and the condition's other conjuncts."""

    probe: Expr
    build: Expr
    op: str
    rest: Expr | None
    key_type: LType


def _comparable(a: LType, b: LType) -> LType | None:
    """The type both sides are ordered in, or None where the range path does not apply."""
    if (a.is_numeric or a.kind == "bool") and (b.is_numeric or b.kind == "bool"):
        t = common_numeric(a, b)
        if t.kind == "decimal" and not (a.kind == b.kind == "decimal" and a.scale == b.scale):
            return None  # scaling one side could leave 64 bits; the comparison itself is exact
        return t
    if a.kind == b.kind and a.kind in ("date", "timestamp", "timestamptz"):
        return a
    return None


def find_range_condition(residual: Expr | None, probe_cols: set[str], build_cols: set[str]) -> RangeCondition | None:
    """The first inequality of ``residual`` between a probe-side and a build-side expression."""
    if residual is None:
        return None
    parts = N.conjuncts(residual)
    for i, c in enumerate(parts):
        if not (isinstance(c, Func) and c.op in _FLIP and len(c.args) == 2):
            continue
        a, b = c.args
        ac, bc = a.columns(), b.columns()
        if ac and bc and ac <= probe_cols and bc <= build_cols:
            p, q, op = a, b, c.op
        elif ac and bc and bc <= probe_cols and ac <= build_cols:
            p, q, op = b, a, _FLIP[c.op]
        else:
            continue
        t = _comparable(p.type, q.type)
        if t is None:
            continue
        return RangeCondition(p, q, op, N.and_all(parts[:i] + parts[i + 1:]), t)
    return None


def _keys(col: Column, t: LType) -> torch.Tensor:
    """Values of ``col`` as int64 keys ordered as SQL orders them in type ``t``."""
    v = to_type(col, t) if t.is_numeric and col.type != t else col.data
    if v.is_floating_point():
        return float_order_key(v)
    return v.to(torch.int64)


def _valid(col: Column, n: int) -> torch.Tensor:
    return torch.ones(n, dtype=torch.bool, device=col.data.device) if col.valid is None else col.valid.expand(n)


class SortedBuild:
    """The build side's rows with a non-NULL key, in key order."""

    def __init__(self, cond: RangeCondition, build: Chunk) -> None:
        self.cond = cond
        col = evaluate(cond.build, build).expand(build.num_rows)
        keys = _keys(col, cond.key_type)
        rows = torch.nonzero(_valid(col, build.num_rows)).squeeze(1)
        keys = keys[rows]
        keys, order = torch.sort(keys, stable=True)
        self.keys = keys
        self.rows = rows[order]

    def pairs(self, chunk: Chunk, batch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """(probe row, build row) index pairs satisfying the inequality, about ``batch`` at a time."""
        n = chunk.num_rows
        m = int(self.keys.numel())
        if n == 0 or m == 0:
            return
        col = evaluate(self.cond.probe, chunk).expand(n)
        pk = _keys(col, self.cond.key_type)
        op = self.cond.op  # probe OP build
        if op in ("<", "<="):  # build keys above the probe's
            lo = torch.searchsorted(self.keys, pk, right=(op == "<"))
            hi = torch.full_like(lo, m)
        else:
            lo = torch.zeros_like(pk)
            hi = torch.searchsorted(self.keys, pk, right=(op == ">="))
        counts = torch.where(_valid(col, n), hi - lo, torch.zeros_like(lo))
        ends = torch.cumsum(counts, 0)
        starts = ends - counts
        total = int(ends[-1])
        done, row = 0, 0
        while done < total:
            # probe rows whose pairs end within the next ``batch`` (at least one row)
            stop = max(int(torch.searchsorted(ends, torch.tensor(done + batch, device=ends.device), right=True)), row + 1)
            stop = min(stop, n)
            c = counts[row:stop]
            size = int(ends[stop - 1]) - done
            if size:
                p = torch.repeat_interleave(torch.arange(row, stop, device=c.device), c, output_size=size)
                offset = torch.arange(size, device=c.device) - (starts[p] - done)
                yield p, self.rows[lo[p] + offset]
            done += size
            row = stop
