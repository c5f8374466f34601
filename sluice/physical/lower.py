"""Lower a logical plan to operators.

Lowering picks the physical side of each join (:mod:`sluice.physical.joins`), puts a sort
below each window, prunes row groups of each scan, notes what each materialising operator
is estimated to hold (the memory plan), states how each operator's rows are spread over
the ranks (:mod:`sluice.physical.properties`) and aims runtime filters at scans. All of it
reads one :class:`LoweringState`; nothing is changed on an operator after lowering returns.

With several ranks (:mod:`sluice.physical.distribute` decides what moves): each scan reads
this rank's share of the row groups (``any``); an exchange goes where an operator needs rows
by hash (a grouped aggregate's final phase, a DISTINCT aggregate's argument, a partitioned
join, a window's partitions), a broadcast under a small build side, a gather to rank 0 under
what needs every row (a sort, a limit, a global aggregate's final phase, the result). An operator whose rows are on rank 0
only (``single``) stands in as :class:`~sluice.exec.exchange.OffRankOp` on the other ranks.
A recursive CTE runs on rank 0 alone, its scans reading every row group there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch

import torch

from sluice.config import Config
from sluice.devices import resolve_device
from sluice.errors import SluiceError, UnsupportedError, internal_error
from sluice.expr.nodes import Col
from sluice.exec.hash_aggregate import HashAggregateOp
from sluice.physical.key_ranges import key_ranges
from sluice.exec.asof_join import AsofJoinOp
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.operators import (FilterOp, LimitOp, OneRowOp, Operator, ProjectOp, RepeatOp, ScanOp, SharedOp, UnnestOp,
                                   UnionOp)
from sluice.exec.recursive import RecursiveUnionOp, WorkTableOp
from sluice.exec.recursive_key import KeyedRecursiveUnionOp
from sluice.exec.sort import SortOp
from sluice.exec.window import WindowOp
from sluice.exec.window_carry import WindowCarryOp, WindowSummaryOp, carries, local_calls
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.parquet.pruning import prune_row_groups
from sluice.physical.joins import asof_choice, choose_build_side
from sluice.physical.minmax_bounds import attach_minmax_bound
from sluice.physical.distribute import (broadcast, exchange, gather, mark_pipelined, ordered_gather, place_asof_join, place_join, placed, range_exchange, share,
                                       shared_fingerprint)
from sluice.physical.properties import ANY, SINGLE, Distribution, hashed
from sluice.physical.filter_placement import attach_runtime_filters, attach_topk_filters
from sluice.physical.scan import decide, scan_spec
from sluice.physical.statistics import statistics_aggregate
from sluice.plan.estimate import estimate
from sluice.plan.logical import (Aggregate, AsofJoin, Filter, Join, Limit, OneRow, PlanNode, Project, RecursiveUnion, Repeat, Scan, Unnest,
                                 Shared, Sort, SortKey, Union, Window, WorkTable)
from sluice.exec.csv_scan import CsvScanOp


@dataclass
class LoweringState:
    """Everything lowering may read: the settings, this process's rank among ``world`` ranks,
    and the operators of Shared subplans lowered so far (one operator per key). ``local``:
    lowering a subtree that runs on rank 0 alone (a recursive CTE)."""

    config: Config
    rank: int = 0
    world: int = 1
    shared: dict[int, Operator] = field(default_factory=dict)
    local: bool = False
    #: a rank of a job: one rank alone plans exchanges too under ``exchange_loopback`` (its rows
    #: then cross its own transport)
    in_job: bool = False
    #: the device the plan runs on (scans choose their decoder and bound by it)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    #: the Parquet footers the scans' read tasks are planned from
    cache: MetadataCache = field(default_factory=MetadataCache)

    @property
    def distributed(self) -> bool:
        return (self.world > 1 or (self.in_job and self.config.exchange_loopback)) and not self.local


def lower_plan(plan: PlanNode, cfg: Config, rank: int = 0, world: int = 1, in_job: bool = False,
               device: torch.device | None = None, cache: MetadataCache | None = None) -> Operator:
    """The operators that run ``plan`` on this rank (``in_job``: under torchrun or ``--ranks``)
    on ``device`` (default: the one the settings name), reading footers through ``cache``."""
    state = LoweringState(cfg, rank, world, in_job=in_job, device=device or resolve_device(cfg.device),
                          cache=cache or MetadataCache())
    try:
        op = lower(plan, state)
        if state.distributed:
            op = placed(gather(op, state), state)
        if cfg.on("runtime_filters"):
            attach_runtime_filters(op, bloom=cfg.scan_mode in ("pushdown", "staging", "auto"))
        if cfg.on("topk_filters"):
            attach_topk_filters(op)
        if state.distributed and cfg.exchange_receive == "pipelined":  # after the filters: they stay stages
            mark_pipelined(op)
        _finish_scans(op, state)
        return op
    except SluiceError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug in lowering: say so in one line
        raise internal_error("lowering to operators", e) from e


def lower(plan: PlanNode, state: LoweringState) -> Operator:
    op = _lower(plan, state)
    if op.distribution is None:
        op.distribution = SINGLE
    return placed(op, state)


def _dist(op: Operator, d: Distribution) -> Operator:
    op.distribution = d
    return op


@singledispatch
def _lower(plan: PlanNode, state: LoweringState) -> Operator:
    raise UnsupportedError(f"no operator for {type(plan).__name__}")


@_lower.register
def _(plan: Scan, state):
    if plan.table.format == "csv":
        return CsvScanOp(plan.table, dict(plan.columns), plan.filter, plan.outputs)
    groups = list(plan.table.row_groups)
    kept = prune_row_groups(groups, plan.filter, plan.columns) if state.config.on("row_group_pruning") else groups
    pruned = len(groups) - len(kept)
    if state.distributed:  # this rank's share of the row groups
        scan = _scan(plan, share(kept, state.rank, state.world), pruned, state)
        # What every rank must agree on before sharing (compared across ranks at the start).
        scan.shared_from = shared_fingerprint(plan.table.name, kept)
        return _dist(scan, ANY)
    if state.world > 1 and state.rank != 0:  # local (rank 0 reads everything)
        kept = []
    elif plan.table.rank_local and state.world > 1:
        raise UnsupportedError(f"a recursive CTE over table {plan.table.name!r} with rank_data=local "
                               "(it runs on rank 0 alone, which cannot read the other ranks' files)")
    return _scan(plan, kept, pruned, state)


def _scan(plan: Scan, groups: list, pruned: int, state: LoweringState) -> ScanOp:
    spec = scan_spec(plan.table, dict(plan.columns), plan.filter, groups, state.config, state.device, state.cache)
    return ScanOp(dict(plan.columns), plan.filter, spec, pruned, plan.outputs)


def _finish_scans(root: Operator, state: LoweringState) -> None:
    """Put the runtime filters and the bound that lowering aimed at each scan into its spec
    (its mode decided again: a filtered scan may adapt)."""
    for op in root.walk():
        if isinstance(op, ScanOp) and (op.spec.runtime_filters or op.spec.minmax_bounds):
            op.spec = decide(op.spec, state.device, state.cache)


@_lower.register
def _(plan: Shared, state):
    key = (plan.key, state.local)
    op = state.shared.get(key)
    if op is None:
        child = lower(plan.child, state)
        op = state.shared[key] = _dist(_estimated(SharedOp(child), plan.child), child.distribution)
    return op


@_lower.register
def _(plan: RecursiveUnion, state):
    # The work table is a rank's own: the recursion runs on rank 0 with every row there.
    inner = LoweringState(state.config, state.rank, state.world, state.shared, local=True, in_job=state.in_job)
    anchor, step = lower(plan.anchor, inner), lower(plan.step, inner)
    if plan.keys:
        return KeyedRecursiveUnionOp(anchor, step, plan.key, plan.distinct, tuple(plan.schema), plan.keys, plan.aggs,
                                     plan.recurring)
    return RecursiveUnionOp(anchor, step, plan.key, plan.distinct, tuple(plan.schema), plan.recurring)


@_lower.register
def _(plan: WorkTable, state):
    return WorkTableOp(plan.key, plan.recurring)


@_lower.register
def _(plan: OneRow, state):
    return OneRowOp()


@_lower.register
def _(plan: Filter, state):
    child = lower(plan.child, state)
    return _dist(FilterOp(child, plan.predicate), child.distribution)


@_lower.register
def _(plan: Project, state):
    child = lower(plan.child, state)
    # hash keys name the child's columns: after a projection only "spread somehow" is known
    return _dist(ProjectOp(child, plan.exprs), child.distribution if child.distribution.kind != "hash" else ANY)


@_lower.register
def _(plan: Limit, state):
    child = lower(plan.child, state)
    if plan.limit is not None:  # DISTINCT ... LIMIT n without ORDER BY: any n groups answer
        below = child
        while isinstance(below, ProjectOp):  # (a projection keeps every row)
            below = below.child
        if isinstance(below, HashAggregateOp):
            below.enough_groups = plan.limit + plan.offset
    if child.distribution == SINGLE:
        return LimitOp(child, plan.limit, plan.offset)
    if plan.limit is not None:  # each rank keeps what the limit could take before the gather
        child = _dist(LimitOp(child, plan.limit + plan.offset, 0), child.distribution)
    return LimitOp(gather(child, state), plan.limit, plan.offset)


@_lower.register
def _(plan: Window, state):
    child = lower(plan.child, state)
    if state.distributed and child.distribution != SINGLE:
        if plan.partition:  # a partition's rows on one rank
            types = tuple(e.type for e in plan.partition)
            child = exchange(child, tuple(plan.partition), types, state)
        elif carries(plan.order, plan.calls) and _by_ranges(plan.child, state):
            return _ranged_window(plan, child, state)
        else:
            child = gather(child, state)
    keys = tuple(SortKey(e, True, True) for e in plan.partition) + plan.order
    if keys:  # rows of a partition together, in order: a Sort that spills past the budget
        child = placed(_dist(_estimated(SortOp(child, keys, None, 0), plan.child), child.distribution), state)
    return _dist(WindowOp(child, plan.partition, plan.order, plan.calls),
                 ANY if child.distribution.kind == "hash" else child.distribution)


@_lower.register
def _(plan: Repeat, state):
    child = lower(plan.child, state)
    return _dist(RepeatOp(child, plan.count), child.distribution)


@_lower.register
def _(plan: Unnest, state):
    child = lower(plan.child, state)
    return _dist(UnnestOp(child, plan.sources, plan.outs, plan.ordinality, plan.keep), child.distribution)  # copies stay where their row was


@_lower.register
def _(plan: Sort, state):
    child = lower(plan.child, state)
    cap = plan.limit + plan.offset if plan.limit is not None else None
    if child.distribution != SINGLE and cap is None and _by_ranges(plan.child, state):
        return _range_sort(plan, child, state)
    if child.distribution != SINGLE:
        if cap is not None:  # each rank's top rows first: the gather carries k rows a rank
            child = _dist(_estimated(SortOp(child, plan.keys, cap, 0), plan.child, cap), child.distribution)
        child = gather(child, state)
    op = SortOp(child, plan.keys, plan.limit, plan.offset)
    return _estimated(op, plan.child, cap)


def _by_ranges(rows: PlanNode, state: LoweringState) -> bool:
    """Whether a sort without LIMIT (or a window without PARTITION BY) of ``rows`` over several
    ranks runs by ranges (``range_sort_rows``)."""
    limit = state.config.range_sort_rows
    return state.distributed and limit >= 0 and estimate(rows)[0] >= limit


def _ranged_window(plan: Window, child: Operator, state: LoweringState) -> Operator:
    """A window with ORDER BY and no PARTITION BY without a rank-0 funnel: the rows exchanged
    by ranges of the ORDER BY keys and sorted, each rank's window computed over its range, then
    the earlier ranks' totals (one row a rank, broadcast) added (:mod:`sluice.exec.window_carry`)."""
    ranked = _dist(_estimated(SortOp(range_exchange(child, plan.order), plan.order, None, 0), plan.child), ANY)
    local = _dist(WindowOp(ranked, (), plan.order, local_calls(plan.calls)), ANY)
    shared = _dist(_estimated(SharedOp(local), plan), ANY)
    totals = broadcast(_dist(WindowSummaryOp(shared, plan.calls), ANY))
    return _dist(WindowCarryOp(shared, totals, plan.calls), ANY)


def _range_sort(plan: Sort, child: Operator, state: LoweringState) -> Operator:
    """ORDER BY without a rank-0 funnel: the rows exchanged by ranges of the sort keys, each
    rank's range sorted, the sorted ranges gathered to rank 0 in rank order
    (:mod:`sluice.exec.range_partition`)."""
    ranked = _dist(_estimated(SortOp(range_exchange(child, plan.keys), plan.keys, None, 0), plan.child), ANY)
    out = ordered_gather(ranked, state)
    if plan.offset:
        out = placed(_dist(LimitOp(out, None, plan.offset), SINGLE), state)
    return out


@_lower.register
def _(plan: Union, state):
    inputs = tuple(lower(c, state) for c in plan.inputs)
    return _dist(UnionOp(inputs), SINGLE if all(i.distribution == SINGLE for i in inputs) else ANY)


@_lower.register
def _(plan: Aggregate, state):
    if not state.distributed and state.world == 1 and state.config.on("stats_aggregates"):
        answered = statistics_aggregate(plan)
        if answered is not None:
            return answered
    child = lower(plan.child, state)
    ranges = key_ranges(plan) if plan.keys else None  # the keys' ranges from statistics, where known
    if child.distribution == SINGLE:
        return _estimated(_bounded(HashAggregateOp(child, plan.keys, plan.aggs, key_ranges=ranges)), plan)
    names = tuple(Col(n, e.type) for n, e in plan.keys)
    placed_keys = grouped_in_place(plan, child)
    if placed_keys is not None:  # every group's rows already on one rank: one phase, nothing moves
        return _dist(_estimated(_bounded(HashAggregateOp(child, plan.keys, plan.aggs)), plan), hashed(placed_keys))
    if any(a.distinct for _, a in plan.aggs):  # each group's rows on one rank, one phase
        if plan.keys:
            keys = tuple(e for _, e in plan.keys)
            moved = exchange(child, keys, tuple(e.type for e in keys), state)
            return _dist(_estimated(HashAggregateOp(moved, plan.keys, plan.aggs), plan), hashed(names))
        return _distinct_global(plan, child, state)
    partial = _dist(_estimated(_bounded(HashAggregateOp(child, plan.keys, plan.aggs, "partial", key_ranges=ranges)),
                               plan), ANY)
    final_keys = tuple((n, Col(n, e.type)) for n, e in plan.keys)
    if plan.keys:
        moved = exchange(partial, names, tuple(e.type for e in names), state)
        return _dist(_estimated(HashAggregateOp(moved, final_keys, plan.aggs, "final"), plan), hashed(names))
    return _estimated(HashAggregateOp(gather(partial, state), final_keys, plan.aggs, "final"), plan)


def grouped_in_place(plan: Aggregate, child: Operator) -> tuple | None:
    """The output columns the input is hashed on, when the input is hashed on some of the
    grouping keys (a join on them just hashed it so): rows of one group then share those keys'
    values, so they are on one rank already. None otherwise."""
    if child.distribution.kind != "hash" or not plan.keys:
        return None
    by_expr = {str(e): Col(n, e.type) for n, e in plan.keys}
    if not all(str(k) in by_expr for k in child.distribution.keys):
        return None
    return tuple(by_expr[str(k)] for k in child.distribution.keys)


def _distinct_global(plan: Aggregate, child: Operator, state: LoweringState) -> Operator:
    """DISTINCT aggregates without keys on several ranks, no row funnelled to rank 0: the rows
    hash-partitioned by the DISTINCT argument, each rank's partial states (its distinct values
    are no other rank's: the states merge exactly) gathered and merged. Several arguments: one
    exchange and partial per argument over the shared input (the other aggregates' states at
    their identity there; those without DISTINCT computed with the first), the partials' pages
    merged by one final."""
    dargs = sorted({a.arg for _, a in plan.aggs if a.distinct}, key=str)
    if len(dargs) > 1:
        child = _dist(_estimated(SharedOp(child), plan.child), child.distribution)
    parts = []
    for i, arg in enumerate(dargs):
        computed = frozenset(n for n, a in plan.aggs if (a.distinct and a.arg == arg) or (i == 0 and not a.distinct))
        branch = child
        used = set().union(*(a.arg.columns() for n, a in plan.aggs if n in computed and a.arg is not None))
        if len(dargs) > 1 and used < set(plan.child.schema):  # the columns this argument's aggregates read
            cols = tuple((c, Col(c, t)) for c, t in plan.child.schema.items() if c in used)
            branch = _dist(ProjectOp(child, cols), child.distribution)
        moved = exchange(branch, (arg,), (arg.type,), state)
        partial = HashAggregateOp(moved, (), plan.aggs, "partial", computed=computed if len(dargs) > 1 else None)
        parts.append(gather(_dist(_estimated(partial, plan), ANY), state))
    merged = parts[0] if len(parts) == 1 else placed(_dist(UnionOp(tuple(parts)), SINGLE), state)
    return _estimated(HashAggregateOp(merged, (), plan.aggs, "final"), plan)


def _bounded(op: HashAggregateOp) -> HashAggregateOp:
    """``op`` with a MIN / MAX bound for the scan under it, where one is exact (decided here,
    used only where it is turned on: see physical.scan.decide)."""
    attach_minmax_bound(op)
    return op


@_lower.register
def _(plan: Join, state):
    c = choose_build_side(plan)
    probe_op = lower(c.probe, state)
    build_op = lower(c.build, state)
    dist = SINGLE
    if state.distributed:
        probe_op, build_op, dist = place_join(plan, c, probe_op, build_op, state)
    # what the probe side's materialising operators hold while the join table is held
    below = int(sum(o.state_estimate[0] * o.state_estimate[1] for o in probe_op.walk() if o.state_estimate is not None))
    op = HashJoinOp(probe_op, build_op, c.mode, c.probe_keys, c.build_keys, plan.residual,
                    c.probe.schema, c.build.schema, plan.null_aware, plan.single_row, below, plan.outputs,
                    plan.mark)
    return _dist(_estimated(op, c.build), dist)


@_lower.register
def _(plan: AsofJoin, state):
    c = asof_choice(plan)
    probe_op = lower(c.probe, state)
    build_op = lower(c.build, state)
    dist = SINGLE
    if state.distributed:
        probe_op, build_op, dist = place_asof_join(c, probe_op, build_op, state)
    below = int(sum(o.state_estimate[0] * o.state_estimate[1] for o in probe_op.walk() if o.state_estimate is not None))
    op = AsofJoinOp(probe_op, build_op, c.mode, c.probe_keys, c.build_keys, plan.residual, c.probe.schema, c.build.schema,
                    below_state=below, outputs=plan.outputs, probe_on=plan.left_on, build_on=plan.right_on,
                    op=plan.op, probe_filter=plan.left_filter)
    return _dist(_estimated(op, c.build), dist)


def _estimated(op: Operator, state: PlanNode, cap: int | None = None) -> Operator:
    """Note the estimated rows and row width of what ``op`` materialises (the memory plan)."""
    rows, _ = estimate(state)
    if cap is not None:
        rows = min(rows, cap)
    op.state_estimate = (rows, sum(t.estimated_bytes for t in state.schema.values()))
    return op

