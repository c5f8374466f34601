"""Run lowered operators to Arrow: batch by batch as they are produced, or as one table held
against the memory budget. (Lowering -- the plan to operators -- is :mod:`sluice.physical`.)
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from sluice.kernels.checks import deferred_checks
from sluice.exec.context import ExecContext
from sluice.exec.exchange import plan_fingerprint, rank_summary, run_exchanges
from sluice.exec.exchange_rounds import wire_of
from sluice.exec.pipelined_receive import close_pipelined, drain_pipelined
from sluice.exec.operators import Operator
from sluice.arrow import result_array, result_field
from sluice.ranks import liveness


def result_schema(names: list[str], out_names: list[str], schema: dict) -> pa.Schema:
    return pa.schema([result_field(n, schema[i]) for n, i in zip(_dedupe(out_names), names)])


def run_batches(op: Operator, ctx: ExecContext, names: list[str], out_names: list[str],
                schema: dict) -> Iterator[pa.RecordBatch]:
    """Run the plan, yielding each output chunk as an Arrow batch (strings decoded) as soon as
    it is produced; value checks deferred on a GPU are read before the run ends."""
    arrow_schema = result_schema(names, out_names, schema)
    with liveness.armed(), deferred_checks() as checks:
        try:
            if ctx.dist is not None:  # the same exchanges and shares on every rank, or none runs
                ctx.dist.check_same_plan(f"{plan_fingerprint(op)}\nwire={wire_of(ctx)} on {ctx.device.type}")
            op.start(ctx)  # with reader combining, every scan of the plan starts reading now
            if ctx.dist is not None:
                run_exchanges(op, ctx)  # every stage that moves rows, children first
            for chunk in op.stream(ctx):
                arrays = [result_array(chunk.columns[n].expand(chunk.num_rows), schema[n]) for n in names]
                with liveness.waiting():  # the caller's time (a terminal, a file) is not a hang here
                    yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
            if ctx.dist is not None:  # per-rank counts to rank 0 (and every rank finished)
                drain_pipelined(ctx, keep=False)  # a pipelined exchange's rounds end on every rank
                ctx.rank_stats.extend(ctx.dist.gather_objects(rank_summary(op, ctx)) or ())
        except BaseException:
            if ctx.dist is not None:
                ctx.dist.abort()  # peers waiting on this rank fail now, not at the timeout
            checks.raise_pending()  # a failure caused by an overflowed value is the overflow
            raise
        finally:
            close_pipelined(ctx)
            ctx.recorder.finish()
            ctx.close()
        checks.raise_pending()


def run_to_arrow(op: Operator, ctx: ExecContext, names: list[str], out_names: list[str],
                 schema: dict) -> pa.Table:
    """The whole result as one Arrow table, held against the memory budget."""
    res = ctx.memory.reservation("the query result")
    batches = []
    arrow_schema = result_schema(names, out_names, schema)
    for b in run_batches(op, ctx, names, out_names, schema):
        res.grow(b.nbytes, "rows of the result; a large result can be written to a file with -o FILE")
        batches.append(b)
    return pa.Table.from_batches(batches, schema=arrow_schema)


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out


def explain(op: Operator, indent: int = 0) -> list[str]:
    lines = ["  " * indent + op.describe()]
    for c in op.children:
        lines += explain(c, indent + 1)
    return lines
