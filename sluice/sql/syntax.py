"""Questions asked of the sqlglot AST before it is translated: which nodes are aggregates or
window calls of this SELECT (not of a nested one), the FROM item, grouping sets, GROUP BY ALL /
ORDER BY ALL expansion, AND-splitting. No translation happens here.
"""

from __future__ import annotations

from typing import Callable

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.dialect import ArgMaxNull, ArgMinNull, DecimalAverage, Product


AGG_FUNCS = {exp.Sum: "sum", exp.Avg: "avg", exp.Count: "count", exp.Min: "min", exp.Max: "max",
             exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
             exp.Variance: "var_samp", exp.VariancePop: "var_pop",
             # BOOL_AND / BOOL_OR: MIN / MAX of a boolean (false < true), NULLs ignored alike.
             exp.LogicalAnd: "min", exp.LogicalOr: "max", exp.ApproxDistinct: "approx_count_distinct",
             Product: "product", exp.Skewness: "skewness",
             exp.BitwiseAndAgg: "bit_and", exp.BitwiseOrAgg: "bit_or", exp.BitwiseXorAgg: "bit_xor",
             DecimalAverage: "decimal_average"}


_BOOL_AGGS = (exp.LogicalAnd, exp.LogicalOr)


#: Holistic aggregates: computed by a window over each group's rows in a chosen order, whose
#: per-group result the aggregation then takes (``Translator._holistic``).
HOLISTIC = (exp.Median, exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.WithinGroup,
            exp.ArgMin, exp.ArgMax, ArgMinNull, ArgMaxNull, exp.GroupConcat, exp.Mode, exp.First, exp.Last,
            exp.ArrayAgg)


def _from(sel: exp.Select):
    return sel.args.get("from_") or sel.args.get("from")


def _level_nodes(node: exp.Expression):
    """The nodes of ``node`` at its own query level: subqueries are yielded, not entered."""
    return node.walk(prune=lambda n: n is not node and isinstance(n, (exp.Subquery, exp.Select)))


def _contains_subquery(node: exp.Expression) -> bool:
    return any(isinstance(n, (exp.Subquery, exp.Exists)) or (isinstance(n, exp.In) and n.args.get("query"))
               for n in node.walk())


WINDOW_FUNCS = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
                exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile",
                exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value", exp.LastValue: "last_value",
                exp.NthValue: "nth_value"}


def _window_parts(w: exp.Window) -> list[exp.Expression]:
    """What a window call evaluates below it: its function's arguments, PARTITION BY, ORDER BY."""
    if isinstance(w.this, exp.Filter):
        raise UnsupportedError("FILTER (WHERE ...) in a window function")
    f = w.this.this if isinstance(w.this, exp.IgnoreNulls) else w.this
    parts = list(f.iter_expressions()) + list(w.args.get("partition_by") or [])
    if w.args.get("order") is not None:
        parts.append(w.args["order"])
    return parts


def _outer_nodes(node: exp.Expression, take: Callable[[exp.Expression], bool],
                 window_args: bool = False) -> list[exp.Expression]:
    """The nodes of ``node`` that ``take`` picks, outside subqueries and not below a picked
    node; with ``window_args`` a window call is searched only in what it evaluates below it
    (its function's arguments, PARTITION BY, ORDER BY), not in the window function itself."""
    out = []

    def rec(n):
        if isinstance(n, (exp.Subquery, exp.Exists, exp.Select)):
            return
        if take(n):
            out.append(n)
            return
        for child in (_window_parts(n) if window_args and isinstance(n, exp.Window) else n.iter_expressions()):
            rec(child)
    rec(node)
    return out


def _outer_windows(node: exp.Expression) -> list[exp.Window]:
    """Window calls in ``node`` that are not inside a subquery."""
    out = _outer_nodes(node, lambda n: isinstance(n, exp.Window))
    for w in out:
        for p in _window_parts(w):
            if any(isinstance(x, exp.Window) for x in p.walk()):
                raise PlanError("window functions cannot be nested")
    return out


def _outer_aggs(node: exp.Expression) -> list[exp.Expression]:
    """Aggregate calls in ``node`` that are not inside a subquery (nor window aggregates; but
    the aggregates inside a window call's arguments, as in ``sum(sum(x)) over ()``)."""
    return _outer_nodes(node, _is_aggregate, window_args=True)


def is_mad(n: exp.Expression) -> bool:
    """MAD(x), which sqlglot parses as an unknown function: a holistic aggregate here."""
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "mad" and len(n.expressions) == 1


def is_histogram(n: exp.Expression) -> bool:
    """HISTOGRAM(x), an unknown function to sqlglot: a holistic aggregate here (a MAP)."""
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "histogram" and len(n.expressions) == 1


def is_entropy(n: exp.Expression) -> bool:
    """ENTROPY(x), an unknown function to sqlglot: a holistic aggregate here (a DOUBLE)."""
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "entropy" and len(n.expressions) == 1


def is_bitstring_agg(n: exp.Expression) -> bool:
    """BITSTRING_AGG(x [, min, max]), an unknown function to sqlglot: a holistic aggregate here (a BIT)."""
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "bitstring_agg" and len(n.expressions) in (1, 3)


def is_named_holistic(n: exp.Expression) -> bool:
    """A holistic aggregate sqlglot parses as an unknown function (MAD, HISTOGRAM, ENTROPY,
    BITSTRING_AGG)."""
    return is_mad(n) or is_histogram(n) or is_entropy(n) or is_bitstring_agg(n)


def is_aggregate_call(n: exp.Expression) -> bool:
    """An aggregate's call (with its FILTER): no window, no expression around it."""
    return _is_aggregate(n)


def _is_aggregate(n: exp.Expression) -> bool:
    kinds = tuple(AGG_FUNCS) + HOLISTIC
    return isinstance(n, kinds) or is_named_holistic(n) or (
        isinstance(n, exp.Filter) and (isinstance(n.this, kinds) or is_named_holistic(n.this)))


def _set_members(group: exp.Group) -> list[exp.Expression]:
    """Every key expression a GROUP BY names, also inside ROLLUP / CUBE / GROUPING SETS."""
    out = []
    for g in group.expressions:
        if isinstance(g, (exp.Rollup, exp.Cube)):
            out += list(g.expressions)
        elif isinstance(g, exp.GroupingSets):
            for s in g.expressions:
                out += _set_items(s)
        else:
            out.append(g)
    return out


def _set_items(s: exp.Expression) -> list[exp.Expression]:
    if isinstance(s, exp.Tuple):
        return list(s.expressions)
    if isinstance(s, exp.Paren):
        return _set_items(s.this)
    if isinstance(s, (exp.Rollup, exp.Cube, exp.GroupingSets)):
        raise UnsupportedError("nested ROLLUP / CUBE / GROUPING SETS")
    return [s]


def _grouping_sets(group: exp.Group | None) -> list[list[exp.Expression]] | None:
    """The grouping sets of a GROUP BY as lists of its key ASTs (the cross product of its
    items: a plain key is in every set, ROLLUP (a, b) gives (a, b), (a), (); CUBE every
    subset); None for a plain GROUP BY."""
    if group is None or not any(isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)) for g in group.expressions):
        return None
    sets: list[list[exp.Expression]] = [[]]
    for g in group.expressions:
        if isinstance(g, exp.Rollup):
            items = list(g.expressions)
            options = [items[:k] for k in range(len(items), -1, -1)]
        elif isinstance(g, exp.Cube):
            items = list(g.expressions)
            options = [[x for j, x in enumerate(items) if mask >> (len(items) - 1 - j) & 1]
                       for mask in range((1 << len(items)) - 1, -1, -1)]
        elif isinstance(g, exp.GroupingSets):
            options = [_set_items(s) for s in g.expressions]
        else:
            options = [[g]]
        sets = [a + b for a in sets for b in options]
    if len(sets) > 4096:
        raise UnsupportedError(f"{len(sets)} grouping sets (more than 4096)")
    return sets


def _grouping_calls(node: exp.Expression) -> list[exp.Expression]:
    """GROUPING(...) calls in ``node`` outside subqueries."""
    return _outer_nodes(node, lambda n: isinstance(n, exp.Grouping))


def _group_by_all(group: exp.Group | None, items: list[exp.Expression]) -> exp.Group | None:
    """GROUP BY ALL as GROUP BY the positions of the select items without an aggregate."""
    if group is None or not group.args.get("all"):
        return group
    if group.expressions:
        raise UnsupportedError("GROUP BY ALL with other keys")
    keys = [exp.Literal.number(i + 1) for i, it in enumerate(items)
            if not _outer_aggs(it) and not _outer_windows(it)]
    return exp.Group(expressions=keys) if keys else None


def _order_by_all(order: exp.Order | None, width: int) -> exp.Order | None:
    """ORDER BY ALL [DESC] as ORDER BY every output column, left to right."""
    if order is None or not any(isinstance(o.this, exp.Var) and o.this.name.upper() == "ALL"
                                for o in order.expressions):
        return order
    if len(order.expressions) != 1:
        raise UnsupportedError("ORDER BY ALL with other keys")
    o = order.expressions[0]
    return exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(i + 1), desc=o.args.get("desc"),
                                              nulls_first=o.args.get("nulls_first")) for i in range(width)])


def _split_and(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, (exp.Where, exp.Having)):
        return _split_and(node.this)
    if isinstance(node, exp.Paren):
        return _split_and(node.this)
    if isinstance(node, exp.And):
        return _split_and(node.this) + _split_and(node.expression)
    return [node]
