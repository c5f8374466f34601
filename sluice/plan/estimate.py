"""Cardinality estimates for join ordering: Parquet row counts, min/max statistics and
selectivity guesses. Joins assume foreign-key/primary-key: the result has the size of the
side with the larger base table, scaled by the other side's filter selectivity."""

from __future__ import annotations

from sluice.expr.functions.registry import DEFAULT_SEL
from sluice.expr.nodes import Col, Expr, Func
from sluice.plan.logical import Aggregate, AsofJoin, Filter, Join, JoinKind, Limit, OneRow, PlanNode, Project, Repeat, Scan, Sort, Union, Unnest, Window
import pyarrow as pa
import pyarrow.parquet as pq
from sluice.expr.functions import find


def estimate(plan: PlanNode) -> tuple[float, float]:
    """(estimated rows, base rows) where base is the unfiltered size of the plan's fact side."""
    if isinstance(plan, Scan):
        base = float(plan.table.num_rows)
        return max(1.0, base * selectivity(plan.filter, plan)), base
    if isinstance(plan, OneRow):
        return 1.0, 1.0
    if isinstance(plan, Filter):
        rows, base = estimate(plan.child)
        return max(1.0, rows * selectivity(plan.predicate, _scan_below(plan.child))), base
    if isinstance(plan, Unnest):  # a few elements a list (no statistics of list lengths)
        rows, base = estimate(plan.child)
        return rows * 4, base
    if isinstance(plan, (Project, Sort, Repeat, Window)):
        rows, base = estimate(plan.child)
        if isinstance(plan, Sort) and plan.limit is not None:
            rows = min(rows, plan.limit)
        return rows, base
    if isinstance(plan, Limit):
        rows, base = estimate(plan.child)
        return min(rows, plan.limit or rows), base
    if isinstance(plan, Aggregate):
        rows, base = estimate(plan.child)
        if not plan.keys:
            return 1.0, 1.0
        return max(1.0, rows * 0.2), max(1.0, rows * 0.2)
    if isinstance(plan, Union):
        parts = [estimate(c) for c in plan.inputs]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(plan, AsofJoin):  # at most one right row per left row
        lr, lb = estimate(plan.left)
        if plan.kind in (JoinKind.RIGHT, JoinKind.FULL):
            rr, rb = estimate(plan.right)
            return lr + rr, lb + rb
        return (max(1.0, lr * 0.5) if plan.kind in (JoinKind.SEMI, JoinKind.ANTI) else lr), lb
    if isinstance(plan, Join):
        lr, lb = estimate(plan.left)
        rr, rb = estimate(plan.right)
        if plan.kind == JoinKind.SEMI and plan.left_keys:
            # The left rows whose key the right side holds: as an inner join with a unique right
            # key (a filtered dimension: TPC-H Q20's partsupp of 'forest%' parts keeps 1 in 100,
            # not half), never more than the left side.
            est = keyed_join_estimate(plan.left, plan.right, plan.left_keys, plan.right_keys, lr, lb, rr, rb)
            return max(1.0, min(lr, est)), lb
        if plan.kind in (JoinKind.SEMI, JoinKind.ANTI):
            return max(1.0, lr * 0.5), lb
        if plan.kind == JoinKind.MARK or plan.single_row:  # single_row: a scalar subquery's one row
            return lr, lb
        if plan.kind == JoinKind.CROSS or not plan.left_keys:
            return lr * rr, lb * rb
        est = keyed_join_estimate(plan.left, plan.right, plan.left_keys, plan.right_keys, lr, lb, rr, rb)
        return est, max(lb, rb)
    return 1000.0, 1000.0


def keyed_join_estimate(left: PlanNode, right: PlanNode, lkeys, rkeys, lr, lb, rr, rb) -> float:
    """Estimate |left JOIN right| from key statistics.

    A key whose value range in the Parquet statistics covers its table's row count may be
    unique (a primary key): then the join keeps the other side's rows, scaled by this side's
    selectivity. When neither side may be unique the join is many-to-many:
    |L| * |R| / max(ndv), with ndv <= value range. Unknown keys fall back to FK-PK by size.
    """
    best = None
    for lk, rk in zip(lkeys, rkeys):
        li, ri = key_stats(left, lk), key_stats(right, rk)
        if li is None or ri is None:
            continue
        (lndv, luniq, _), (rndv, runiq, _) = li, ri
        if runiq and (not luniq or rb <= lb):
            e = lr * min(1.0, rr / rb) if rb > 0 else 1.0
        elif luniq:
            e = rr * min(1.0, lr / lb) if lb > 0 else 1.0
        else:
            e = lr * rr / max(lndv, rndv, 1.0)
        best = e if best is None else min(best, e)
    if best is None:
        return join_estimate(lr, lb, rr, rb)
    return max(1.0, best)


def key_stats(plan: PlanNode, key: Expr) -> tuple[float, bool, float] | None:
    """(ndv bound, may be unique, table rows) of a join key that is a scanned column."""
    if not isinstance(key, Col):
        return None
    found = _find_scan(plan, key.name)
    if found is None:
        return None
    scan, name = found
    file_col = scan.columns[name]
    rows = float(scan.table.num_rows)
    lo = hi = None
    for rg in scan.table.row_groups:
        st = rg.stats.get(file_col)
        if st is None or not isinstance(st[0], int) or not isinstance(st[1], int):
            return None
        lo = st[0] if lo is None else min(lo, st[0])
        hi = st[1] if hi is None else max(hi, st[1])
    if lo is None:
        return None
    rng = float(hi - lo + 1)
    return min(rng, rows), rng >= rows, rows


def _find_scan(plan: PlanNode, name: str) -> tuple[Scan, str] | None:
    """The scan (and its internal column name) that produces column ``name`` unchanged."""
    if isinstance(plan, Scan):
        return (plan, name) if name in plan.columns else None
    if isinstance(plan, Project):
        for n, e in plan.exprs:
            if n == name:
                return _find_scan(plan.child, e.name) if isinstance(e, Col) else None
        return None
    if isinstance(plan, (Filter, Sort, Limit, Join, Window)):
        for c in plan.children:
            if name in c.schema:
                return _find_scan(c, name)
    return None


def join_estimate(lr: float, lb: float, rr: float, rb: float) -> float:
    """Rows of an equi-join of ``lr`` rows (``lb`` distinct keys) with ``rr`` (``rb``); an
    empty side (no keys at all) joins to nothing, estimated as one row."""
    if lb >= rb:
        return max(1.0, lr * (rr / rb)) if rb > 0 else 1.0
    return max(1.0, rr * (lr / lb)) if lb > 0 else 1.0


def _scan_below(plan: PlanNode) -> Scan | None:
    while True:
        if isinstance(plan, Scan):
            return plan
        if isinstance(plan, (Filter, Project)):
            plan = plan.child
        else:
            return None


def selectivity(pred: Expr | None, scan: Scan | None) -> float:
    """The fraction of ``scan``'s rows that ``pred`` keeps: the predicate's function says
    (:mod:`sluice.expr.functions`), from the scan's statistics where it can; DEFAULT_SEL otherwise."""
    if pred is None:
        return 1.0
    return _Selectivity(scan).of(pred)


class _Selectivity:
    """What a function's selectivity rule may ask: sub-predicates' selectivity, and the
    statistics of the scan's columns."""

    def __init__(self, scan: Scan | None):
        self.scan = scan

    def of(self, pred: Expr) -> float:
        if isinstance(pred, Func):
            fn = find(pred.op)
            if fn is not None and fn.selectivity is not None:
                return fn.selectivity(pred, self)
        return DEFAULT_SEL

    def distinct_values(self, column: str) -> int | None:
        """Distinct values of a string column in the first row group (its dictionary)."""
        file_col = self.scan.columns.get(column) if self.scan is not None else None
        if file_col is None or not self.scan.table.row_groups:
            return None
        return distinct_in_row_group(self.scan.table.row_groups[0], file_col)

    def value_range(self, column: str) -> tuple | None:
        """(min, max) of a column over all row groups, from their statistics; None when a row
        group lacks them or the range is empty."""
        file_col = self.scan.columns.get(column) if self.scan is not None else None
        if file_col is None:
            return None
        lo = hi = None
        for rg in self.scan.table.row_groups:
            st = rg.stats.get(file_col)
            if st is None or st[0] is None or st[1] is None:
                return None
            lo = st[0] if lo is None else min(lo, st[0])
            hi = st[1] if hi is None else max(hi, st[1])
        if lo is None or hi is None or hi <= lo:
            return None
        return lo, hi


_NDV: dict[tuple[str, int, str], int | None] = {}


def distinct_in_row_group(rg, column: str) -> int | None:
    """Distinct values of a string column in one row group, from its dictionary (read once and
    remembered); None when the column is not dictionary-encoded there or is nearly unique."""
    key = (rg.path, rg.index, column)
    if key not in _NDV:
        try:
            t = pq.ParquetFile(rg.path, read_dictionary=[column]).read_row_group(rg.index, columns=[column])
            col = t.column(0)
            dicts = [c.dictionary for c in col.chunks if pa.types.is_dictionary(c.type)]
            ndv = max((len(d) for d in dicts), default=None)
            _NDV[key] = ndv if ndv is not None and ndv < 0.5 * max(rg.num_rows, 1) else None
        except Exception:  # noqa: BLE001 - an estimate: without it the default guess stands
            _NDV[key] = None
    return _NDV[key]
