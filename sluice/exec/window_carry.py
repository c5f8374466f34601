"""Global windows over several ranks without a rank-0 funnel (issue 52 item 3).

A window with ORDER BY and no PARTITION BY is one partition: it used to gather every row to
rank 0. When each of its functions depends on the rows before a row only through a few
numbers, the rows are instead exchanged by ranges of the ORDER BY keys (the sample sort of
:mod:`sluice.exec.range_partition`: rows with equal keys -- a row's peers -- always meet on one
rank, so no peer group straddles two ranks), each rank computes the window over its own range
(:class:`~sluice.exec.window.WindowOp`), and :class:`WindowCarryOp` adds what the ranks before it
carry: their rows, their peer groups, their running totals. Those come from one row per rank
(:class:`WindowSummaryOp`: the last row of its window output holds its totals), broadcast to
every rank by an ordinary exchange stage, so the collective pairs up on every rank whatever its
data.

What carries (:func:`carries`): ROW_NUMBER, RANK, DENSE_RANK, PERCENT_RANK and CUME_DIST (over
the global row count), and COUNT / COUNT(*) / SUM / AVG / MIN / MAX over the default frame
(RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW). Each rank computes local stand-ins
(:func:`local_calls`: PERCENT_RANK as RANK, CUME_DIST as a running COUNT(*), AVG as a running SUM
and COUNT, SUM with a running COUNT for its NULLs) that the carry turns into the answer. Anything
else -- LAG / LEAD across a boundary, ROWS frames, NTILE, FIRST_VALUE ... -- keeps the gather.

An integer SUM raises on every rank when the absolute values of all ranks' rows together could
leave int64 -- what one rank computing the whole window raises (``kernels/window.frame_sum``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, Column, concat_chunks
from sluice.errors import ExecutionError
from sluice.exec.operators import Operator
from sluice.exec.sort import sort_permutation
from sluice.expr.evaluate import evaluate
from sluice.expr.nodes import Col
from sluice.plan.logical import SortKey, WindowCall
from sluice.types import FLOAT64, INT64

#: The default frame with ORDER BY: a running aggregate.
RUNNING = ("range", ("unbounded", 0), ("current", 0))

_RANKING = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist")
_MINMAX_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "decimal", "date",
                 "timestamp", "timestamptz")
_SUM_KINDS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "float32", "float64", "decimal")

#: Columns of the summary row and the hidden local columns.
RANK, ROWS = "#carry_rank", "#carry_rows"


def _sum_of(name: str) -> str:
    return f"{name}#carry_sum"


def _count_of(name: str) -> str:
    return f"{name}#carry_count"


def _abs_of(name: str) -> str:
    return f"{name}#carry_abs"


def _carried(call: WindowCall) -> bool:
    if call.ignore_nulls or call.exclude:
        return False
    if call.func in _RANKING:
        return True
    if call.frame != RUNNING or call.params:
        return False
    if call.func in ("count", "count_star"):
        return True
    kind = call.args[0].type.kind
    if call.func in ("sum", "avg"):
        return kind in _SUM_KINDS and not (kind == "decimal" and call.args[0].type.torch_dtype != torch.int64)
    if call.func in ("min", "max"):
        return kind in _MINMAX_KINDS and call.args[0].type.torch_dtype in (torch.int8, torch.int16, torch.int32,
                                                                          torch.int64, torch.uint8)
    return False


def carries(order: tuple[SortKey, ...], calls: tuple[tuple[str, WindowCall], ...]) -> bool:
    """Whether a window without PARTITION BY can run by ranges: it has ORDER BY and every
    function's value at a row follows from its rank's own rows and the earlier ranks' totals."""
    return bool(order) and all(_carried(c) for _, c in calls)


def _int_sum(call: WindowCall) -> bool:
    return call.func in ("sum", "avg") and not call.args[0].type.is_float


def local_calls(calls: tuple[tuple[str, WindowCall], ...]) -> tuple[tuple[str, WindowCall], ...]:
    """What each rank computes over its own range: the calls, or the stand-ins the carry needs."""
    out = []
    for name, c in calls:
        if c.func == "percent_rank":
            out.append((name, WindowCall("rank", ())))
        elif c.func == "cume_dist":
            out.append((name, WindowCall("count_star", (), (), RUNNING)))
        elif c.func == "avg":
            out += [(_sum_of(name), WindowCall("sum", c.args, (), RUNNING)),
                    (_count_of(name), WindowCall("count", c.args, (), RUNNING))]
        elif c.func == "sum":
            out += [(name, c), (_count_of(name), WindowCall("count", c.args, (), RUNNING))]
        else:
            out.append((name, c))
    return tuple(out)


@dataclass(eq=False)
class WindowSummaryOp(Operator):
    """This rank's totals, one row (none for a rank without rows): its rank, its row count, the
    last row of every local window column (over the default frame: the rank's total) and, per
    integer SUM / AVG, the absolute sum of its argument (the overflow check)."""

    child: Operator
    calls: tuple[tuple[str, WindowCall], ...]
    label = "WindowSummary"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        return "Window totals of this rank (one row)"

    def execute(self, ctx) -> Iterator[Chunk]:
        rows = 0
        last: Chunk | None = None
        absolute = {n: 0.0 for n, c in self.calls if _int_sum(c)}
        for chunk in self.child.stream(ctx):
            n = chunk.num_rows
            if not n:
                continue
            rows += n
            last = chunk.slice(n - 1, n)
            for name in absolute:
                x = evaluate(dict(self.calls)[name].args[0], chunk).expand(n)
                v = x.data.to(torch.float64).abs()
                if x.valid is not None:
                    v = torch.where(x.valid, v, torch.zeros_like(v))
                absolute[name] += float(v.sum())
        if last is None:
            return
        dev = last.device
        cols = {RANK: Column(torch.tensor([ctx.dist.rank], dtype=torch.int64, device=dev), INT64),
                ROWS: Column(torch.tensor([rows], dtype=torch.int64, device=dev), INT64)}
        for name, _ in local_calls(self.calls):
            cols[name] = last.columns[name]
        for name, a in absolute.items():
            cols[_abs_of(name)] = Column(torch.tensor([a], dtype=torch.float64, device=dev), FLOAT64)
        yield Chunk(cols, 1, 0, dev)


@dataclass(eq=False)
class WindowCarryOp(Operator):
    """Each rank's window columns with the earlier ranks' totals added (``summaries``: every
    rank's :class:`WindowSummaryOp` row, on every rank); the local stand-ins dropped."""

    child: Operator
    summaries: Operator
    calls: tuple[tuple[str, WindowCall], ...]
    label = "WindowCarry"

    def __post_init__(self):
        self.children = (self.child, self.summaries)

    def describe(self):
        return "Window carry: the earlier ranks' totals added [" + ", ".join(n for n, _ in self.calls) + "]"

    def execute(self, ctx) -> Iterator[Chunk]:
        carry = _Carry(list(self.summaries.stream(ctx)), ctx.dist.rank, self.calls)
        local = {n for n, _ in local_calls(self.calls)} - {n for n, _ in self.calls}
        for chunk in self.child.stream(ctx):
            if not chunk.num_rows:
                continue
            cols = {k: v for k, v in chunk.columns.items() if k not in local}
            for name, call in self.calls:
                cols[name] = carry.apply(name, call, chunk)
            yield Chunk(cols, chunk.num_rows, chunk.seq, chunk.device)


class _Carry:
    """The earlier ranks' totals, from every rank's summary row."""

    def __init__(self, rows: list[Chunk], me: int, calls) -> None:
        got = concat_chunks([r for r in rows if r.num_rows])
        self.empty = got is None
        if self.empty:
            return
        got = got.take(sort_permutation(got, (SortKey(Col(RANK, INT64), True, True),)))
        self.got = got
        self.before = got.columns[RANK].data < me
        counts = got.columns[ROWS].data
        self.rows_before = int(counts[self.before].sum())
        self.total = int(counts.sum())
        for name, call in calls:
            if _int_sum(call) and float(got.columns[_abs_of(name)].data.sum()) >= 2.0 ** 63:
                raise ExecutionError("overflow in window SUM of int64 values (out of range)")

    def _values(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The earlier ranks' totals of local column ``name`` that are not NULL, and their count."""
        c = self.got.columns[name]
        keep = self.before if c.valid is None else self.before & c.valid
        return c.data[keep], keep

    def _add(self, name: str) -> int:
        v, _ = self._values(name)
        return int(v.sum())

    def apply(self, name: str, call: WindowCall, chunk: Chunk) -> Column:
        f = call.func
        n = chunk.num_rows
        if f == "avg":
            return self._average(name, call, chunk)
        col = chunk.columns[name].expand(n)
        if self.empty:  # (no rank had rows: nothing reaches here)
            return col
        if f in ("row_number", "rank", "count_star"):
            return Column(col.data + self.rows_before, col.type, col.valid)
        if f in ("dense_rank", "count"):
            return Column(col.data + self._add(name), col.type, col.valid)
        if f == "percent_rank":
            rk = (col.data + self.rows_before - 1).to(torch.float64)
            out = rk / (self.total - 1) if self.total > 1 else torch.zeros_like(rk)
            return Column(out, FLOAT64)
        if f == "cume_dist":
            return Column((col.data + self.rows_before).to(torch.float64) / self.total, FLOAT64)
        if f == "sum":
            s, c = self._sum(name, name, chunk)
            return Column(s.to(col.data.dtype), col.type, None if bool((c > 0).all()) else c > 0)
        v, _ = self._values(name)  # min / max
        if not v.numel():
            return col
        best = v.max() if f == "max" else v.min()
        pick = torch.maximum if f == "max" else torch.minimum
        data = pick(col.data, best.to(col.data.dtype))
        if col.valid is not None:
            data = torch.where(col.valid, data, best.to(col.data.dtype).expand(n))
        return Column(data, col.type, None, col.dictionary)

    def _sum(self, name: str, sums: str, chunk: Chunk) -> tuple[torch.Tensor, torch.Tensor]:
        """(running sum, running non-NULL count) of a SUM / AVG's argument with the earlier
        ranks' added; the sum is 0 where the count is."""
        n = chunk.num_rows
        s = chunk.columns[sums].expand(n)
        c = chunk.columns[_count_of(name)].expand(n).data
        data = s.data if s.valid is None else torch.where(s.valid, s.data, torch.zeros_like(s.data))
        if self.empty:
            return data, c
        v, _ = self._values(sums)
        return data + v.sum().to(data.dtype), c + self._add(_count_of(name))

    def _average(self, name: str, call: WindowCall, chunk: Chunk) -> Column:
        """AVG as one rank computes it (``window_functions._sum_avg``): the running sum over
        the running count, a decimal's unscaled."""
        s, c = self._sum(name, _sum_of(name), chunk)
        avg = s.to(torch.float64) / c.clamp(min=1).to(torch.float64)
        x = call.args[0].type
        if x.kind == "decimal":
            avg = avg / (10 ** x.scale)
        has = c > 0
        return Column(avg, call.type, None if bool(has.all()) else has)
