"""Keep only the columns some ancestor needs, down to the scans' projected columns."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import singledispatch

from sluice.plan.logical import (Aggregate, AsofJoin, Filter, Join, Limit, OneRow, PlanNode, Project, RecursiveUnion, Repeat, Scan, Shared, Sort, Unnest,
                                 Union, Window)


@dataclass
class _Shared:
    """What a pass knows of the shared subplans: per key, the union of the columns its
    references need (``known``; None while the first union is being collected: each reference
    then keeps the full schema), and the needs this pass collects."""

    known: dict | None = None
    collecting: dict | None = None


def prune_columns(plan: PlanNode) -> PlanNode:
    """Passes that collect what every reference of each shared subplan needs (until that
    stops shrinking), then one that prunes each shared subplan to the union (a window's partition aggregates share
    their input with the rows they join back to; a CTE used twice reads only the columns
    some reference uses)."""
    known: dict | None = None
    for _ in range(_MAX_PASSES):  # a shared subplan inside another learns its needs a pass later
        needs: dict = {}
        _prune(plan, set(plan.schema), _Shared(known, needs))
        if needs == known:
            break
        known = needs
    return _prune(plan, set(plan.schema), _Shared(known))


#: Collection passes at most (needs only shrink from pass to pass; nesting is shallow).
_MAX_PASSES = 6


def _cols(exprs) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        if e is not None:
            out |= e.columns()
    return out


@singledispatch
def _prune(plan: PlanNode, need: set[str], sh: _Shared) -> PlanNode:
    return plan


@_prune.register
def _(plan: Scan, need, sh):
    read = need | (plan.filter.columns() if plan.filter is not None else set())
    keep = {k: v for k, v in plan.columns.items() if k in read}
    outputs = tuple(k for k in keep if k in need)
    return replace(plan, columns=keep, outputs=None if len(outputs) == len(keep) else outputs)


@_prune.register
def _(plan: OneRow, need, sh):
    return plan


@_prune.register
def _(plan: Filter, need, sh):
    return Filter(_prune(plan.child, need | plan.predicate.columns(), sh), plan.predicate)


@_prune.register
def _(plan: Project, need, sh):
    exprs = tuple((n, e) for n, e in plan.exprs if n in need)
    return Project(_prune(plan.child, _cols(e for _, e in exprs), sh), exprs)


@_prune.register
def _(plan: Join, need, sh):
    lneed = (need & set(plan.left.schema)) | _cols(plan.left_keys) | _cols([plan.residual])
    rneed = (need & set(plan.right.schema)) | _cols(plan.right_keys) | _cols([plan.residual])
    lneed &= set(plan.left.schema)
    rneed &= set(plan.right.schema)
    out = replace(plan, left=_prune(plan.left, lneed, sh), right=_prune(plan.right, rneed, sh), outputs=None)
    # Columns only the join itself reads (its keys) are not carried above it: a join's output
    # is often the next join's build or spilled probe side, where every byte counts.
    full = out.schema
    emit = tuple(k for k in full if k in need)
    return replace(out, outputs=None if len(emit) == len(full) else emit)


@_prune.register
def _(plan: AsofJoin, need, sh):
    reads_l = _cols(plan.left_keys) | plan.left_on.columns() | _cols([plan.left_filter, plan.residual])
    reads_r = _cols(plan.right_keys) | plan.right_on.columns() | _cols([plan.residual])
    lneed = ((need | reads_l) & set(plan.left.schema))
    rneed = ((need | reads_r) & set(plan.right.schema))
    out = replace(plan, left=_prune(plan.left, lneed, sh), right=_prune(plan.right, rneed, sh), outputs=None)
    full = out.schema
    emit = tuple(k for k in full if k in need)
    return replace(out, outputs=None if len(emit) == len(full) else emit)


@_prune.register
def _(plan: Aggregate, need, sh):
    aggs = tuple((n, a) for n, a in plan.aggs if n in need)
    child_need = _cols(e for _, e in plan.keys) | _cols(a.arg for _, a in aggs)
    return Aggregate(_prune(plan.child, child_need, sh), plan.keys, aggs)


@_prune.register
def _(plan: Sort, need, sh):
    return replace(plan, child=_prune(plan.child, need | _cols(k.expr for k in plan.keys), sh))


@_prune.register
def _(plan: Limit, need, sh):
    return replace(plan, child=_prune(plan.child, need, sh))


@_prune.register
def _(plan: Window, need, sh):
    calls = tuple((n, c) for n, c in plan.calls if n in need)
    rest = need - {n for n, _ in plan.calls}
    if not calls:
        return _prune(plan.child, rest, sh)
    child_need = rest | _cols(plan.partition) | _cols(k.expr for k in plan.order) | \
        _cols(a for _, c in calls for a in c.args)
    return Window(_prune(plan.child, child_need, sh), plan.partition, plan.order, calls)


@_prune.register
def _(plan: Repeat, need, sh):
    return replace(plan, child=_prune(plan.child, need | {plan.count}, sh))


@_prune.register
def _(plan: Unnest, need, sh):
    return replace(plan, child=_prune(plan.child, (need - plan.made) | set(plan.sources), sh))


@_prune.register
def _(plan: Union, need, sh):
    # Positions must stay aligned: prune the same output names in every input.
    return Union(tuple(_prune(c, need, sh) for c in plan.inputs))


@_prune.register
def _(plan: Shared, need, sh):
    # Every reference sees the same columns: the union of what the references need.
    if sh.collecting is not None:
        sh.collecting.setdefault(plan.key, set()).update(need)
    union = (sh.known or {}).get(plan.key)
    keep = set(plan.child.schema) if union is None else (union & set(plan.child.schema))
    return Shared(_prune(plan.child, keep, sh), plan.key)


@_prune.register
def _(plan: RecursiveUnion, need, sh):
    # Every column feeds the next run (the work table), so each side keeps its whole output.
    return replace(plan, anchor=_prune(plan.anchor, set(plan.anchor.schema), sh),
                   step=_prune(plan.step, set(plan.step.schema), sh))
