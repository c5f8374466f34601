"""Where filters go -- decided here only (the translator leaves WHERE as one Filter above the
FROM clause and an outer join's ON conditions in the join). Two rules:

- :func:`filters_into_join_runs`, before join ordering: each WHERE conjunct joins the lowest
  run of inner joins whose relations it reads, through the preserved side of LEFT joins
  (later joins then only drop rows or extend them with columns it does not read, so filtering
  earlier is the same), so that ``order_joins`` sees the selective dimension filters of a
  query written with JOIN ... ON (TPC-DS Q72).
- :func:`push_filters`, after it: every conjunct as far down as it can go -- through
  projections (by substitution), into the sides of joins where that keeps outer-join
  semantics (an outer join's ON conjunct on its null-extended side alone filters that side),
  below aggregations when they only test group keys, and finally into scans (where they also
  prune row groups).

>>> # Filter(Project(Scan)) with a condition on a projected column ends as Scan(filter=...)
"""

from __future__ import annotations

from functools import singledispatch

from sluice.expr import nodes as N
from sluice.expr.nodes import Expr
from sluice.plan.joins import equi_pair, implied_filters
from sluice.plan.logical import (Aggregate, AsofJoin, Filter, InnerJoins, Join, JoinKind, PlanNode, Project, Repeat, Scan, Shared, Unnest,
                                 Sort, Limit, Union, Window)
from dataclasses import replace
from sluice.plan.estimate import estimate


def filters_into_join_runs(plan: PlanNode) -> PlanNode:
    """Each Filter's conjuncts into the lowest run of inner joins (InnerJoins) below it that
    has every column they read, through InnerJoins inputs and LEFT joins' preserved side;
    a conjunct with no column, or none such run, stays where it is."""
    if plan.children:
        plan = plan.reconstruct([filters_into_join_runs(c) for c in plan.children])
    if not isinstance(plan, Filter):
        return plan
    child, keep = plan.child, []
    for c in N.conjuncts(plan.predicate):
        placed = _into_run(child, c) if c.columns() else None
        if placed is None:
            keep.append(c)
        else:
            child = placed
    return _wrap(child, keep)


def _into_run(plan: PlanNode, c: Expr) -> PlanNode | None:
    """``plan`` with ``c`` in the lowest run below it that reads its columns (None: none)."""
    if not (c.columns() <= set(plan.schema)):
        return None
    if isinstance(plan, Join) and plan.kind == JoinKind.LEFT:
        left = _into_run(plan.left, c)
        return None if left is None else plan.reconstruct([left, plan.right])
    if isinstance(plan, InnerJoins):
        for k, p in enumerate(plan.inputs):
            lower = _into_run(p, c)
            if lower is not None:
                return InnerJoins(plan.inputs[:k] + (lower,) + plan.inputs[k + 1:], plan.conditions)
        return InnerJoins(plan.inputs, plan.conditions + (c,))
    return None


def push_filters(plan: PlanNode) -> PlanNode:
    """Every filter as low as it holds; on the way, subquery joins go down to the relation they
    concern (:func:`_sink_subquery_join`), and their conditions with them."""
    return _push(plan, [])


def _wrap(plan: PlanNode, conds: list[Expr]) -> PlanNode:
    c = N.and_all(conds)
    return plan if c is None else Filter(plan, c)


@singledispatch
def _push(plan: PlanNode, conds: list[Expr]) -> PlanNode:
    """Base case: stop here, recurse into children with nothing to push."""
    return _wrap(plan.reconstruct([_push(c, []) for c in plan.children]), conds)


@_push.register
def _(plan: Filter, conds):
    return _push(plan.child, conds + N.conjuncts(plan.predicate))


@_push.register
def _(plan: Scan, conds):
    if not conds:
        return plan
    have = N.conjuncts(plan.filter)
    new = [c for c in conds if not any(c == h for h in have)]
    return replace(plan, filter=N.and_all(have + new)) if new else plan


@_push.register
def _(plan: Project, conds):
    mapping = {n: e for n, e in plan.exprs}
    below, keep = [], []
    for c in conds:
        # Substitute when every referenced output is a plain expression of the input.
        if c.columns() <= set(mapping):
            below.append(N.substitute(c, mapping))
        else:
            keep.append(c)
    return _wrap(Project(_push(plan.child, below), plan.exprs), keep)


@_push.register
def _(plan: Aggregate, conds):
    keys = {n: e for n, e in plan.keys}
    below, keep = [], []
    for c in conds:
        if c.columns() and c.columns() <= set(keys):
            below.append(N.substitute(c, keys))
        else:
            keep.append(c)
            # An OR of branches that each test a group key implies the OR of those tests, which
            # can go below (TPC-DS Q39b: ``moy = 5 OR (cov > 1.5 AND moy = 4)``); c stays.
            for imp in implied_filters(c, [set(keys), set(plan.schema) - set(keys)]):
                if imp.columns() <= set(keys):
                    below.append(N.substitute(imp, keys))
    return _wrap(Aggregate(_push(plan.child, below), plan.keys, plan.aggs), keep)


@_push.register
def _(plan: Join, conds):
    sunk = _sink_subquery_join(plan, conds)
    if sunk is not None:
        return _push(sunk, conds)
    left_names = set(plan.left.schema)
    right_names = set(plan.right.schema)
    to_left, to_right, keep = [], [], []
    if plan.residual is not None and not plan.null_aware and not plan.single_row and \
            plan.kind in (JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.RIGHT):
        # An ON conjunct on the null-extended (or only tested) side alone filters that side
        # first: a row it rejects matches nothing either way.
        side = right_names if plan.kind != JoinKind.RIGHT else left_names
        stay = []
        for c in N.conjuncts(plan.residual):
            if c.columns() and c.columns() <= side:
                (to_left if plan.kind == JoinKind.RIGHT else to_right).append(c)
            else:
                stay.append(c)
        if len(stay) < len(N.conjuncts(plan.residual)):
            plan = replace(plan, residual=N.and_all(stay))
    for c in conds:
        cols = c.columns()
        if cols and cols <= left_names and plan.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.CROSS, JoinKind.MARK):
            to_left.append(c)
        elif cols and cols <= right_names and plan.kind in (JoinKind.INNER, JoinKind.RIGHT, JoinKind.CROSS):
            to_right.append(c)
        else:
            keep.append(c)
    if not plan.null_aware:
        # A condition on one side's key holds on the other side's key for every matching
        # pair, so the other side may drop the rows it rules out -- also the null-supplying
        # side of an outer join, whose rows it rules out match nothing that survives.
        held_l = _holds(plan.left) if plan.left_keys else []
        held_r = _holds(plan.right) if plan.right_keys else []
        if plan.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.MARK) and plan.left_keys:
            to_right += _across(to_left + held_l, plan.left_keys, plan.right_keys, to_right + held_r)
        if plan.kind in (JoinKind.INNER, JoinKind.RIGHT) and plan.right_keys:
            to_left += _across(to_right + held_r, plan.right_keys, plan.left_keys, to_left + held_l)
    if plan.kind in (JoinKind.INNER, JoinKind.CROSS) and keep:
        # Equalities between the sides of a cross join become join keys.
        lk, rk, rest = list(plan.left_keys), list(plan.right_keys), []
        for c in keep:
            pair = equi_pair(c, left_names, right_names) if not plan.single_row else None
            if pair is not None:
                lk.append(pair[0])
                rk.append(pair[1])
            else:
                rest.append(c)
        if len(lk) != len(plan.left_keys):
            plan = replace(plan, kind=JoinKind.INNER, left_keys=tuple(lk), right_keys=tuple(rk))
            keep = rest
    # The rest of an outer join's residual stays in it.
    return _wrap(replace(plan, left=_push(plan.left, to_left), right=_push(plan.right, to_right)), keep)


@_push.register
def _(plan: AsofJoin, conds):
    """Conditions on the left side alone go below an ASOF join that keeps left rows by their
    own match (inner, left, semi, anti): each left row's nearest right row does not depend on
    the other left rows. Nothing goes to the right side: a right row filtered out could be
    the nearest one, and another would take its place."""
    left_names = set(plan.left.schema)
    to_left, keep = [], []
    for c in conds:
        cols = c.columns()
        if cols and cols <= left_names and plan.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI):
            to_left.append(c)
        else:
            keep.append(c)
    return _wrap(replace(plan, left=_push(plan.left, to_left), right=_push(plan.right, [])), keep)


@_push.register
def _(plan: Union, conds):
    if not conds:
        return Union(tuple(_push(c, []) for c in plan.inputs))
    return Union(tuple(_push(c, list(conds)) for c in plan.inputs))


@_push.register
def _(plan: Sort, conds):
    if plan.limit is not None or plan.offset:
        return _wrap(replace(plan, child=_push(plan.child, [])), conds)
    return replace(plan, child=_push(plan.child, conds))


@_push.register
def _(plan: Limit, conds):
    return _wrap(replace(plan, child=_push(plan.child, [])), conds)


@_push.register
def _(plan: Window, conds):
    # A filter changes the partitions a window sees: it stays above.
    return _wrap(replace(plan, child=_push(plan.child, [])), conds)


@_push.register
def _(plan: Repeat, conds):
    # A condition on the row holds for all its copies: it may go below.
    return replace(plan, child=_push(plan.child, conds))


@_push.register
def _(plan: Unnest, conds):
    # A condition not on the elements holds for all the row's copies: it may go below.
    below = [c for c in conds if not (plan.made & c.columns())]
    return _wrap(replace(plan, child=_push(plan.child, below)), [c for c in conds if plan.made & c.columns()])


@_push.register
def _(plan: Shared, conds):
    # Conditions of one reference must not filter the other references' rows.
    return _wrap(Shared(_push(plan.child, []), plan.key), conds)


def _across(conds: list[Expr], keys: tuple[Expr, ...], other: tuple[Expr, ...], there: list[Expr]) -> list[Expr]:
    """The conditions of ``conds`` on a single join key column, restated on the other side's
    key (of the same type). TPC-DS Q78: ``ss_sold_year = 2000`` on the preserved side of
    ``ss LEFT JOIN ws ON ws_sold_year = ss_sold_year ...`` also filters ws (and cs) to 2000,
    below their aggregations -- 13 million catalog_sales groups at SF 10 become a fifth."""
    out = []
    for c in conds:
        cols = c.columns()
        if len(cols) != 1:
            continue
        (name,) = cols
        for k, o in zip(keys, other):
            if isinstance(k, N.Col) and k.name == name and k.type == o.type:
                moved = N.substitute(c, {name: o})
                if not any(moved == x for x in there + out):
                    out.append(moved)
    return out


def _holds(tree: PlanNode) -> list[Expr]:
    """Conditions every row of ``tree`` satisfies, as far as filters already in place tell:
    its filters' conjuncts, through the sides of joins whose rows pass up unchanged. (Q78's
    ``ss_sold_year = 2000`` is already on ``ss`` below the first of its two LEFT joins.)"""
    out: list[Expr] = []
    while True:
        if isinstance(tree, Filter):
            out += N.conjuncts(tree.predicate)
            tree = tree.child
        elif isinstance(tree, Join) and tree.outputs is None and tree.kind in (JoinKind.INNER, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.MARK):
            if tree.kind == JoinKind.INNER:
                out += _holds(tree.right)
            tree = tree.left
        elif isinstance(tree, Project):
            # what holds below, on the columns passed through, under their names here
            back = {}
            for n, e in tree.exprs:
                if isinstance(e, N.Col):
                    back.setdefault(e.name, N.Col(n, e.type))
            return out + [N.substitute(c, back) for c in _holds(tree.child) if c.columns() <= set(back)]
        else:
            return out


# ---------------------------------------------------------------- subquery joins sink

def _movable(plan: PlanNode) -> bool:
    """Whether ``plan`` is a join :func:`_sink_subquery_join` moves."""
    return isinstance(plan, Join) and plan.outputs is None and (
        (plan.kind == JoinKind.CROSS and plan.single_row)
        or (bool(plan.left_keys) and not plan.null_aware and not plan.single_row and plan.mark is None
            and (plan.kind == JoinKind.LEFT or (plan.kind == JoinKind.INNER and _unique_on(plan.right, plan.right_keys)))))


def _sink_subquery_join(plan: Join, conds: list[Expr]) -> PlanNode | None:
    """A subquery's join, moved from above a whole FROM clause down to the one relation it
    concerns (None: it stays). The translator joins a scalar subquery to everything the query
    joined before it:

    - uncorrelated: a single-row cross join; a condition comparing its value with one
      relation's column (TPC-DS Q6: ``d_month_seq = (select ... from date_dim ...)``) then
      filtered 27 million joined rows of SF 10 instead of date_dim's 73,049 before the join --
      and the date join, built on the whole table, gave the fact scan no runtime filter worth
      having. A single-row cross join commutes with every join below it (its one row, or the
      NULL row of an empty subquery, extends each row alike), so it goes down to the relation
      holding the condition's other columns, and the condition follows it there.
    - correlated (a LEFT join on the correlation keys, or the inner join a filter on its value
      made of it, to an aggregate grouped by those keys; a written LEFT JOIN is moved alike):
      (A JOIN B) LEFT JOIN R ON A.k = R.k
      is (A LEFT JOIN R) JOIN B, so it goes down to the relation of its keys -- where that is
      estimated smaller than what it joins now (below a join that shrinks A, it would cost
      more). Q6's ``i_current_price > 1.2 * (select avg(...) where j.i_category =
      i.i_category)`` then keeps 24 thousand of item's 102 thousand rows before the fact join
      instead of 245 thousand joined rows after it.

    It goes through inner and cross joins (either side) and the left side of left, semi,
    anti and mark joins, whose rows pass up with every column of that side."""
    if not _movable(plan):
        return None
    left = set(plan.left.schema)
    if plan.single_row:
        sub = set(plan.right.schema)
        want = next((c.columns() - sub for c in conds if c.columns() & sub and c.columns() - sub
                     and c.columns() - sub <= left), None)
        if not want:
            return None
        return _sink(plan.left, want, lambda x: replace(plan, left=x), smaller=False)
    want = set().union(*(k.columns() for k in plan.left_keys))
    if plan.residual is not None:
        want |= plan.residual.columns() & left
    if not want or not want <= left:
        return None
    return _sink(plan.left, want, lambda x: replace(plan, left=x), smaller=True)


def _sink(tree: PlanNode, want: set[str], attach, smaller: bool) -> PlanNode | None:
    """``tree`` with ``attach(x)`` in place of its deepest sub-plan ``x`` that holds every
    column of ``want`` (None where that is ``tree`` itself, or, with ``smaller``, where ``x``
    is not estimated to have fewer rows than ``tree``)."""

    path, node = [], tree
    while True:
        if isinstance(node, Filter):
            nxt = ("child", node.child)
        elif isinstance(node, Join) and node.outputs is None and want <= set(node.left.schema) \
                and node.kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI, JoinKind.MARK):
            nxt = ("left", node.left)
        elif isinstance(node, Join) and node.outputs is None and want <= set(node.right.schema) \
                and node.kind in (JoinKind.INNER, JoinKind.CROSS) and not node.single_row:
            nxt = ("right", node.right)
        else:
            break
        path.append((node, nxt[0]))
        node = nxt[1]
    # Another subquery join already on the target stays on it: this one goes above it (two
    # scalar subqueries on one column -- TPC-DS Q54's ``d_month_seq between (select ...) and
    # (select ...)`` -- would otherwise pass each other down for ever).
    while path:
        trail = len(path)
        while trail and isinstance(path[trail - 1][0], Filter):
            trail -= 1
        if not (trail and _movable(path[trail - 1][0])):
            break
        node = path[trail - 1][0]
        path = path[:trail - 1]
    if not any(isinstance(p, Join) for p, _ in path):
        return None
    if smaller and not estimate(node)[0] < estimate(tree)[0]:
        return None
    out = attach(node)
    for parent, side in reversed(path):
        out = replace(parent, **{side: out})
    return out


def _unique_on(plan: PlanNode, keys: tuple[Expr, ...]) -> bool:
    """Whether ``plan`` has at most one row per value of ``keys`` (plain columns): an
    aggregate grouped by exactly them, under projections that pass them through."""
    names = set()
    for k in keys:
        if not isinstance(k, N.Col):
            return False
        names.add(k.name)
    while isinstance(plan, Project):
        m = {n: e for n, e in plan.exprs}
        if not all(isinstance(m.get(n), N.Col) for n in names):
            return False
        names = {m[n].name for n in names}
        plan = plan.child
    return isinstance(plan, Aggregate) and bool(plan.keys) and names == {n for n, _ in plan.keys}
