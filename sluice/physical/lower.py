"""Lower a logical plan to operators.

Lowering picks the physical side of each join (:mod:`sluice.physical.joins`), puts a sort
below each window, prunes row groups of each scan, notes what each materialising operator
is estimated to hold (the memory plan), states how each operator's rows are spread over
the ranks (:mod:`sluice.physical.properties`) and aims runtime filters at scans. All of it
reads one :class:`LoweringState`; nothing is changed on an operator after lowering returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch

from sluice.config import Config
from sluice.errors import SluiceError, UnsupportedError, internal_error
from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.operators import (FilterOp, LimitOp, OneRowOp, Operator, ProjectOp, RepeatOp, ScanOp, SharedOp,
                                   UnionOp)
from sluice.exec.recursive import RecursiveUnionOp, WorkTableOp
from sluice.exec.sort import SortOp
from sluice.exec.window import WindowOp
from sluice.io.parquet.pruning import prune_row_groups
from sluice.physical.joins import choose_build_side
from sluice.physical.properties import SINGLE, Distribution
from sluice.physical.runtime_filters import attach_runtime_filters
from sluice.plan.estimate import estimate
from sluice.plan.logical import (Aggregate, Filter, Join, Limit, OneRow, PlanNode, Project, RecursiveUnion, Repeat, Scan,
                                 Shared, Sort, SortKey, Union, Window, WorkTable)


@dataclass
class LoweringState:
    """Everything lowering may read: the settings, this process's rank among ``world`` ranks,
    and the operators of Shared subplans lowered so far (one operator per key)."""

    config: Config
    rank: int = 0
    world: int = 1
    shared: dict[int, Operator] = field(default_factory=dict)

    def distribution(self) -> Distribution:
        """How the rows of an operator are spread (one rank: all of them, here)."""
        if self.world == 1:
            return SINGLE
        raise UnsupportedError("lowering for more than one rank")


def lower_plan(plan: PlanNode, cfg: Config, rank: int = 0, world: int = 1) -> Operator:
    """The operators that run ``plan`` on this rank."""
    state = LoweringState(cfg, rank, world)
    try:
        op = lower(plan, state)
        if cfg.runtime_filters:
            attach_runtime_filters(op, bloom=cfg.scan_mode in ("pushdown", "staging", "auto"))
        return op
    except SluiceError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug in lowering: say so in one line
        raise internal_error("lowering to operators", e) from e


def lower(plan: PlanNode, state: LoweringState) -> Operator:
    op = _lower(plan, state)
    op.distribution = state.distribution()
    return op


@singledispatch
def _lower(plan: PlanNode, state: LoweringState) -> Operator:
    raise UnsupportedError(f"no operator for {type(plan).__name__}")


@_lower.register
def _(plan: Scan, state):
    if plan.table.format == "csv":
        from sluice.exec.csv_scan import CsvScanOp
        return CsvScanOp(plan.table, dict(plan.columns), plan.filter, plan.outputs)
    groups = list(plan.table.row_groups)
    kept = prune_row_groups(groups, plan.filter, plan.columns) if state.config.row_group_pruning else groups
    return ScanOp(plan.table, dict(plan.columns), plan.filter, kept, len(groups) - len(kept), plan.outputs)


@_lower.register
def _(plan: Shared, state):
    op = state.shared.get(plan.key)
    if op is None:
        op = state.shared[plan.key] = _estimated(SharedOp(lower(plan.child, state)), plan.child)
    return op


@_lower.register
def _(plan: RecursiveUnion, state):
    return RecursiveUnionOp(lower(plan.anchor, state), lower(plan.step, state), plan.key, plan.distinct,
                            tuple(plan.schema))


@_lower.register
def _(plan: WorkTable, state):
    return WorkTableOp(plan.key)


@_lower.register
def _(plan: OneRow, state):
    return OneRowOp()


@_lower.register
def _(plan: Filter, state):
    return FilterOp(lower(plan.child, state), plan.predicate)


@_lower.register
def _(plan: Project, state):
    return ProjectOp(lower(plan.child, state), plan.exprs)


@_lower.register
def _(plan: Limit, state):
    return LimitOp(lower(plan.child, state), plan.limit, plan.offset)


@_lower.register
def _(plan: Window, state):
    child = lower(plan.child, state)
    keys = tuple(SortKey(e, True, True) for e in plan.partition) + plan.order
    if keys:  # rows of a partition together, in order: a Sort that spills past the budget
        child = _estimated(SortOp(child, keys, None, 0), plan.child)
        child.distribution = state.distribution()
    return WindowOp(child, plan.partition, plan.order, plan.calls)


@_lower.register
def _(plan: Repeat, state):
    return RepeatOp(lower(plan.child, state), plan.count)


@_lower.register
def _(plan: Sort, state):
    op = SortOp(lower(plan.child, state), plan.keys, plan.limit, plan.offset)
    return _estimated(op, plan.child, plan.limit + plan.offset if plan.limit is not None else None)


@_lower.register
def _(plan: Union, state):
    return UnionOp(tuple(lower(c, state) for c in plan.inputs))


@_lower.register
def _(plan: Aggregate, state):
    return _estimated(HashAggregateOp(lower(plan.child, state), plan.keys, plan.aggs), plan)


@_lower.register
def _(plan: Join, state):
    c = choose_build_side(plan)
    probe_op = lower(c.probe, state)
    # what the probe side's materialising operators hold while the join table is held
    below = int(sum(o.state_estimate[0] * o.state_estimate[1] for o in probe_op.walk() if o.state_estimate is not None))
    op = HashJoinOp(probe_op, lower(c.build, state), c.mode, c.probe_keys, c.build_keys, plan.residual,
                    c.probe.schema, c.build.schema, plan.null_aware, plan.single_row, below, plan.outputs,
                    plan.mark)
    return _estimated(op, c.build)


def _estimated(op: Operator, state: PlanNode, cap: int | None = None) -> Operator:
    """Note the estimated rows and row width of what ``op`` materialises (the memory plan)."""
    rows, _ = estimate(state)
    if cap is not None:
        rows = min(rows, cap)
    op.state_estimate = (rows, sum(_WIDTH.get(t.kind, 8) for t in state.schema.values()))
    return op


#: Bytes per value by type for memory estimates (strings: a code and a short string).
_WIDTH = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "date": 4, "float32": 4, "string": 28}
