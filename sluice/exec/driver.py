"""Lower a logical plan to operators and run it to an Arrow table.

Lowering picks the physical side of each join (the smaller estimated side builds), splits
DISTINCT aggregates into two aggregation steps, and prunes row groups of each scan.
"""

from __future__ import annotations

import contextvars
from functools import singledispatch
from typing import Iterator

import pyarrow as pa

from sluice.errors import SluiceError, UnsupportedError, internal_error
from sluice.exec.checks import deferred_checks
from sluice.exec.context import ExecContext
from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.operators import (FilterOp, LimitOp, OneRowOp, Operator, ProjectOp, RepeatOp, ScanOp, SharedOp,
                                   UnionOp)
from sluice.exec.sort import SortOp
from sluice.exec.window import WindowOp
from sluice.io.parquet.convert import column_to_arrow
from sluice.types import to_arrow
from sluice.io.parquet.pruning import prune_row_groups
from sluice.plan.estimate import estimate
from sluice.plan.logical import (Aggregate, Filter, Join, Limit, OneRow, PlanNode, Project, RecursiveUnion, Repeat, Scan,
                                 SortKey, Window, Shared, Sort, Union, WorkTable)

#: Shared subplans already lowered in the current lowering (key -> operator).
_SHARED: contextvars.ContextVar[dict] = contextvars.ContextVar("sluice_shared")


def lower_plan(plan: PlanNode, cfg) -> Operator:
    """Lower a whole plan; Shared nodes with one key become one operator."""
    token = _SHARED.set({})
    try:
        op = lower(plan, cfg)
        if cfg.runtime_filters:
            from sluice.exec.runtime_filter import attach_runtime_filters
            attach_runtime_filters(op, bloom=cfg.scan_mode in ("pushdown", "staging", "auto"))
        return op
    except SluiceError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug in lowering: say so in one line
        raise internal_error("lowering to operators", e) from e
    finally:
        _SHARED.reset(token)


@singledispatch
def lower(plan: PlanNode, cfg) -> Operator:
    raise UnsupportedError(f"no operator for {type(plan).__name__}")


@lower.register
def _(plan: Scan, cfg):
    if plan.table.format == "csv":
        from sluice.exec.csv_scan import CsvScanOp
        return CsvScanOp(plan.table, dict(plan.columns), plan.filter, plan.outputs)
    groups = list(plan.table.row_groups)
    kept = prune_row_groups(groups, plan.filter, plan.columns) if cfg.row_group_pruning else groups
    return ScanOp(plan.table, dict(plan.columns), plan.filter, kept, len(groups) - len(kept), plan.outputs)


@lower.register
def _(plan: Shared, cfg):
    memo = _SHARED.get()
    op = memo.get(plan.key)
    if op is None:
        op = memo[plan.key] = _estimated(SharedOp(lower(plan.child, cfg)), plan.child)
    return op


@lower.register
def _(plan: RecursiveUnion, cfg):
    from sluice.exec.recursive import RecursiveUnionOp
    return RecursiveUnionOp(lower(plan.anchor, cfg), lower(plan.step, cfg), plan.key, plan.distinct,
                            tuple(plan.schema))


@lower.register
def _(plan: WorkTable, cfg):
    from sluice.exec.recursive import WorkTableOp
    return WorkTableOp(plan.key)


@lower.register
def _(plan: OneRow, cfg):
    return OneRowOp()


@lower.register
def _(plan: Filter, cfg):
    return FilterOp(lower(plan.child, cfg), plan.predicate)


@lower.register
def _(plan: Project, cfg):
    return ProjectOp(lower(plan.child, cfg), plan.exprs)


@lower.register
def _(plan: Limit, cfg):
    return LimitOp(lower(plan.child, cfg), plan.limit, plan.offset)


@lower.register
def _(plan: Window, cfg):
    child = lower(plan.child, cfg)
    keys = tuple(SortKey(e, True, True) for e in plan.partition) + plan.order
    if keys:  # rows of a partition together, in order: a Sort that spills past the budget
        child = _estimated(SortOp(child, keys, None, 0), plan.child)
    return WindowOp(child, plan.partition, plan.order, plan.calls)


@lower.register
def _(plan: Repeat, cfg):
    return RepeatOp(lower(plan.child, cfg), plan.count)


@lower.register
def _(plan: Sort, cfg):
    op = SortOp(lower(plan.child, cfg), plan.keys, plan.limit, plan.offset)
    return _estimated(op, plan.child, plan.limit + plan.offset if plan.limit is not None else None)


@lower.register
def _(plan: Union, cfg):
    return UnionOp(tuple(lower(c, cfg) for c in plan.inputs))


@lower.register
def _(plan: Aggregate, cfg):
    return _estimated(HashAggregateOp(lower(plan.child, cfg), plan.keys, plan.aggs), plan)


def _estimated(op: Operator, state: PlanNode, cap: int | None = None) -> Operator:
    """Note the estimated rows and row width of what ``op`` materialises (the memory plan)."""
    rows, _ = estimate(state)
    if cap is not None:
        rows = min(rows, cap)
    op.state_estimate = (rows, sum(_WIDTH.get(t.kind, 8) for t in state.schema.values()))
    return op


#: Bytes per value by type for memory estimates (strings: a code and a short string).
_WIDTH = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "date": 4, "float32": 4, "string": 28}


# Physical mode when the logical left side probes / when it builds.
_MODES = {
    "inner": ("inner", "inner"),
    "cross": ("cross", "cross"),
    "left": ("probe_outer", "build_outer"),
    "right": ("build_outer", "probe_outer"),
    "full": ("full", "full"),
    "semi": ("semi", "build_semi"),
    "anti": ("anti", "build_anti"),
    "mark": ("mark", "mark"),  # never swapped
}


@lower.register
def _(plan: Join, cfg):
    left_rows, _ = estimate(plan.left)
    right_rows, _ = estimate(plan.right)
    swap = left_rows < right_rows and bool(plan.left_keys) and not plan.null_aware and not plan.single_row
    if plan.kind == "cross" and not plan.single_row:
        swap = left_rows < right_rows
    if plan.kind == "mark":
        swap = False
    probe, build = (plan.right, plan.left) if swap else (plan.left, plan.right)
    pk, bk = (plan.right_keys, plan.left_keys) if swap else (plan.left_keys, plan.right_keys)
    mode = _MODES[plan.kind][1 if swap else 0]
    probe_op = lower(probe, cfg)
    below = int(sum(o.state_estimate[0] * o.state_estimate[1] for o in probe_op.walk() if o.state_estimate is not None))
    op = HashJoinOp(probe_op, lower(build, cfg), mode, pk, bk, plan.residual,
                    probe.schema, build.schema, plan.null_aware, plan.single_row, below, plan.outputs,
                    plan.mark)
    return _estimated(op, build)


def result_schema(names: list[str], out_names: list[str], schema: dict) -> pa.Schema:
    return pa.schema([pa.field(n, to_arrow(schema[i])) for n, i in zip(_dedupe(out_names), names)])


def run_batches(op: Operator, ctx: ExecContext, names: list[str], out_names: list[str],
                schema: dict) -> Iterator[pa.RecordBatch]:
    """Run the plan, yielding each output chunk as an Arrow batch (strings decoded) as soon as
    it is produced; value checks deferred on a GPU are read before the run ends."""
    ctx.scan_count = sum(1 for o in op.walk() if isinstance(o, ScanOp))
    op.start(ctx)  # with reader combining, every scan of the plan starts reading now
    arrow_schema = result_schema(names, out_names, schema)
    with deferred_checks() as checks:
        try:
            for chunk in op.stream(ctx):
                arrays = [column_to_arrow(chunk.columns[n].expand(chunk.num_rows)) for n in names]
                yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
        except BaseException:
            checks.raise_pending()  # a failure caused by an overflowed value is the overflow
            raise
        finally:
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
