"""Which scans a join's runtime filters reach, and a top-k's (:mod:`sluice.exec.runtime_filter`
says what a runtime filter is and how a scan applies it).

Only where it cannot change an answer: the join must drop probe rows without a match
(inner, semi, and the build-preserving outer join) or emit only build rows (build semi and
anti, not a NOT IN's), and the probe key must be a column that
reaches the join unchanged from one scan, through filters, renaming projections, the probe
sides of other joins (whatever those do to a row, the row keeps its key, which this join would
reject) and group keys of aggregations (a group whose key the join rejects is made only of rows
with that key). Keys are integers, dates or decimals of one scale on both sides
(compared as int64 values). Across ranks: where the probe key reaches the join through an
exchange, the scan's rows go to other ranks' joins, so the filter comes from the build side's
exchange -- every rank's build input, merged (min/max, OR of Bloom bits) before the probe
stage runs.
"""

from __future__ import annotations

from sluice.exec.exchange import ExchangeOp
from sluice.exec.hash_join import HashJoinOp
from sluice.exec.join_mode import DROPS_UNMATCHED_PROBE, JoinMode
from sluice.exec.operators import Operator
from sluice.exec.sort import SortOp
from sluice.exec.runtime_filter import FilterSlot, RuntimeFilterSpec
from sluice.physical.lineage import scan_column
from sluice.physical.properties import SINGLE
from sluice.physical.scan import aim_runtime_filter
from sluice.expr.nodes import Col
from sluice.types import LType


def _comparable(a: LType, b: LType) -> bool:
    def kind(t):
        # Dates and timestamps as their integers (days; microseconds, whatever the file's
        # unit): a timestamp and a timestamptz differ in kind, so never compare.
        if t.is_integer or t.kind in ("date", "timestamp", "timestamptz"):
            return ("int", 0) if t.is_integer else (t.kind, 0)
        if t.kind == "decimal":
            return ("decimal", t.scale)
        return None
    ka, kb = kind(a), kind(b)
    return ka is not None and ka == kb


def _filterable(op: HashJoinOp) -> bool:
    """Whether a probe row without a matching build key may be dropped before the join: where
    such a row would not be emitted (inner, semi, build-preserving outer), or where only build
    rows are emitted and a probe row counts only by matching one (build semi / anti: TPC-H Q21's
    EXISTS and NOT EXISTS over lineitem) -- but not a NOT IN's build anti join, where a NULL
    probe key (which a filter drops) changes every answer."""
    if op.mode in DROPS_UNMATCHED_PROBE:
        return True
    return op.mode in (JoinMode.BUILD_SEMI, JoinMode.BUILD_ANTI) and not op.null_aware


def attach_runtime_filters(root: Operator, bloom: bool = True) -> None:
    """Give every filtering hash join a runtime filter per usable key, aimed at the scan its
    probe key comes from."""
    for op in root.walk():
        if not isinstance(op, HashJoinOp) or not op.probe_keys or not _filterable(op):
            continue
        for k, (pk, bk) in enumerate(zip(op.probe_keys, op.build_keys)):
            if not isinstance(pk, Col) or not _comparable(pk.type, bk.type):
                continue
            deep: list = []
            hit = scan_column(op.probe, pk.name, deep=deep)
            if hit is None:
                continue
            scan, column, crossed = hit
            rf = RuntimeFilterSpec(f"join on {pk} = {bk}", column, bloom=bloom, deep=bool(deep))
            if crossed:  # the probe scan feeds other ranks' joins too: this rank's build is not enough
                if not isinstance(op.build, ExchangeOp) or op.distribution == SINGLE:
                    continue  # (a join on rank 0 only: the other ranks' plans do not reach it)
                op.build.publishes.append(FilterSlot(rf, bk))  # every rank's build input, merged
            else:
                op.publishes.append(FilterSlot(rf, bk))
            aim_runtime_filter(scan, rf)


def attach_topk_filters(root: Operator) -> None:
    """Give every top-k (a Sort with a LIMIT) whose leading key is a column that comes unchanged
    from one scan a range filter on that scan, bounded by the k-th row once k rows are known.
    Dropping a row there cannot change the answer: every row it would have produced sorts after
    k rows already found. Not where NULLs sort first (a filter drops NULL keys, and those would
    come first), not below an aggregation (it reads all its input before the top-k sees a row),
    and not across an exchange (the other ranks' scans feed it too)."""
    for op in root.walk():
        if not isinstance(op, SortOp) or op.limit is None or not op.keys:
            continue
        k0 = op.keys[0]
        if k0.nulls_first or not isinstance(k0.expr, Col) or not _comparable(k0.expr.type, k0.expr.type):
            continue
        hit = scan_column(op.child, k0.expr.name, aggregates=False)
        if hit is None or hit[2]:
            continue
        scan, column, _ = hit
        keep = op.offset + op.limit
        spec = RuntimeFilterSpec(f"top {keep} by {k0.expr} {'ASC' if k0.ascending else 'DESC'}", column,
                                 bloom=False, topk=True)
        op.publishes.append(FilterSlot(spec))
        aim_runtime_filter(scan, spec)
