"""sqlglot AST -> logical plan.

Name resolution is scope-based (a column resolves in the innermost SELECT that has it; a
reference to an enclosing SELECT makes the subquery correlated). Subqueries are decorrelated
here into joins: EXISTS/NOT EXISTS -> semi/anti join, IN/NOT IN -> semi/(null-aware) anti
join, scalar subqueries -> a one-row cross join or, when correlated, an aggregate grouped by
the correlation keys joined on them. Inner joins of a FROM clause are ordered greedily by
estimated size (:mod:`sluice.plan.joins`).
"""

from __future__ import annotations

import datetime as dt
import decimal as dec
import re
from dataclasses import dataclass, field, replace
from typing import Callable

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.coverage import check_supported, construct_name
from sluice.sql.normalize import normalize
from sluice.io.parquet.metadata import TableInfo
from sluice.plan import expr as E
from sluice.plan.expr import NULL_TYPE, Col, Expr, Func, Lit
from sluice.plan.joins import plan_inner_joins
from sluice.plan.logical import (Aggregate, AggCall, Filter, Join, Limit, OneRow, PlanNode, Project, Repeat, Window, WindowCall,
                                 WINDOW_AGGREGATES,
                                 RecursiveUnion, Scan, Shared, Sort, SortKey, Union, WorkTable)
from sluice.types import BOOL, DATE, FLOAT64, INT32, INT64, STRING, LType, decimal

Catalog = Callable[[str], TableInfo]


@dataclass
class Source:
    alias: str
    cols: dict[str, Col]  # lower-case column name -> internal column
    unreadable: dict[str, str] = field(default_factory=dict)  # lower-case name -> its type

    def refuse(self, name_l: str):
        raise UnsupportedError(f"column {name_l} of type {self.unreadable[name_l]} (lists, structs, maps and "
                               "binary columns cannot be read; the other columns can)")


@dataclass
class Scope:
    parent: "Scope | None"
    sources: list[Source] = field(default_factory=list)
    local: set[str] = field(default_factory=set)
    #: JOIN ... USING / NATURAL JOIN columns: an unqualified name means the left side's column
    #: (one column, not an ambiguous pair), and ``*`` shows it once.
    merged: dict[str, Col] = field(default_factory=dict)
    hidden: set[tuple[str, str]] = field(default_factory=set)  # (alias, name) left out of *

    def add(self, src: Source) -> None:
        if any(s.alias == src.alias for s in self.sources):
            raise PlanError(f"table name {src.alias!r} is used twice in one FROM clause; use aliases")
        self.sources.append(src)
        self.local.update(c.name for c in src.cols.values())

    def resolve(self, table: str | None, name: str) -> Col:
        name_l = name.lower()
        if table:
            t = table.lower()
            for s in self.sources:
                if s.alias == t:
                    if name_l in s.cols:
                        return s.cols[name_l]
                    if name_l in s.unreadable:
                        s.refuse(name_l)
                    raise PlanError(f"table {table!r} has no column {name!r}")
        else:
            if name_l in self.merged:
                return self.merged[name_l]
            hits = [s.cols[name_l] for s in self.sources if name_l in s.cols]
            if len(hits) > 1:
                raise PlanError(f"column reference {name!r} is ambiguous")
            if hits:
                return hits[0]
            for s in self.sources:
                if name_l in s.unreadable:
                    s.refuse(name_l)
        if self.parent is not None:
            return self.parent.resolve(table, name)
        if table:
            raise PlanError(f"unknown table or alias {table!r} in {table}.{name}")
        raise PlanError(f"unknown column {name!r}")


@dataclass
class Correlation:
    """Filled while translating a correlated subquery: equality pairs and other conditions."""

    pairs: list[tuple[Expr, Expr]] = field(default_factory=list)  # (outer expr, inner expr)
    residual: list[Expr] = field(default_factory=list)
    inner_key_cols: list[str] = field(default_factory=list)


@dataclass
class Rel:
    plan: PlanNode
    outputs: list[tuple[str, str]]  # (user-visible name, internal name)


@dataclass
class Ctx:
    scope: Scope
    aggs: dict[int, Col] | None = None        # id(agg AST) -> aggregate output (post-agg)
    group_map: dict[Expr, Col] | None = None  # group key expr -> key output (post-agg)
    subs: dict[int, Col] = field(default_factory=dict)  # id(subquery AST) -> value column
    aliases: dict[str, exp.Expression] | None = None  # select-list aliases -> their expressions


AGG_FUNCS = {exp.Sum: "sum", exp.Avg: "avg", exp.Count: "count", exp.Min: "min", exp.Max: "max",
             exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
             exp.Variance: "var_samp", exp.VariancePop: "var_pop",
             # BOOL_AND / BOOL_OR: MIN / MAX of a boolean (false < true), NULLs ignored alike.
             exp.LogicalAnd: "min", exp.LogicalOr: "max", exp.ApproxDistinct: "approx_count_distinct"}
_BOOL_AGGS = (exp.LogicalAnd, exp.LogicalOr)
#: Holistic aggregates: computed by a window over each group's rows in a chosen order, whose
#: per-group result the aggregation then takes (``Translator._holistic``).
HOLISTIC = (exp.Median, exp.PercentileCont, exp.PercentileDisc, exp.Quantile, exp.WithinGroup,
            exp.ArgMin, exp.ArgMax, exp.GroupConcat)
_NUMERIC_AGGS = {"sum", "avg", "stddev_samp", "stddev_pop", "var_samp", "var_pop"}


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
    parts = list(w.this.iter_expressions()) + list(w.args.get("partition_by") or [])
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


def _is_aggregate(n: exp.Expression) -> bool:
    kinds = tuple(AGG_FUNCS) + HOLISTIC
    return isinstance(n, kinds) or (isinstance(n, exp.Filter) and isinstance(n.this, kinds))


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


def _references(node: exp.Expression, name: str) -> bool:
    """Whether ``node`` reads a table called ``name`` (a CTE's reference to itself)."""
    return any(t.name.lower() == name and not t.args.get("db") for t in node.find_all(exp.Table))


def _natural(j: exp.Join) -> bool:
    return str(j.args.get("method") or "").upper() == "NATURAL"


def _const_str(node, what: str) -> str:
    if not (isinstance(node, exp.Literal) and node.is_string):
        raise UnsupportedError(f"{what} with an argument that is not a string constant")
    return node.this


def _const_int(node, what: str) -> int:
    neg = isinstance(node, exp.Neg)
    inner = node.this if neg else node
    if not (isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit()):
        raise UnsupportedError(f"{what} with an argument that is not an integer constant")
    return -int(inner.this) if neg else int(inner.this)


def _is_untyped_null(e: Expr) -> bool:
    return isinstance(e, Lit) and e.value is None and e.type == NULL_TYPE


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


class Translator:
    def __init__(self, catalog: Catalog, files: Callable[[list[str]], TableInfo] | None = None) -> None:
        self.catalog = catalog
        self.files = files
        self._using_pairs: dict[int, list[tuple[Col, Col]]] = {}
        self.ctes: list[dict[str, exp.Expression]] = []
        self._names: set[str] = set()
        self._cte_refs: dict[int, int] = {}
        self._cte_columns: dict[int, list[str]] = {}  # id(CTE body) -> its column names, WITH t(a, b)
        self._recursive: set[int] = set()             # id(CTE body) of WITH RECURSIVE CTEs that use themselves
        self._work: dict[int, Rel] = {}               # id(CTE body) -> its work table, inside its step
        self._shared: dict[int, Rel] = {}
        self._expanding: set[str] = set()  # select-list aliases being expanded (no self-reference)
        self._unnamed = 0  # subqueries in FROM without an alias so far

    # ------------------------------------------------------------------ naming

    def fresh(self, base: str) -> str:
        base = base.replace('"', "")[:48] or "col"
        name = base
        i = 1
        while name in self._names:
            i += 1
            name = f"{base}#{i}"
        self._names.add(name)
        return name

    # ------------------------------------------------------------------ queries

    def translate(self, ast: exp.Expression) -> Rel:
        if not isinstance(ast, (exp.Select, exp.Union, exp.Subquery, exp.Intersect, exp.Except)):
            raise UnsupportedError(construct_name(ast))
        ast = normalize(ast)
        check_supported(ast)  # nothing the query says may be dropped: refuse what is not read
        return self.query(ast, None, None)

    def query(self, ast: exp.Expression, parent: Scope | None, corr: Correlation | None) -> Rel:
        with_ = ast.args.get("with_") or ast.args.get("with")
        pushed = False
        if with_ is not None:
            level = {c.alias_or_name.lower(): c.this for c in with_.expressions}
            for c in with_.expressions:
                alias = c.args.get("alias")
                if alias is not None and alias.args.get("columns"):
                    self._cte_columns[id(c.this)] = [x.name for x in alias.args["columns"]]
                if with_.args.get("recursive") and _references(c.this, c.alias_or_name.lower()):
                    self._recursive.add(id(c.this))
            self.ctes.append(level)
            pushed = True
            # Count references to each CTE: one referenced twice is computed once (Shared).
            for t in ast.find_all(exp.Table):
                cte = level.get(t.name.lower())
                if cte is not None and not t.args.get("db"):
                    self._cte_refs[id(cte)] = self._cte_refs.get(id(cte), 0) + 1
        try:
            if isinstance(ast, exp.Subquery):
                return self.query(ast.this, parent, corr)
            if isinstance(ast, exp.Union):
                return self.union(ast, parent, corr)
            if isinstance(ast, (exp.Intersect, exp.Except)):
                return self.intersect_except(ast, parent, corr)
            if not isinstance(ast, exp.Select):
                raise UnsupportedError(f"{ast.key.upper()} as a query")
            return self.select(ast, parent, corr)
        finally:
            if pushed:
                self.ctes.pop()

    def union(self, ast: exp.Union, parent, corr) -> Rel:
        if corr is not None:
            raise UnsupportedError("correlated subquery over UNION")
        parts: list[exp.Expression] = []

        def flatten(n):
            if isinstance(n, exp.Union) and not any(n.args.get(k) for k in ("order", "limit", "offset", "with_")) \
                    and bool(n.args.get("distinct")) == bool(ast.args.get("distinct")):
                flatten(n.left)
                flatten(n.right)
            else:
                parts.append(n)
        # The root's own ORDER BY / LIMIT apply to the whole union (below), not to a branch.
        flatten(ast.left)
        flatten(ast.right)
        fixed, names, outputs = self._set_inputs("UNION", parts, parent)
        plan: PlanNode = Union(tuple(fixed))
        if ast.args.get("distinct"):
            sch = plan.schema
            plan = Aggregate(plan, tuple((n, Col(n, sch[n])) for n in names), ())
        return self._order_limit_simple(ast, Rel(plan, outputs))

    def intersect_except(self, ast: exp.Intersect | exp.Except, parent, corr) -> Rel:
        """INTERSECT / EXCEPT [ALL] as one aggregation over both inputs tagged by side: per
        distinct row (NULLs equal, as set operations compare), how often it occurs left and
        right; DISTINCT keeps the rows that pass once, ALL repeats them min(l, r) (INTERSECT)
        or l - r (EXCEPT) times, as the standard and DuckDB define the bag operations."""
        kind = "INTERSECT" if isinstance(ast, exp.Intersect) else "EXCEPT"
        if corr is not None:
            raise UnsupportedError(f"correlated subquery over {kind}")
        fixed, names, outputs = self._set_inputs(kind, [ast.left, ast.right], parent)
        left_n, right_n = self.fresh("left_count"), self.fresh("right_count")
        tagged = []
        for side, p in enumerate(fixed):
            tags = ((left_n, Lit(1 - side, INT64)), (right_n, Lit(side, INT64)))
            tagged.append(Project(p.child, p.exprs + tags))
        plan: PlanNode = Union(tuple(tagged))
        sch = plan.schema
        plan = Aggregate(plan, tuple((n, Col(n, sch[n])) for n in names),
                         ((left_n, AggCall("sum", Col(left_n, INT64))), (right_n, AggCall("sum", Col(right_n, INT64)))))
        left, right = Col(left_n, INT64), Col(right_n, INT64)
        zero = Lit(0, INT64)
        if ast.args.get("distinct"):
            # Every group occurs on at least one side.
            if kind == "INTERSECT":
                keep = E.make_bool("and", [E.make_compare(">", left, zero), E.make_compare(">", right, zero)])
            else:
                keep = E.make_compare("=", right, zero)
            plan = Filter(plan, keep)
        else:
            times = self.fresh("times")
            if kind == "INTERSECT":
                count = E.make_func("case", [E.make_compare("<", left, right), left, right])
            else:
                count = E.make_arith("-", left, right)
            sch = plan.schema
            plan = Project(plan, tuple((n, Col(n, sch[n])) for n in names) + ((times, count),))
            plan = Repeat(Filter(plan, E.make_compare(">", Col(times, INT64), zero)), times)
        sch = plan.schema
        plan = Project(plan, tuple((n, Col(n, sch[n])) for n in names))
        return self._order_limit_simple(ast, Rel(plan, outputs))

    def _set_inputs(self, kind: str, parts: list[exp.Expression], parent) -> tuple[list[Project], list[str], list]:
        """The inputs of a set operation as Projects onto shared fresh names, each column cast
        to one type (an untyped ``NULL as x`` takes the other inputs' type); the output names."""
        rels = [self.query(p, parent, None) for p in parts]
        width = len(rels[0].outputs)
        if any(len(r.outputs) != width for r in rels):
            raise PlanError(f"{kind} inputs have different numbers of columns")
        names = [self.fresh(n) for n, _ in rels[0].outputs]
        inputs = []
        for r in rels:
            sch = r.plan.schema
            exprs = []
            for i, (_, internal) in enumerate(r.outputs):
                exprs.append((names[i], Col(internal, sch[internal])))
            inputs.append(Project(r.plan, tuple(exprs)))
        nulls = [[_untyped_null(r.plan, internal) for _, internal in r.outputs] for r in rels]
        t0 = []
        for i in range(width):
            typed = [p.exprs[i][1].type for p, nl in zip(inputs, nulls) if not nl[i]]
            t0.append(typed[0] if typed else inputs[0].exprs[i][1].type)
        fixed = []
        for p, nl in zip(inputs, nulls):
            exprs = []
            for i, ((n, e), t) in enumerate(zip(p.exprs, t0)):
                if nl[i] and e.type != t:
                    e = Func("cast_null", (e,), t)
                if e.type != t:
                    if (e.type.kind == "string") != (t.kind == "string"):
                        raise PlanError(f"{kind} inputs have incompatible column types {t} and {e.type}")
                    e = Func("cast", (e,), t, (t,))
                exprs.append((n, e))
            fixed.append(Project(p.child, tuple(exprs)))
        outputs = [(u, n) for (u, _), n in zip(rels[0].outputs, names)]
        return fixed, names, outputs

    def _order_limit_simple(self, ast, rel: Rel) -> Rel:
        order = ast.args.get("order")
        plan = rel.plan
        limit, offset = self._limit_offset(ast)
        if order is not None:
            sch = plan.schema
            keys = []
            for o in order.expressions:
                target = o.this
                col = None
                if isinstance(target, exp.Literal) and not target.is_string:
                    col = rel.outputs[int(target.this) - 1][1]
                elif isinstance(target, exp.Column):
                    for u, n in rel.outputs:
                        if u.lower() == target.name.lower():
                            col = n
                if col is None:
                    raise UnsupportedError("ORDER BY on a UNION must name an output column")
                keys.append(self._sort_key(o, Col(col, sch[col])))
            plan = Sort(plan, tuple(keys), limit, offset)
        elif limit is not None or offset:
            plan = Limit(plan, limit, offset)
        return Rel(plan, rel.outputs)

    def _limit_offset(self, ast) -> tuple[int | None, int]:
        def val(node):
            if node is None:
                return None
            e = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
            if not isinstance(e, exp.Literal) or e.is_string:
                raise UnsupportedError("LIMIT/OFFSET must be integer constants")
            return int(e.this)
        return val(ast.args.get("limit")), val(ast.args.get("offset")) or 0

    def _sort_key(self, o: exp.Ordered, e: Expr) -> SortKey:
        desc = bool(o.args.get("desc"))
        nf = o.args.get("nulls_first")
        nulls_first = bool(nf) if nf is not None else desc  # NULLs are largest by default
        return SortKey(e, not desc, nulls_first)

    # ------------------------------------------------------------------ FROM

    def table_source(self, node: exp.Expression, scope: Scope) -> tuple[PlanNode, Source]:
        if isinstance(node, exp.Table):
            ref = _file_ref(node)
            if ref is not None:
                if self.files is None:
                    raise UnsupportedError("querying files directly in this context")
                alias = (node.alias or _file_alias(ref.patterns[0])).lower()
                return self._scan_source(self.files(ref), alias)
            if not isinstance(node.this, exp.Identifier):
                raise UnsupportedError(f"table function {construct_name(node.this).split()[-1]}")
            name = node.name.lower()
            alias = (node.alias or node.name).lower()
            if node.args.get("db") or node.args.get("catalog"):
                raise PlanError(f"unknown table {node.sql()!r} (schemas and catalogs are not supported)")
            if not _is_table_name(node.name):
                raise UnsupportedError(f"reading {node.name!r} (only Parquet and CSV files can be queried directly)")
            for level in reversed(self.ctes):
                if name in level:
                    cte_ast = level[name]
                    if id(cte_ast) in self._work:  # inside its own recursive step
                        return self._derived(self._work[id(cte_ast)], alias, node.args.get("alias"))
                    shared = self._shared.get(id(cte_ast))
                    if shared is not None:
                        return self._derived(shared, alias, node.args.get("alias"))
                    # A CTE body may reference CTEs defined before it, not itself.
                    saved = self.ctes
                    self.ctes = self.ctes[: self.ctes.index(level)] + [
                        {k: v for k, v in level.items() if k != name}]
                    try:
                        if id(cte_ast) in self._recursive:
                            rel = self._recursive_cte(cte_ast, name, saved)
                        else:
                            rel = self._named_columns(self.query(cte_ast, None, None), cte_ast, name)
                    finally:
                        self.ctes = saved
                    if self._cte_refs.get(id(cte_ast), 0) > 1:
                        rel = Rel(Shared(rel.plan, len(self._shared)), rel.outputs)
                        self._shared[id(cte_ast)] = rel
                    return self._derived(rel, alias, node.args.get("alias"))
            return self._scan_source(self.catalog(name), alias)
        if isinstance(node, exp.Values):
            alias_node = node.args.get("alias")
            alias = alias_node.name.lower() if alias_node is not None and alias_node.name else "valueslist"
            return self._derived(self._values(node), alias, alias_node)
        if isinstance(node, exp.Subquery):
            alias_node = node.args.get("alias")
            rel = self.query(node.this, None, None)
            if alias_node is None:  # as DuckDB: its columns are reachable by their names only
                self._unnamed += 1
                return self._derived(rel, f"unnamed_subquery{self._unnamed}", None)
            return self._derived(rel, alias_node.name.lower(), alias_node)
        raise UnsupportedError(f"{node.key.upper()} in FROM")

    def _named_columns(self, rel: Rel, cte_ast, name: str) -> Rel:
        """A CTE's own column names, ``WITH t(a, b) AS (...)``, replace its query's names."""
        names = self._cte_columns.get(id(cte_ast))
        if not names:
            return rel
        if len(names) > len(rel.outputs):
            raise PlanError(f"CTE {name!r} has {len(rel.outputs)} columns but {len(names)} names were given")
        return Rel(rel.plan, [(names[i] if i < len(names) else u, internal)
                              for i, (u, internal) in enumerate(rel.outputs)])

    def _recursive_cte(self, body, name: str, ctes) -> Rel:
        """WITH RECURSIVE name AS (anchor UNION [ALL] step): the anchor (which must not use
        the name) gives the columns, names and types; in the step, the name reads the work
        table; the step's columns are cast to the anchor's types, as DuckDB does."""
        if not isinstance(body, exp.Union) or any(body.args.get(k) for k in ("order", "limit", "offset")):
            raise UnsupportedError("WITH RECURSIVE other than anchor UNION [ALL] step")
        if _references(body.left, name):
            raise UnsupportedError(f"recursive CTE {name!r} used in its anchor (the part before the last UNION)")
        anchor = self._named_columns(self.query(body.left, None, None), body, name)
        sch = anchor.plan.schema
        internal = [i for _, i in anchor.outputs]
        self._unnamed += 1
        key = self._unnamed
        work = WorkTable(key, tuple((i, sch[i]) for i in internal))
        self._work[id(body)] = Rel(work, list(anchor.outputs))
        saved = self.ctes
        self.ctes = ctes  # the step sees the CTE's own name
        try:
            step = self.query(body.right, None, None)
        finally:
            self.ctes = saved
            del self._work[id(body)]
        if len(step.outputs) != len(internal):
            raise PlanError(f"recursive CTE {name!r}: the step has {len(step.outputs)} columns, "
                            f"the anchor {len(internal)}")
        ssch = step.plan.schema
        exprs = []
        for i, (_, s_int) in zip(internal, step.outputs):
            e = Col(s_int, ssch[s_int])
            if e.type != sch[i]:
                e = E.make_func("cast", [e], (sch[i],))
            exprs.append((i, e))
        plan = RecursiveUnion(Project(anchor.plan, tuple((i, Col(i, sch[i])) for i in internal)),
                              Project(step.plan, tuple(exprs)), key, bool(body.args.get("distinct")))
        return Rel(plan, list(anchor.outputs))

    def _values(self, node: exp.Values) -> Rel:
        """VALUES (..), (..): one constant row per tuple, UNION ALL, each column of one type
        (NULLs take the others' type); columns named col0, col1, ... as DuckDB names them."""
        ctx = Ctx(Scope(None))
        rows = []
        for t in node.expressions:
            items = t.expressions if isinstance(t, exp.Tuple) else [t]
            rows.append([self.expr(v, ctx) for v in items])
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise PlanError("VALUES rows have different numbers of columns")
        if any(e.columns() for r in rows for e in r):
            raise UnsupportedError("VALUES with column references")
        names = [self.fresh(f"col{i}") for i in range(width)]
        types = []
        for i in range(width):
            typed = [r[i] for r in rows if not _is_untyped_null(r[i])]
            types.append(E.common_type(typed) if typed else rows[0][i].type)
        branches = []
        for r in rows:
            exprs = []
            for n, e, t in zip(names, r, types):
                if _is_untyped_null(e):
                    e = Lit(None, t)
                elif e.type != t:
                    if (e.type.kind == "string") != (t.kind == "string"):
                        raise PlanError(f"VALUES column mixes {t} and {e.type}")
                    e = E.make_func("cast", [e], (t,))
                exprs.append((n, e))
            branches.append(Project(OneRow(), tuple(exprs)))
        plan: PlanNode = branches[0] if len(branches) == 1 else Union(tuple(branches))
        return Rel(plan, [(f"col{i}", n) for i, n in enumerate(names)])

    def _scan_source(self, info: TableInfo, alias: str) -> tuple[PlanNode, Source]:
        cols = {}
        colmap = {}
        for c in info.arrow_schema.names:
            if c in info.unsupported:
                continue
            internal = self.fresh(f"{alias}.{c}")
            cols[c.lower()] = Col(internal, info.types[c])
            colmap[internal] = c
        return Scan(info, alias, colmap), Source(alias, cols, {c.lower(): t for c, t in info.unsupported.items()})

    def _derived(self, rel: Rel, alias: str, alias_node) -> tuple[PlanNode, Source]:
        names = [u for u, _ in rel.outputs]
        col_aliases = alias_node.args.get("columns") if alias_node is not None else None
        if col_aliases:
            if len(col_aliases) > len(names):
                raise PlanError(f"{alias} has {len(names)} columns but {len(col_aliases)} names were given")
            for i, c in enumerate(col_aliases):
                names[i] = c.name
        sch = rel.plan.schema
        exprs = []
        cols = {}
        for u, (_, internal) in zip(names, rel.outputs):
            new = self.fresh(f"{alias}.{u}")
            exprs.append((new, Col(internal, sch[internal])))
            cols[u.lower()] = Col(new, sch[internal])
        return Project(rel.plan, tuple(exprs)), Source(alias, cols)

    # ------------------------------------------------------------------ SELECT

    def select(self, sel: exp.Select, parent: Scope | None, corr: Correlation | None) -> Rel:
        scope = Scope(parent)
        ctx = Ctx(scope, aliases={it.alias.lower(): it.this for it in sel.expressions if isinstance(it, exp.Alias)})
        frm = _from(sel)
        joins = sel.args.get("joins") or []
        items: list[PlanNode] = []
        specs = []
        if frm is None:
            items.append(OneRow())
            specs.append(None)
        else:
            plan0, src0 = self.table_source(frm.this, scope)
            scope.add(src0)
            items.append(plan0)
            specs.append(None)
            for j in joins:
                p, s = self.table_source(j.this, scope)
                left = list(scope.sources)
                scope.add(s)
                self._using(j, left, s, scope)
                items.append(p)
                specs.append(j)
        if sel.args.get("laterals"):
            raise UnsupportedError("LATERAL")

        # WHERE: plain conjuncts vs. subquery predicates.
        plain: list[Expr] = []
        subq: list[exp.Expression] = []
        for c in _split_and(sel.args.get("where")):
            if _contains_subquery(c):
                subq.append(c)
            else:
                plain.append(self.expr(c, ctx))
        plain = [x for c in plain for x in E.conjuncts(extract_common_or(c))]
        local_plain = []
        for c in plain:
            outer = c.columns() - scope.local
            if outer:
                if corr is None:
                    raise UnsupportedError("correlated reference outside a WHERE subquery predicate")
                self._correlate(c, scope, corr)
            else:
                if c.type.kind != "bool":
                    raise PlanError(f"WHERE needs a boolean condition, got {c.type}")
                local_plain.append(c)

        plan = self._plan_from(items, specs, local_plain, ctx)
        for c in subq:
            plan = self.subquery_predicate(c, plan, ctx, where_scope=scope, corr=corr)

        # Aggregation.
        select_items = self._expand_star(sel, scope)
        having = sel.args.get("having")
        order = _order_by_all(sel.args.get("order"), len(select_items))
        group = _group_by_all(sel.args.get("group"), select_items)
        agg_nodes = []
        for it in select_items:
            agg_nodes += _outer_aggs(it)
        if having is not None:
            agg_nodes += _outer_aggs(having)
        if order is not None:
            for o in order.expressions:
                agg_nodes += _outer_aggs(o)
        grouping_nodes = [n for it in select_items for n in _grouping_calls(it)]
        if having is not None:
            grouping_nodes += _grouping_calls(having)
        if order is not None:
            grouping_nodes += [n for o in order.expressions for n in _grouping_calls(o)]
        aggregated = bool(group) or bool(agg_nodes)
        alias_map = {}
        for it in select_items:
            if isinstance(it, exp.Alias):
                alias_map[it.alias.lower()] = it.this

        if corr is not None and corr.pairs:
            # Inner side of each correlation pair becomes an output (and a group key).
            for _, inner in corr.pairs:
                if isinstance(inner, Col):
                    corr.inner_key_cols.append(inner.name)
                else:
                    corr.inner_key_cols.append(self.fresh("corr_key"))

        post_ctx = ctx
        if aggregated:
            plan, post_ctx = self._aggregate(plan, ctx, select_items, group, agg_nodes, alias_map, corr,
                                             grouping_nodes)
            if having is not None:
                for c in _split_and(having):
                    if _contains_subquery(c):
                        plan = self.subquery_predicate(c, plan, post_ctx, where_scope=None, corr=None)
                    else:
                        plan = Filter(plan, self._post(c, post_ctx))
        elif having is not None:
            raise PlanError("HAVING without aggregation")

        # Subqueries in the SELECT list: scalar ones as a value, EXISTS / IN as a mark column.
        for it in select_items:
            plan = self._join_subqueries(it, plan, post_ctx)

        # Window functions (after grouping and HAVING), then QUALIFY on their results.
        qualify = sel.args.get("qualify")
        windows = [w for it in select_items for w in _outer_windows(it)]
        if qualify is not None:
            windows += _outer_windows(qualify)
        if order is not None:
            windows += [w for o in order.expressions for w in _outer_windows(o)]
        if windows:
            plan = self._windows(plan, windows, post_ctx, aggregated)
        if qualify is not None:
            c = self._post(qualify.this, post_ctx) if aggregated else self.expr(qualify.this, post_ctx)
            if c.type.kind != "bool":
                raise PlanError(f"QUALIFY needs a boolean condition, got {c.type}")
            plan = Filter(plan, c)

        outputs_exprs: list[tuple[str, str, Expr]] = []
        for it in select_items:
            name = it.alias_or_name if isinstance(it, (exp.Alias, exp.Column)) else it.sql(dialect="duckdb")
            e = self._post(it.this if isinstance(it, exp.Alias) else it, post_ctx) if aggregated \
                else self.expr(it.this if isinstance(it, exp.Alias) else it, post_ctx)
            outputs_exprs.append((name, self.fresh(name) if not isinstance(e, Col) else e.name, e))

        # Correlation outputs (keys and residual inputs) travel with the projection.
        extra: list[tuple[str, Expr]] = []
        if corr is not None:
            sch = plan.schema
            for (outer, inner), kname in zip(corr.pairs, corr.inner_key_cols):
                if aggregated:
                    extra.append((kname, Col(kname, sch[kname])))
                elif isinstance(inner, Col):
                    extra.append((kname, inner))
                else:
                    extra.append((kname, inner))
            for r in corr.residual:
                for cname in sorted(r.columns() & scope.local):
                    if cname in sch:
                        extra.append((cname, Col(cname, sch[cname])))

        distinct = sel.args.get("distinct")
        on_keys: list[tuple[str, Expr]] = []
        if distinct is not None and distinct.args.get("on"):
            # DISTINCT ON (k): the first row of each k in ORDER BY's order, kept by a
            # row_number() window over k; the keys travel as hidden columns.
            on = distinct.args["on"]
            for k in (on.expressions if isinstance(on, exp.Tuple) else [on]):
                e = self._post(k, post_ctx) if aggregated else self.expr(k, post_ctx)
                on_keys.append((self.fresh("distinct_on"), e))
            distinct = None
        proj_exprs = [(internal, e) for _, internal, e in outputs_exprs]
        seen = {n for n, _ in proj_exprs}
        for n, e in extra:
            if n not in seen:
                proj_exprs.append((n, e))
                seen.add(n)
        limit, offset = self._limit_offset(sel)
        hidden: list[tuple[str, Expr]] = []
        sort_keys: list[SortKey] = []
        if order is not None:
            out_by_alias = {}
            for (u, internal, e) in outputs_exprs:
                out_by_alias.setdefault(u.lower(), (internal, e))
            for o in order.expressions:
                t = o.this
                target: Expr | None = None
                if isinstance(t, exp.Literal) and not t.is_string:
                    k = int(t.this)
                    if not 1 <= k <= len(outputs_exprs):
                        raise PlanError(f"ORDER BY position {k} is not in the select list")
                    _, internal, e = outputs_exprs[k - 1]
                    target = Col(internal, e.type)
                elif isinstance(t, exp.Column) and not t.table and t.name.lower() in out_by_alias:
                    internal, e = out_by_alias[t.name.lower()]
                    if len({str(x) for (u, _, x) in outputs_exprs if u.lower() == t.name.lower()}) > 1:
                        raise UnsupportedError(f"ORDER BY {t.name}: several select-list items have that name")
                    target = Col(internal, e.type)
                else:
                    e = self._post(t, post_ctx) if aggregated else self.expr(t, post_ctx)
                    for (_, internal, oe) in outputs_exprs:
                        if oe == e:
                            target = Col(internal, e.type)
                            break
                    if target is None:
                        if distinct is not None:
                            raise PlanError("ORDER BY expressions must appear in the select list with DISTINCT")
                        hn = self.fresh("sort_key")
                        hidden.append((hn, e))
                        target = Col(hn, e.type)
                sort_keys.append(self._sort_key(o, target))
        hidden += on_keys
        plan = Project(plan, tuple(proj_exprs + [h for h in hidden if h[0] not in seen]))
        if on_keys:
            rn = self.fresh("row_number")
            plan = Window(plan, tuple(Col(n, e.type) for n, e in on_keys), tuple(sort_keys),
                          ((rn, WindowCall("row_number", ())),))
            plan = Filter(plan, E.make_compare("=", Col(rn, INT64), Lit(1, INT64)))
        if distinct is not None:
            sch = plan.schema
            plan = Aggregate(plan, tuple((n, Col(n, sch[n])) for n, _ in proj_exprs), ())
        if sort_keys:
            plan = Sort(plan, tuple(sort_keys), limit, offset)
        elif limit is not None or offset:
            plan = Limit(plan, limit, offset)
        if hidden:
            sch = plan.schema
            plan = Project(plan, tuple((n, Col(n, sch[n])) for n, _ in proj_exprs))
        return Rel(plan, [(u, internal) for u, internal, _ in outputs_exprs])

    def _expand_star(self, sel: exp.Select, scope: Scope) -> list[exp.Expression]:
        """``*`` and ``t.*`` as column references, less ``EXCLUDE (...)``, with ``REPLACE (e AS c)``."""
        out = []
        for it in sel.expressions:
            star = it if isinstance(it, exp.Star) else it.this if isinstance(it, exp.Column) else None
            if not isinstance(star, exp.Star):
                out.append(it)
                continue
            table = it.table.lower() if isinstance(it, exp.Column) else None
            excluded = {(c.table.lower() if isinstance(c, exp.Column) and c.table else None, c.name.lower())
                        for c in star.args.get("except_") or []}
            replaced = {r.alias.lower(): r for r in star.args.get("replace") or []}
            found = False
            used: set = set()
            for s in scope.sources:
                if table and s.alias != table:
                    continue
                found = True
                for cname in s.unreadable:
                    if (None, cname) not in excluded and (s.alias, cname) not in excluded:
                        s.refuse(cname)  # * cannot leave a column out silently: EXCLUDE it
                    used |= {k for k in ((None, cname), (s.alias, cname)) if k in excluded}
                for cname in s.cols:
                    if not table and (s.alias, cname) in scope.hidden:
                        continue  # a USING column: shown once, from the left side
                    hit = {k for k in ((None, cname), (s.alias, cname)) if k in excluded}
                    if hit:
                        used |= hit
                        continue
                    if cname in replaced:
                        used.add(("replace", cname))
                        out.append(replaced[cname])
                    else:
                        out.append(exp.column(cname, table=s.alias))
            if table and not found:
                raise PlanError(f"unknown table or alias {table!r} in {table}.*")
            missing = [c for c in excluded if c not in used] + \
                [(None, c) for c in replaced if ("replace", c) not in used]
            if missing:
                t, c = missing[0]
                raise PlanError(f"column {c!r} in * EXCLUDE/REPLACE is not in the FROM clause"
                                + (f" table {t!r}" if t else ""))
        return out

    # ------------------------------------------------------------------ joins

    def _plan_from(self, items, specs, conjuncts: list[Expr], ctx: Ctx) -> PlanNode:
        """Join the FROM items. Each run of inner joins (the plan so far counting as one item
        after an outer join) is ordered by ``plan_inner_joins``, with its ON conditions and
        the WHERE conjuncts it can evaluate; outer joins keep their written order.

        A WHERE conjunct moves into a run when its columns are all there and every later
        join is inner or LEFT: later joins then only drop rows or extend them with columns
        it does not read, so filtering earlier is the same. This gives the join orderer the
        selective dimension filters of a query written with JOIN ... ON (TPC-DS Q72).
        """
        for j in specs:
            kind = ((j.kind or "").upper() if j is not None else "")
            if kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL"):
                raise UnsupportedError(f"{kind} JOIN")
        sides = [((j.side or "").lower() if j is not None else "") for j in specs]
        conjuncts = list(conjuncts)
        plan = None
        k = 0
        while k < len(items):
            if sides[k]:
                conds = [x for c in self._join_conditions(specs[k], ctx) for x in E.conjuncts(c)]
                plan = self._outer_join(plan, items[k], sides[k], conds)
                k += 1
                continue
            run = [] if plan is None else [plan]
            conds = []
            while k < len(items) and not sides[k]:
                run.append(items[k])
                if specs[k] is not None:
                    conds += [x for c in self._join_conditions(specs[k], ctx) for x in E.conjuncts(c)]
                k += 1
            if all(s in ("", "left") for s in sides[k:]):
                names = set().union(*(p.schema for p in run))
                moved = [c for c in conjuncts if c.columns() and c.columns() <= names]
                conds += moved
                conjuncts = [c for c in conjuncts if not any(c is m for m in moved)]
            plan = plan_inner_joins(run, conds) if len(run) > 1 or conds else run[0]
        if conjuncts:
            plan = Filter(plan, E.and_all(conjuncts))
        return plan

    def _outer_join(self, plan: PlanNode, p: PlanNode, side: str, conds: list[Expr]) -> PlanNode:
        """One LEFT / RIGHT / FULL join in written order; a condition on the null-extended
        side alone filters that side before the join."""
        kind = {"left": "left", "right": "right", "full": "full"}[side]
        left_names = set(plan.schema)
        right_names = set(p.schema)
        lk, rk, resid = [], [], []
        for c in conds:
            cols = c.columns()
            if kind == "left" and cols and cols <= right_names:
                p = Filter(p, c)
                continue
            if kind == "right" and cols and cols <= left_names:
                plan = Filter(plan, c)
                continue
            pair = equi_pair(c, left_names, right_names)
            if pair is not None:
                lk.append(pair[0])
                rk.append(pair[1])
            else:
                resid.append(c)
        return Join(plan, p, kind, tuple(lk), tuple(rk), E.and_all(resid))

    def _join_conditions(self, j: exp.Join, ctx: Ctx) -> list[Expr]:
        on = j.args.get("on")
        out = []
        if on is not None:
            if _contains_subquery(on):
                raise UnsupportedError("subqueries in JOIN ... ON")
            out.append(self.expr(on, ctx))
        for lcol, rcol in self._using_pairs.get(id(j), []):
            out.append(E.make_compare("=", lcol, rcol))
        return out

    def _using(self, j: exp.Join, left: list[Source], right: Source, scope: Scope) -> None:
        """JOIN ... USING (a, b) and NATURAL JOIN (every name both sides have): equality of
        each named column, the pair shown once; for inner and LEFT joins, whose merged value is
        the left side's."""
        natural = _natural(j)
        if not j.args.get("using") and not natural:
            return
        side = (j.side or "").upper()
        if side in ("RIGHT", "FULL"):
            raise UnsupportedError(f"{side} JOIN with USING / NATURAL (write ON a.x = b.x)")
        if natural:
            left_names = {n for s in left for n in s.cols}
            names = [n for n in right.cols if n in left_names]
            if not names:
                raise PlanError(f"NATURAL JOIN with {right.alias!r}: no column names in common (use CROSS JOIN)")
        else:
            names = [i.name.lower() for i in j.args["using"]]
        pairs = []
        for name in names:
            hits = [s for s in left if name in s.cols]
            if name in scope.merged:
                lcol = scope.merged[name]
            elif len(hits) == 1:
                lcol = hits[0].cols[name]
            else:
                raise PlanError(f"USING column {name!r} is {'ambiguous' if hits else 'not'} on the left side")
            if name not in right.cols:
                raise PlanError(f"USING column {name!r} is not in {right.alias!r}")
            pairs.append((lcol, right.cols[name]))
            scope.merged[name] = lcol
            scope.hidden.add((right.alias, name))
        self._using_pairs[id(j)] = pairs

    # ------------------------------------------------------------------ aggregation

    def _grouping_set_union(self, plan, keys, aggs, set_keys, grouping_nodes, ctx, agg_cols) -> PlanNode:
        """ROLLUP / CUBE / GROUPING SETS: one aggregation per grouping set over the input
        (computed once, shared), the keys outside the set as NULL, UNION ALL. GROUPING(...)
        is a constant of each branch: bit j (from the last argument) set when argument j is
        not grouped in that set."""
        calls = []
        for node in grouping_nodes:
            idx = []
            for a in node.expressions:
                e = self.expr(a, ctx)
                match = [i for i, (_, k) in enumerate(keys) if k == e]
                if not match:
                    raise PlanError(f"GROUPING argument {a.sql()} is not a GROUP BY key")
                idx.append(match[0])
            name = self.fresh(node.sql(dialect="duckdb"))
            calls.append((name, idx))
            agg_cols[id(node)] = Col(name, INT64)
        shared = Shared(plan, self.fresh("grouping sets input"))
        branches = []
        for members in set_keys:
            sub = tuple(k for i, k in enumerate(keys) if i in members)
            agg = Aggregate(shared, sub, tuple(aggs))
            exprs = [(n, Col(n, e.type) if i in members else Lit(None, e.type)) for i, (n, e) in enumerate(keys)]
            exprs += [(n, Col(n, a.type)) for n, a in aggs]
            for name, idx in calls:
                bits = 0
                for i in idx:
                    bits = bits * 2 + (0 if i in members else 1)
                exprs.append((name, Lit(bits, INT64)))
            branches.append(Project(agg, tuple(exprs)))
        return branches[0] if len(branches) == 1 else Union(tuple(branches))

    def _aggregate(self, plan, ctx: Ctx, select_items, group, agg_nodes, alias_map, corr, grouping_nodes=()):
        keys: list[tuple[str, Expr]] = []
        group_map: dict[Expr, Col] = {}
        sets_ast = _grouping_sets(group)
        set_keys: list[set[int]] = []
        if group is not None:
            if group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets"):
                raise UnsupportedError("ROLLUP/CUBE/GROUPING SETS")
            position: dict[int, int] = {}  # id(AST key) -> index in keys
            for g0 in _set_members(group):
                g = g0
                if isinstance(g, exp.Literal) and not g.is_string:
                    k = int(g.this)
                    if not 1 <= k <= len(select_items):
                        raise PlanError(f"GROUP BY position {k} is not in the select list")
                    it = select_items[k - 1]
                    g = it.this if isinstance(it, exp.Alias) else it
                try:
                    e = self.expr(g, ctx)
                except (PlanError, UnsupportedError):
                    if isinstance(g, exp.Column) and not g.table and g.name.lower() in alias_map:
                        e = self.expr(alias_map[g.name.lower()], ctx)
                    else:
                        raise
                if e in group_map:
                    position[id(g0)] = [n for n, _ in keys].index(group_map[e].name)
                    continue
                name = e.name if isinstance(e, Col) else self.fresh(g.sql(dialect="duckdb"))
                position[id(g0)] = len(keys)
                keys.append((name, e))
                group_map[e] = Col(name, e.type)
            if sets_ast is not None:
                set_keys = [{position[id(g)] for g in s} for s in sets_ast]
        if set_keys and corr is not None and corr.pairs:
            raise UnsupportedError("correlated subquery with ROLLUP / CUBE / GROUPING SETS")
        if corr is not None:
            for (_, inner), kname in zip(corr.pairs, corr.inner_key_cols):
                if inner not in group_map:
                    keys.append((kname, inner))
                    group_map[inner] = Col(kname, inner.type)
                elif group_map[inner].name != kname:
                    keys.append((kname, inner))  # already grouped under another name: alias it
        aggs: list[tuple[str, AggCall]] = []
        seen: dict[AggCall, Col] = {}
        agg_cols: dict[int, Col] = {}
        for node in agg_nodes:
            if isinstance(node, HOLISTIC) or (isinstance(node, exp.Filter) and isinstance(node.this, HOLISTIC)):
                plan, call = self._holistic(plan, node, keys, bool(set_keys), ctx)
            else:
                call = self._agg_call(node, ctx)
            if call not in seen:
                name = self.fresh(node.sql(dialect="duckdb"))
                aggs.append((name, call))
                seen[call] = Col(name, call.type)
            agg_cols[id(node)] = seen[call]
        if set_keys:
            out = self._grouping_set_union(plan, keys, aggs, set_keys, grouping_nodes, ctx, agg_cols)
        else:
            out = Aggregate(plan, tuple(keys), tuple(aggs))
            if grouping_nodes:  # without grouping sets every key is grouped: GROUPING is 0
                sch = out.schema
                zeros = []
                for node in grouping_nodes:
                    agg_cols[id(node)] = Col(self.fresh(node.sql(dialect="duckdb")), INT64)
                    zeros.append((agg_cols[id(node)].name, Lit(0, INT64)))
                out = Project(out, tuple((n, Col(n, t)) for n, t in sch.items()) + tuple(zeros))
        post = Ctx(ctx.scope, aggs=agg_cols, group_map=group_map, subs=dict(ctx.subs),
                   aliases=dict(alias_map))
        return out, post

    def _windows(self, plan: PlanNode, nodes: list[exp.Window], ctx: Ctx, aggregated: bool) -> PlanNode:
        """Window nodes over ``plan``, one per distinct (PARTITION BY, ORDER BY); each call's
        result is bound to its AST node in ``ctx.subs``. Inputs that are not plain columns
        are computed first by one Project."""
        def tr(n):
            return self._post(n, ctx) if aggregated else self.expr(n, ctx)
        computed: dict[Expr, Col] = {}

        def column(e: Expr) -> Expr:
            if isinstance(e, (Col, Lit)):
                return e
            if e not in computed:
                computed[e] = Col(self.fresh("window_input"), e.type)
            return computed[e]
        specs: dict[tuple, list[tuple[str, WindowCall]]] = {}
        for w in nodes:
            if id(w) in ctx.subs:
                continue
            if not isinstance(w.this, tuple(WINDOW_FUNCS) + tuple(AGG_FUNCS)):
                raise UnsupportedError(f"{construct_name(w.this)} as a window function")
            part = tuple(column(tr(p)) for p in w.args.get("partition_by") or [])
            order = w.args.get("order")
            keys = tuple(self._sort_key(o, column(tr(o.this))) for o in (order.expressions if order else []))
            call = self._window_call(w, tr, column, keys)
            name = self.fresh(w.sql(dialect="duckdb"))
            specs.setdefault((part, keys), []).append((name, call))
            ctx.subs[id(w)] = Col(name, call.type)
        if computed:
            sch = plan.schema
            plan = Project(plan, tuple((n, Col(n, t)) for n, t in sch.items()) +
                           tuple((c.name, e) for e, c in computed.items()))
        for (part, keys), calls in specs.items():
            plan = Window(plan, part, keys, tuple(calls))
        return plan

    def _window_call(self, w: exp.Window, tr, column, keys: tuple[SortKey, ...]) -> WindowCall:
        f = w.this
        frame = self._frame(w.args.get("spec"), keys)
        if isinstance(f, tuple(AGG_FUNCS)):
            func = AGG_FUNCS[type(f)]
            if func not in WINDOW_AGGREGATES:
                raise UnsupportedError(f"{func.upper()} over a window")
            arg = f.this
            if isinstance(arg, exp.Distinct):
                raise UnsupportedError("DISTINCT in a window aggregate")
            if func == "count" and (arg is None or isinstance(arg, exp.Star)):
                return WindowCall("count_star", (), (), frame)
            e = tr(arg)
            if func in ("sum", "avg") and not (e.type.is_numeric or e.type.kind == "bool"):
                raise PlanError(f"{func.upper()} needs a number, got {e.type} in {f.sql()}")
            if func in ("min", "max") and e.type.kind == "string":
                raise UnsupportedError(f"{func.upper()} of strings over a window")
            return WindowCall(func, (column(e),), (), frame)
        func = WINDOW_FUNCS[type(f)]
        if func in ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist"):
            return WindowCall(func, (), (), frame)
        if func == "ntile":
            return WindowCall(func, (), (self._constant_int(f.this, "NTILE", 1),), frame)
        value = column(tr(f.this))
        if func in ("lag", "lead"):
            offset = self._constant_int(f.args.get("offset"), func.upper(), 0) if f.args.get("offset") else 1
            args: tuple[Expr, ...] = (value,)
            default = f.args.get("default")
            if default is not None and not isinstance(default, exp.Null):
                d = tr(default)
                if d.type != value.type:
                    if (d.type.kind == "string") != (value.type.kind == "string"):
                        raise PlanError(f"{func.upper()} default {d.type} does not match {value.type}")
                    d = E.make_func("cast", [d], (value.type,))
                args = (value, column(d))
            return WindowCall(func, args, (offset,), frame)
        if func == "nth_value":
            return WindowCall(func, (value,), (self._constant_int(f.args.get("offset"), "NTH_VALUE", 1),), frame)
        return WindowCall(func, (value,), (), frame)

    @staticmethod
    def _constant_int(node, what: str, least: int) -> int:
        if not (isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()):
            raise UnsupportedError(f"{what} with an argument that is not an integer constant")
        v = int(node.this)
        if v < least:
            raise PlanError(f"{what} needs an argument of at least {least}, got {v}")
        return v

    @staticmethod
    def _frame(spec, keys: tuple[SortKey, ...]) -> tuple:
        """(rows|range|groups, start, end) of a window frame; the SQL default without one: the
        whole partition, or with ORDER BY from its start to the current row's last peer.

        Each bound is (unbounded|preceding|current|following, offset). ROWS and GROUPS
        offsets count rows and peer groups (integer constants); a RANGE offset is a distance
        in the one ORDER BY key's units (a number; for a date key days or an INTERVAL of
        days), kept as a float in the key's stored units (a decimal key's scaled integers)."""
        if spec is None:
            return ("range", ("unbounded", 0), ("current", 0) if keys else ("unbounded", 0))
        kind = str(spec.args["kind"]).lower()

        def offset(v) -> float | int:
            if kind != "range":
                if not (isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit()):
                    raise UnsupportedError("window frame offsets that are not integer constants")
                return int(v.this)
            if len(keys) != 1:
                raise PlanError("a RANGE frame with an offset needs exactly one ORDER BY expression")
            kt = keys[0].expr.type
            if not (kt.is_numeric or kt.kind == "date"):
                raise PlanError(f"a RANGE frame with an offset needs a numeric or date ORDER BY, got {kt}")
            if isinstance(v, exp.Interval) and kt.kind == "date":
                unit = (v.args.get("unit").name if v.args.get("unit") is not None else "").lower().rstrip("s")
                text = v.this.name if isinstance(v.this, exp.Literal) else ""
                parts = text.split()
                if len(parts) == 2 and not unit:
                    text, unit = parts[0], parts[1].lower().rstrip("s")
                if unit not in ("day", "week") or not text.isdigit():
                    raise UnsupportedError("RANGE frame offsets other than whole days or weeks")
                return int(text) * (7 if unit == "week" else 1)
            if not (isinstance(v, exp.Literal) and not v.is_string):
                raise UnsupportedError("RANGE frame offsets that are not numeric constants")
            x = float(v.this)
            if kt.kind == "decimal":
                x *= 10 ** kt.scale
            return x

        def bound(v, side, is_start: bool) -> tuple[str, float | int]:
            side = str(side or "").lower()
            if v is None or (isinstance(v, str) and v.upper() == "CURRENT ROW"):
                return ("current", 0)
            if isinstance(v, str) and v.upper() == "UNBOUNDED":
                if (side == "following") == is_start:
                    raise PlanError(f"a window frame cannot {'start' if is_start else 'end'} at UNBOUNDED "
                                    f"{side.upper()}")
                return ("unbounded", 0)
            return (side, offset(v))
        start = bound(spec.args.get("start"), spec.args.get("start_side"), True)
        end = bound(spec.args.get("end"), spec.args.get("end_side"), False) if spec.args.get("end") else ("current", 0)
        rank = {"preceding": 0, "current": 1, "following": 2}
        if start[0] in rank and end[0] in rank and rank[start[0]] > rank[end[0]]:
            raise PlanError("a window frame cannot end before its start row")
        return (kind, start, end)

    def _holistic(self, plan, node, keys, grouping_sets: bool, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        """Aggregates that need a group's rows in an order: a Window over the rows partitioned
        by the group keys computes the group's result on every row, and the aggregation takes
        that per-group constant (its MIN; a group with no rows has none, so NULL as in SQL).

        - MEDIAN / QUANTILE_CONT / QUANTILE_DISC / PERCENTILE_* WITHIN GROUP: rows sorted by
          the argument, NULLs last; the quantile picked from the non-NULL count.
        - ARG_MIN / ARG_MAX (MIN_BY / MAX_BY): rows with a NULL value or key last, then by the
          key; the first row's value.
        - STRING_AGG / LISTAGG / GROUP_CONCAT: rows in the ORDER BY given (else as they come),
          the non-NULL values joined by the separator (DISTINCT: each value once).
        """
        name = node.sql(dialect="duckdb")
        what = name.split("(")[0].upper()
        if isinstance(node, exp.Filter):
            raise UnsupportedError(f"FILTER on {what}")
        if grouping_sets:
            raise UnsupportedError(f"{what} with ROLLUP / CUBE / GROUPING SETS")
        args = list(node.this.iter_expressions()) + [node.expression] if isinstance(node, exp.WithinGroup) \
            else list(node.iter_expressions())
        if any(_outer_aggs(a) for a in args):
            raise PlanError("aggregate functions cannot be nested")
        part = tuple(k for _, k in keys)
        wname = self.fresh(name)
        if isinstance(node, (exp.ArgMin, exp.ArgMax)):
            value, key = self.expr(node.this, ctx), self.expr(node.expression, ctx)
            if isinstance(node.this, exp.Distinct):
                raise UnsupportedError(f"DISTINCT in {what}")
            missing = E.make_bool("or", [E.make_func("is_null", [value]), E.make_func("is_null", [key])])
            order = (SortKey(missing, True, False), SortKey(key, isinstance(node, exp.ArgMin), False))
            # the first row after sorting; NULL when every row misses its value or key
            value = E.make_func("case", [missing, Lit(None, value.type), value])
            call = WindowCall("first_value", (value,), (), ("rows", ("unbounded", 0), ("unbounded", 0)))
            plan = Window(plan, part, order, ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        if isinstance(node, exp.GroupConcat):
            return self._string_agg(plan, node, part, wname, ctx)
        distinct_arg = node.this.this if isinstance(node, exp.WithinGroup) else node.this
        if isinstance(distinct_arg, exp.Distinct):
            raise UnsupportedError(f"DISTINCT in {what}")
        if isinstance(node, exp.WithinGroup):
            inner, order = node.this, node.expression
            if not isinstance(inner, (exp.PercentileCont, exp.PercentileDisc)) or inner.args.get("expression"):
                raise UnsupportedError(f"{construct_name(inner)} WITHIN GROUP")
            if not isinstance(order, exp.Order) or len(order.expressions) != 1 or order.this is not None:
                raise UnsupportedError("WITHIN GROUP with other than one ORDER BY expression")
            if order.expressions[0].args.get("desc"):
                raise UnsupportedError("WITHIN GROUP (ORDER BY ... DESC)")
            cont = isinstance(inner, exp.PercentileCont)
            arg, q_ast = order.expressions[0].this, inner.this
        else:
            cont = isinstance(node, (exp.Median, exp.PercentileCont))
            arg = node.this
            q_ast = None if isinstance(node, exp.Median) else node.args.get(
                "quantile" if isinstance(node, exp.Quantile) else "expression")
        q = 0.5
        if q_ast is not None:
            qe = self.expr(q_ast, ctx)
            if not isinstance(qe, Lit) or qe.value is None or not qe.type.is_numeric:
                raise UnsupportedError(f"a quantile that is not one constant number in {name}")
            q = float(qe.value) / (10 ** qe.type.scale if qe.type.kind == "decimal" else 1)
            if not 0 <= q <= 1:
                raise PlanError(f"the quantile must be between 0 and 1 in {name}")
        e = self.expr(arg, ctx)
        if cont and not e.type.is_numeric:
            raise UnsupportedError(f"{what} of {e.type}")
        call = WindowCall("quantile_cont" if cont else "quantile_disc", (e,), (q,))
        plan = Window(plan, part, (SortKey(e, True, False),), ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _string_agg(self, plan, node: exp.GroupConcat, part, wname: str, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        arg, order = node.this, ()
        if isinstance(arg, exp.Order):
            order = tuple(self._sort_key(o, self.expr(o.this, ctx)) for o in arg.expressions)
            arg = arg.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise UnsupportedError("DISTINCT aggregates over several arguments")
            arg = arg.expressions[0]
        e = raw = self.expr(arg, ctx)
        if e.type.kind != "string":
            e = E.make_func("cast", [e], (STRING,))
        sep = node.args.get("separator")
        sep_v = ","
        if sep is not None:
            se = self.expr(sep, ctx)
            if not isinstance(se, Lit) or (se.value is not None and se.type.kind != "string"):
                raise UnsupportedError("STRING_AGG with a separator that is not a string constant")
            sep_v = se.value
        if distinct:
            if order and not all(k.expr in (e, raw) for k in order):
                raise UnsupportedError("STRING_AGG(DISTINCT x ORDER BY another expression)")
            order = order or (SortKey(e, True, False),)
        if sep_v is None:
            raise UnsupportedError("STRING_AGG with a NULL separator")
        call = WindowCall("string_agg", (e,), (sep_v, distinct))
        plan = Window(plan, part, order, ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _agg_call(self, node, ctx: Ctx) -> AggCall:
        if isinstance(node, exp.Filter):
            # agg(x) FILTER (WHERE c) is agg(CASE WHEN c THEN x END): rows failing c count as NULL.
            call = self._agg_call(node.this, ctx)
            if _outer_aggs(node.expression):
                raise PlanError("aggregate functions cannot be nested")
            cond = self.expr(node.expression.this, ctx)
            if cond.type.kind != "bool":
                raise PlanError(f"FILTER needs a boolean condition, got {cond.type}")
            if call.func == "count_star":
                return AggCall("count", E.make_func("case", [cond, Lit(1, INT64), Lit(None, NULL_TYPE)]))
            return AggCall(call.func, E.make_func("case", [cond, call.arg, Lit(None, NULL_TYPE)]), call.distinct)
        func = AGG_FUNCS[type(node)]
        arg = node.this
        distinct = False
        if isinstance(arg, exp.Distinct):
            distinct = True
            if len(arg.expressions) != 1:
                raise UnsupportedError("DISTINCT aggregates over several arguments")
            arg = arg.expressions[0]
        if func == "count" and (arg is None or isinstance(arg, exp.Star)):
            return AggCall("count_star", None)
        if _outer_aggs(arg):
            raise PlanError("aggregate functions cannot be nested")
        e = self.expr(arg, ctx)
        if func in _NUMERIC_AGGS and not (e.type.is_numeric or e.type.kind == "bool"):
            raise PlanError(f"{func.upper()} needs a number, got {e.type} in {node.sql()}")
        if isinstance(node, _BOOL_AGGS) and e.type.kind != "bool":
            raise PlanError(f"{node.sql('duckdb')} needs a boolean, got {e.type}")
        return AggCall(func, e, distinct)

    def _post(self, node: exp.Expression, ctx: Ctx) -> Expr:
        """Translate an expression above an aggregation."""
        e = self.expr(node, ctx)
        e = _replace_subexprs(e, ctx.group_map or {})
        allowed = {c.name for c in (ctx.group_map or {}).values()} | \
            {c.name for c in (ctx.aggs or {}).values()} | {c.name for c in ctx.subs.values()}
        bad = e.columns() - allowed
        if bad:
            raise PlanError(f"column {sorted(bad)[0]} must appear in GROUP BY or be used in an aggregate")
        return e

    # ------------------------------------------------------------------ subqueries

    def _correlate(self, c: Expr, scope: Scope, corr: Correlation) -> None:
        if isinstance(c, Func) and c.op == "=":
            a, b = c.args
            ao, bo = a.columns() - scope.local, b.columns() - scope.local
            if ao and not (a.columns() & scope.local) and not bo and b.columns():
                corr.pairs.append((a, b))
                return
            if bo and not (b.columns() & scope.local) and not ao and a.columns():
                corr.pairs.append((b, a))
                return
        corr.residual.append(c)

    def subquery_predicate(self, node: exp.Expression, plan: PlanNode, ctx: Ctx,
                           where_scope: Scope | None, corr: Correlation | None) -> PlanNode:
        negate = False
        inner = node
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Not):
            negate = True
            inner = inner.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
        if isinstance(inner, exp.Exists):
            c = Correlation()
            rel = self.query(inner.this, ctx.scope, c)
            return self._semi(plan, rel, c, [], negate, null_aware=False)
        if isinstance(inner, exp.In) and inner.args.get("query") is not None:
            c = Correlation()
            lhs = self.expr(inner.this, ctx) if ctx.aggs is None else self._post(inner.this, ctx)
            rel = self.query(inner.args["query"].this if isinstance(inner.args["query"], exp.Subquery)
                             else inner.args["query"], ctx.scope, c)
            if len(rel.outputs) != 1:
                raise PlanError("subquery in IN must return one column")
            return self._semi(plan, rel, c, [lhs], negate, null_aware=negate)
        # A predicate with subqueries inside: join each (scalar ones as a value, EXISTS / IN
        # as a mark column), then filter.
        plan = self._join_subqueries(node, plan, ctx)
        e = self._post(node, ctx) if ctx.aggs is not None else self.expr(node, ctx)
        if where_scope is not None and corr is not None and (e.columns() - where_scope.local - {c.name for c in ctx.subs.values()}):
            self._correlate(e, where_scope, corr)
            return plan
        return Filter(plan, e)

    def _semi(self, plan, rel: Rel, c: Correlation, lhs: list[Expr], negate: bool, null_aware: bool):
        sch = rel.plan.schema
        lk = [o for o, _ in c.pairs] + lhs
        rk = [Col(k, sch[k]) for k in c.inner_key_cols]
        if lhs:
            out = rel.outputs[0][1]
            rk.append(Col(out, sch[out]))
            t1, t2 = lk[-1].type, rk[-1].type
            if (t1.kind == "string") != (t2.kind == "string"):
                raise PlanError(f"IN compares {t1} with {t2}")
        resid = E.and_all(c.residual)
        return Join(plan, rel.plan, "anti" if negate else "semi", tuple(lk), tuple(rk), resid,
                    null_aware=null_aware)

    def _join_subqueries(self, node: exp.Expression, plan: PlanNode, ctx: Ctx) -> PlanNode:
        """Join the subqueries of ``node`` at its own level to ``plan``: scalar ones as a value
        column, EXISTS / IN as a mark column (each registered in ``ctx.subs``)."""
        own = [n for n in _level_nodes(node) if id(n) not in ctx.subs]
        for sq in own:
            if isinstance(sq, exp.Subquery) and sq.parent is not None \
                    and not isinstance(sq.parent, (exp.From, exp.Join)) \
                    and not (isinstance(sq.parent, exp.In) and sq.arg_key == "query"):
                plan = self._scalar_subquery(sq, plan, ctx)
        for n in own:
            if isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query") is not None):
                plan = self._mark_join(n, plan, ctx)
        return plan

    def _mark_join(self, n: exp.Exists | exp.In, plan: PlanNode, ctx: Ctx) -> PlanNode:
        """EXISTS / IN (subquery) inside OR or another expression: every row of ``plan`` with a
        boolean mark column (a matching subquery row exists; NULL where IN says unknown)."""
        c = Correlation()
        if isinstance(n, exp.Exists):
            rel = self.query(n.this, ctx.scope, c)
            lhs, null_aware = [], False
        else:
            lhs = [self.expr(n.this, ctx) if ctx.aggs is None else self._post(n.this, ctx)]
            q = n.args["query"]
            rel = self.query(q.this if isinstance(q, exp.Subquery) else q, ctx.scope, c)
            if len(rel.outputs) != 1:
                raise PlanError("subquery in IN must return one column")
            if c.pairs or c.residual:
                # NULL-awareness would have to be per correlated group.
                raise UnsupportedError("a correlated IN (subquery) inside OR or another expression")
            null_aware = True
        join = self._semi(plan, rel, c, lhs, False, null_aware)
        name = self.fresh("mark")
        ctx.subs[id(n)] = Col(name, BOOL)
        return replace(join, kind="mark", mark=name)

    def _scalar_subquery(self, sq: exp.Subquery, plan: PlanNode, ctx: Ctx) -> PlanNode:
        c = Correlation()
        rel = self.query(sq.this, ctx.scope, c)
        if len(rel.outputs) != 1:
            raise PlanError("a scalar subquery must return one column")
        sch = rel.plan.schema
        vname = rel.outputs[0][1]
        value = Col(vname, sch[vname])
        if c.residual:
            raise UnsupportedError("correlated scalar subquery with a non-equality correlation")
        if c.pairs:
            body = sq.this
            if not any(_outer_aggs(x) for x in body.expressions) or body.args.get("group"):
                raise UnsupportedError("correlated scalar subquery that is not a plain aggregate")
            rk = tuple(Col(k, sch[k]) for k in c.inner_key_cols)
            plan = Join(plan, rel.plan, "left", tuple(o for o, _ in c.pairs), rk)
            sel_items = body.expressions
            first = sel_items[0].this if isinstance(sel_items[0], exp.Alias) else sel_items[0]
            if isinstance(first, exp.Count):
                # COUNT over no matching rows is 0, not NULL.
                vname2 = self.fresh(vname + "_or_0")
                keep = tuple((n, Col(n, t)) for n, t in plan.schema.items())
                plan = Project(plan, keep + ((vname2, Func("coalesce", (value, Lit(0, INT64)), INT64)),))
                value = Col(vname2, INT64)
        else:
            plan = Join(plan, rel.plan, "cross", single_row=True)
        ctx.subs[id(sq)] = value
        return plan

    # ------------------------------------------------------------------ expressions

    def expr(self, node: exp.Expression, ctx: Ctx) -> Expr:
        if ctx.aggs is not None and id(node) in ctx.aggs:
            return ctx.aggs[id(node)]
        if id(node) in ctx.subs:
            return ctx.subs[id(node)]
        fn = getattr(self, f"_x_{type(node).__name__.lower()}", None)
        if fn is None:
            if isinstance(node, tuple(AGG_FUNCS)):
                if ctx.aggs is None:
                    raise PlanError(f"aggregate {node.sql(dialect='duckdb')} is not allowed here")
            if isinstance(node, exp.Var):
                if node.name.upper() == "ALL" and isinstance(node.parent, exp.Ordered):
                    raise UnsupportedError("ORDER BY ALL")
                raise UnsupportedError(f"keyword {node.name.upper()} in an expression")
            if isinstance(node, exp.Star):
                raise PlanError("* is only allowed in the select list or COUNT(*)")
            raise UnsupportedError(f"{construct_name(node)} in this position")
        return fn(node, ctx)

    def _x_paren(self, n, ctx):
        return self.expr(n.this, ctx)

    def _x_alias(self, n, ctx):
        return self.expr(n.this, ctx)

    def _x_column(self, n: exp.Column, ctx):
        if isinstance(n.this, exp.Star):
            raise PlanError("* is only allowed in the select list or COUNT(*)")
        try:
            return ctx.scope.resolve(n.table or None, n.name)
        except PlanError:
            # As in DuckDB, a name that is no column may be an alias of the select list (WHERE x > 1,
            # HAVING c > 4, select a + 1 as x, x * 2): translate the aliased expression in its place.
            name = n.name.lower()
            if ctx.aliases is None or n.table or name not in ctx.aliases or name in self._expanding:
                raise
        self._expanding.add(name)
        try:
            return self.expr(ctx.aliases[name], ctx)
        finally:
            self._expanding.discard(name)

    def _x_literal(self, n: exp.Literal, ctx):
        return literal(n)

    def _x_null(self, n, ctx):
        return Lit(None, NULL_TYPE)

    def _x_boolean(self, n, ctx):
        return Lit(bool(n.this), BOOL)

    def _x_neg(self, n, ctx):
        a = self.expr(n.this, ctx)
        return E.make_func("neg", [a])

    def _binary(self, op, n, ctx):
        a = self.expr(n.this, ctx)
        b_node = n.expression
        if isinstance(b_node, exp.Interval) and op in ("+", "-"):
            return self._interval(a, b_node, -1 if op == "-" else 1)
        if isinstance(n.this, exp.Interval) and op == "+":
            return self._interval(self.expr(b_node, ctx), n.this, 1)
        b = self.expr(b_node, ctx)
        if op in E.COMPARE:
            a, b = _coerce_compare(a, b)
            return E.make_compare(op, a, b)
        return E.make_arith(op, a, b)

    def _interval(self, a: Expr, iv: exp.Interval, sign: int) -> Expr:
        if a.type.kind != "date":
            raise PlanError(f"interval arithmetic needs a date, got {a.type}")
        qty = iv.this
        unit = iv.args.get("unit")
        unit_s = (unit.name if unit is not None else "").lower()
        text = qty.name if isinstance(qty, exp.Literal) else None
        if text is None:
            raise UnsupportedError("INTERVAL with a non-constant amount")
        parts = text.split()
        if len(parts) == 2 and not unit_s:
            text, unit_s = parts[0], parts[1].lower()
        try:
            k = int(text)
        except ValueError:
            raise PlanError(f"bad interval amount {text!r}") from None
        unit_s = unit_s.rstrip("s")
        if unit_s == "day":
            return E.make_arith("+", a, Lit(sign * k, INT32))
        if unit_s == "week":
            return E.make_arith("+", a, Lit(sign * 7 * k, INT32))
        if unit_s in ("month", "year", "quarter"):
            months = k * {"month": 1, "year": 12, "quarter": 3}[unit_s] * sign
            return E.make_func("add_months", [a], (months,))
        raise UnsupportedError(f"INTERVAL unit {unit_s!r}")

    def _x_add(self, n, ctx):
        return self._binary("+", n, ctx)

    def _x_sub(self, n, ctx):
        return self._binary("-", n, ctx)

    def _x_mul(self, n, ctx):
        return self._binary("*", n, ctx)

    def _x_div(self, n, ctx):
        return self._binary("/", n, ctx)

    def _x_mod(self, n, ctx):
        return self._binary("%", n, ctx)

    def _x_eq(self, n, ctx):
        return self._binary("=", n, ctx)

    def _x_neq(self, n, ctx):
        return self._binary("<>", n, ctx)

    def _x_lt(self, n, ctx):
        return self._binary("<", n, ctx)

    def _x_lte(self, n, ctx):
        return self._binary("<=", n, ctx)

    def _x_gt(self, n, ctx):
        return self._binary(">", n, ctx)

    def _x_gte(self, n, ctx):
        return self._binary(">=", n, ctx)

    def _x_and(self, n, ctx):
        return E.make_bool("and", [self.expr(x, ctx) for x in _split_and(n)])

    def _x_or(self, n, ctx):
        return E.make_bool("or", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    def _x_not(self, n, ctx):
        return E.make_not(self.expr(n.this, ctx))

    def _x_between(self, n, ctx):
        a = self.expr(n.this, ctx)
        lo = self.expr(n.args["low"], ctx)
        hi = self.expr(n.args["high"], ctx)
        a1, lo = _coerce_compare(a, lo)
        a2, hi = _coerce_compare(a, hi)
        return E.make_bool("and", [E.make_compare(">=", a1, lo), E.make_compare("<=", a2, hi)])

    def _x_is(self, n, ctx):
        a = self.expr(n.this, ctx)
        if isinstance(n.expression, exp.Null):
            return E.make_func("is_null", [a])
        raise UnsupportedError(f"IS {n.expression.sql()}")

    def _x_in(self, n, ctx):
        if n.args.get("query") is not None:
            raise UnsupportedError("IN (subquery) inside an expression")
        a = self.expr(n.this, ctx)
        vals = [self.expr(v, ctx) for v in n.expressions]
        if all(isinstance(v, Lit) for v in vals):
            conv = []
            for v in vals:
                _, v2 = _coerce_compare(a, v)
                if v2.value is not None:
                    E.make_compare("=", a, v2)  # type check
                rep = _lit_in_repr(v2, a.type)
                if rep is not _NEVER_EQUAL:  # e.g. 2.5 in a list compared with integers
                    conv.append(rep)
            if not conv:  # x IN (2.5) over integers: FALSE, or NULL where x is NULL
                return E.make_func("case", [E.make_func("is_null", [a]), Lit(None, BOOL), Lit(False, BOOL)])
            return E.make_func("in", [a], (tuple(conv),))
        return E.make_bool("or", [E.make_compare("=", *_coerce_compare(a, v)) for v in vals])

    def _x_like(self, n, ctx):
        return self._like(n, ctx, "like")

    def _x_ilike(self, n, ctx):
        return self._like(n, ctx, "ilike")

    def _like(self, n, ctx, op, escape: str | None = None):
        a = self.expr(n.this, ctx)
        pat = n.expression
        if not (isinstance(pat, exp.Literal) and pat.is_string):
            raise UnsupportedError("LIKE with a non-constant pattern")
        op = ("not_" if n.args.get("negate") else "") + op
        return E.make_func(op, [a], (like_pattern(pat.this, escape),))

    def _x_escape(self, n, ctx):
        like = n.this
        esc = n.expression
        if not isinstance(like, (exp.Like, exp.ILike)):
            raise UnsupportedError(f"ESCAPE with {construct_name(like)}")
        if not (isinstance(esc, exp.Literal) and esc.is_string and len(esc.this) <= 1):
            raise PlanError("ESCAPE needs a constant string of at most one character")
        return self._like(like, ctx, "ilike" if isinstance(like, exp.ILike) else "like", esc.this or None)

    def _x_case(self, n, ctx):
        args: list[Expr] = []
        base = n.this
        base_e = self.expr(base, ctx) if base is not None else None
        for i in n.args.get("ifs") or []:
            cond = self.expr(i.this, ctx)
            if base_e is not None:
                cond = E.make_compare("=", *_coerce_compare(base_e, cond))
            if cond.type.kind != "bool":
                raise PlanError(f"CASE WHEN needs a boolean condition, got {cond.type}")
            args += [cond, self.expr(i.args["true"], ctx)]
        default = n.args.get("default")
        args.append(self.expr(default, ctx) if default is not None else Lit(None, NULL_TYPE))
        return E.make_func("case", args)

    def _x_if(self, n, ctx):
        cond = self.expr(n.this, ctx)
        f = n.args.get("false")
        return E.make_func("case", [cond, self.expr(n.args["true"], ctx),
                                    self.expr(f, ctx) if f is not None else Lit(None, NULL_TYPE)])

    def _x_coalesce(self, n, ctx):
        args = [self.expr(n.this, ctx)] + [self.expr(x, ctx) for x in n.expressions]
        return E.make_func("coalesce", args)

    # ---- string functions of constant parameters (kernels/strings.py)

    def _string_fn(self, n, ctx, name: str, *params) -> Expr:
        return E.make_func("string_fn", [self.expr(n.this, ctx)], (name, *params))

    def _x_startswith(self, n, ctx):
        return self._string_fn(n, ctx, "starts_with", _const_str(n.expression, "STARTS_WITH"))

    def _x_endswith(self, n, ctx):
        return self._string_fn(n, ctx, "ends_with", _const_str(n.expression, "ENDS_WITH"))

    def _x_contains(self, n, ctx):
        return self._string_fn(n, ctx, "contains", _const_str(n.expression, "CONTAINS"))

    def _x_strposition(self, n, ctx):
        return self._string_fn(n, ctx, "strpos", _const_str(n.args["substr"], "STRPOS"))

    def _x_replace(self, n, ctx):
        if n.args.get("replacement") is None:
            raise PlanError("REPLACE needs a string, a pattern and a replacement")
        return self._string_fn(n, ctx, "replace", _const_str(n.expression, "REPLACE"),
                               _const_str(n.args["replacement"], "REPLACE"))

    def _x_splitpart(self, n, ctx):
        sep = _const_str(n.args.get("delimiter"), "SPLIT_PART")
        index = _const_int(n.args.get("part_index"), "SPLIT_PART")
        if sep == "" or index == 0:
            raise UnsupportedError("SPLIT_PART with an empty separator or index 0")
        return self._string_fn(n, ctx, "split_part", sep, index)

    def _x_pad(self, n, ctx):
        name = "lpad" if n.args.get("is_left") else "rpad"
        width = _const_int(n.expression, name.upper())
        fill = _const_str(n.args.get("fill_pattern"), name.upper()) if n.args.get("fill_pattern") else " "
        if len(fill) != 1 or width < 0:
            raise UnsupportedError(f"{name.upper()} with a fill that is not one character, or a negative width")
        return self._string_fn(n, ctx, name, width, fill)

    def _x_regexplike(self, n, ctx):
        return self._string_fn(n, ctx, "regexp_matches", _const_str(n.expression, "REGEXP_MATCHES"))

    def _x_regexpreplace(self, n, ctx):
        mods = _const_str(n.args["modifiers"], "REGEXP_REPLACE") if n.args.get("modifiers") else ""
        if set(mods) - {"g"}:
            raise UnsupportedError(f"REGEXP_REPLACE options {mods!r} (only 'g')")
        if n.args.get("replacement") is None:
            raise PlanError("REGEXP_REPLACE needs a string, a pattern and a replacement")
        return self._string_fn(n, ctx, "regexp_replace", _const_str(n.expression, "REGEXP_REPLACE"),
                               _const_str(n.args["replacement"], "REGEXP_REPLACE"), "g" in mods)

    def _x_reverse(self, n, ctx):
        return self._string_fn(n, ctx, "reverse")

    def _x_left(self, n, ctx):
        return self._string_fn(n, ctx, "left", _const_int(n.expression, "LEFT"))

    def _x_right(self, n, ctx):
        return self._string_fn(n, ctx, "right", _const_int(n.expression, "RIGHT"))

    # ---- date functions

    def _x_timestamptrunc(self, n, ctx):
        unit = n.args["unit"].name.lower() if n.args.get("unit") is not None else ""
        if unit not in ("year", "quarter", "month", "week", "day"):
            raise UnsupportedError(f"DATE_TRUNC to {unit.upper() or 'this unit'}")
        return E.make_func("date_trunc", [self.expr(n.this, ctx)], (unit,))

    def _x_datediff(self, n, ctx):
        unit = n.args["unit"].name.lower() if n.args.get("unit") is not None else "day"
        unit = {"days": "day", "months": "month", "years": "year", "weeks": "week", "quarters": "quarter"}.get(unit, unit)
        if unit not in ("year", "quarter", "month", "week", "day"):
            raise UnsupportedError(f"DATE_DIFF in {unit.upper()}")
        return E.make_func("date_diff", [self.expr(n.expression, ctx), self.expr(n.this, ctx)], (unit,))

    def _x_timetostr(self, n, ctx):
        return E.make_func("strftime", [self.expr(n.this, ctx)], (_const_str(n.args.get("format"), "STRFTIME"),))

    def _x_greatest(self, n, ctx):
        return self._extreme(n, ctx, ">=")

    def _x_least(self, n, ctx):
        return self._extreme(n, ctx, "<=")

    def _extreme(self, n, ctx, op: str) -> Expr:
        """GREATEST / LEAST as DuckDB defines them: NULL arguments are skipped (NULL only when
        all are NULL); the arguments share one type."""
        args = [self.expr(n.this, ctx)] + [self.expr(x, ctx) for x in n.expressions]
        typed = [a for a in args if not _is_untyped_null(a)]
        if not typed:
            return Lit(None, NULL_TYPE)
        t = E.common_type(typed)
        args = [Lit(None, t) if _is_untyped_null(a) else a if a.type == t else E.make_func("cast", [a], (t,))
                for a in args]
        best = args[0]
        for a in args[1:]:
            best = E.make_func("case", [E.make_func("is_null", [best]), a,
                                        E.make_func("is_null", [a]), best,
                                        E.make_compare(op, best, a), best, a])
        return best

    def _x_nullif(self, n, ctx):
        a, b = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        return E.make_func("case", [E.make_compare("=", a, b), Lit(None, NULL_TYPE), a])

    def _x_cast(self, n, ctx):
        a = self.expr(n.this, ctx)
        t = sql_type(n.args["to"])
        if isinstance(a, Lit) and a.value is None:
            return Lit(None, t)
        precision = decimal_precision(n.args["to"])
        if a.type == t and precision is None:
            return a
        return E.make_func("cast", [a], (t, precision) if precision is not None else (t,))

    def _x_extract(self, n, ctx):
        fld = n.this.name.lower()
        return E.make_func("extract", [self.expr(n.expression, ctx)], (fld,))

    def _x_year(self, n, ctx):
        return E.make_func("extract", [self.expr(n.this, ctx)], ("year",))

    def _x_month(self, n, ctx):
        return E.make_func("extract", [self.expr(n.this, ctx)], ("month",))

    def _x_day(self, n, ctx):
        return E.make_func("extract", [self.expr(n.this, ctx)], ("day",))

    def _x_substring(self, n, ctx):
        a = self.expr(n.this, ctx)
        start = self.expr(n.args["start"], ctx) if n.args.get("start") is not None else Lit(1, INT32)
        length = n.args.get("length")
        ln = self.expr(length, ctx) if length is not None else None
        if not _int_lit(start) or (ln is not None and not _int_lit(ln)):
            raise UnsupportedError("SUBSTRING with non-constant or non-integer positions")
        if start.value is None or (ln is not None and ln.value is None):
            return Lit(None, STRING)
        return E.make_func("substring", [a], (int(start.value), None if ln is None else int(ln.value)))

    def _x_dpipe(self, n, ctx):
        return E.make_func("concat", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    def _x_concat(self, n, ctx):
        args = [self.expr(x, ctx) for x in n.expressions]
        args = [E.make_func("cast", [x], (STRING,)) if x.type.kind != "string" else x for x in args]
        if n.args.get("coalesce"):  # CONCAT(...) skips NULLs, unlike ||
            args = [E.make_func("coalesce", [x, Lit("", STRING)]) for x in args]
        return E.make_func("concat", args)

    def _x_upper(self, n, ctx):
        return E.make_func("upper", [self.expr(n.this, ctx)])

    def _x_lower(self, n, ctx):
        return E.make_func("lower", [self.expr(n.this, ctx)])

    def _x_trim(self, n, ctx):
        chars = n.args.get("expression")
        if chars is not None and not (isinstance(chars, exp.Literal) and chars.is_string):
            raise UnsupportedError("TRIM with non-constant characters")
        pos = (n.text("position") or "BOTH").upper()
        op = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}.get(pos)
        if op is None:
            raise UnsupportedError(f"TRIM({pos} ...)")
        return E.make_func(op, [self.expr(n.this, ctx)], (chars.this if chars is not None else " ",))

    def _x_length(self, n, ctx):
        return E.make_func("length", [self.expr(n.this, ctx)])

    def _x_abs(self, n, ctx):
        return E.make_func("abs", [self.expr(n.this, ctx)])

    def _x_round(self, n, ctx):
        d = n.args.get("decimals")
        digits = self.expr(d, ctx) if d is not None else Lit(0, INT32)
        if not _int_lit(digits) or digits.value is None:
            raise UnsupportedError("ROUND with a non-constant or non-integer number of digits")
        return E.make_func("round", [self.expr(n.this, ctx)], (int(digits.value),))

    def _x_subquery(self, n, ctx):
        raise UnsupportedError("a subquery in this position")

    def _x_exists(self, n, ctx):
        raise UnsupportedError("EXISTS inside OR or another expression")


# ---------------------------------------------------------------------- helpers


def _int_lit(e: Expr) -> bool:
    return isinstance(e, Lit) and (e.value is None or e.type.is_integer)


#: Options each file reader takes, with the Python type of their constant value.
_FILE_OPTIONS = {"parquet": {"hive_partitioning": bool},
                 "csv": {"header": bool, "delim": str, "sep": str}}


@dataclass(frozen=True)
class FileRef:
    """Files a query names directly: their format, the paths/globs, and reader options."""

    format: str                     # parquet | csv
    patterns: tuple[str, ...]
    options: tuple[tuple[str, object], ...] = ()


def _file_ref(node: exp.Table) -> FileRef | None:
    """The files of a table reference that names files: ``'data/*.parquet'`` or ``'x.csv'`` (a
    quoted name that is a path or a file), ``read_parquet('p' | ['p', 'q'], hive_partitioning
    = true)``, ``read_csv('p', header = false, delim = '|')``; None
    for a table name. Options the readers do not take are refused by name."""
    if isinstance(node.this, exp.Identifier):
        name = node.name
        if not node.this.args.get("quoted"):
            return None
        low = name.lower()
        if low.endswith((".csv", ".tsv")):
            return FileRef("csv", (name,), (("delim", "\t"),) if low.endswith(".tsv") else ())
        if low.endswith((".parquet", ".parq")) or any(ch in name for ch in "/*?[") and not low.endswith(
                (".json", ".txt")):
            return FileRef("parquet", (name,))
        return None
    fn = node.this
    if isinstance(fn, exp.ReadParquet):
        fmt, args = "parquet", list(fn.expressions)
    elif isinstance(fn, exp.ReadCSV):
        fmt, args = "csv", [fn.this] + list(fn.expressions)
    else:
        return None
    what = "read_parquet" if fmt == "parquet" else "read_csv"
    if not args or args[0] is None:
        raise PlanError(f"{what} needs a file, a folder, a glob or a list of them")
    options = []
    for opt in args[1:]:
        if not (isinstance(opt, exp.EQ) and isinstance(opt.this, exp.Column)):
            raise UnsupportedError(f"{what} option {opt.sql()}")
        key = opt.this.name.lower()
        want = _FILE_OPTIONS[fmt].get(key)
        if want is None:
            raise UnsupportedError(f"{what} option {opt.this.name}")
        v = opt.expression
        if want is bool and isinstance(v, exp.Boolean):
            options.append((key, bool(v.this)))
        elif want is str and isinstance(v, exp.Literal) and v.is_string:
            options.append((key, v.this))
        else:
            raise PlanError(f"{what} option {key} must be {'true or false' if want is bool else 'a string'}")
    first = args[0]
    items = first.expressions if isinstance(first, exp.Array) else [first]
    if not items or not all(isinstance(x, exp.Literal) and x.is_string for x in items):
        raise UnsupportedError(f"{what} of anything but string constants")
    return FileRef(fmt, tuple(x.this for x in items), tuple(options))


def _file_alias(pattern: str) -> str:
    """The name a file reference answers to without an alias: its file name, less extension."""
    from pathlib import PurePath
    stem = PurePath(pattern.rstrip("/")).name.split(".")[0]
    return stem if stem and _is_table_name(stem) else "file"


def _is_table_name(name: str) -> bool:
    """A plain table name (not a path, a glob or a file name)."""
    return bool(name) and not any(ch in name for ch in "/\\*?[") and name not in (".", "..") \
        and not name.lower().endswith((".parquet", ".csv", ".json"))


def like_pattern(pattern: str, escape: str | None) -> str:
    """A SQL LIKE pattern as pyarrow's ``match_like`` reads it (backslash escapes).

    In SQL a backslash is an ordinary character unless it is the ESCAPE character."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern):
                raise PlanError("LIKE pattern ends with its ESCAPE character")
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def literal(n: exp.Literal) -> Lit:
    if n.is_string:
        return Lit(n.this, STRING)
    text = n.this
    if any(ch in text for ch in "eE"):
        return Lit(float(text), FLOAT64)
    if "." in text:
        d = dec.Decimal(text)
        # Trailing zeros only inflate the scale (and the risk of int64 overflow): 0.0001000 -> 0.0001
        d = d.normalize() if d != 0 else dec.Decimal(0)
        scale = max(0, -d.as_tuple().exponent)
        v = int(d.scaleb(scale))
        if not -(2**63) <= v < 2**63 or scale > 18:
            raise UnsupportedError(f"decimal constant {text} (more than 18 digits)")
        return Lit(v, decimal(scale))
    v = int(text)
    if not -(2**63) <= v < 2**63:
        raise UnsupportedError(f"integer constant {text} beyond 64 bits")
    return Lit(v, INT32 if -(2**31) <= v < 2**31 else INT64)


def sql_type(dt_node: exp.DataType) -> LType:
    t = dt_node.this
    T = exp.DataType.Type
    if t in (T.INT, T.INTEGER if hasattr(T, "INTEGER") else T.INT):
        return INT32
    mapping = {T.BIGINT: INT64, T.SMALLINT: LType("int16"), T.TINYINT: LType("int8"),
               T.DOUBLE: FLOAT64, T.FLOAT: LType("float32"), T.BOOLEAN: BOOL, T.DATE: DATE,
               T.VARCHAR: STRING, T.TEXT: STRING, T.CHAR: STRING, T.TIMESTAMP: LType("timestamp")}
    if t in mapping:
        return mapping[t]
    if t == T.DECIMAL:
        params = dt_node.expressions
        # DECIMAL alone is DECIMAL(18,3) in DuckDB; DECIMAL(p) has scale 0.
        scale = int(params[1].this.this) if len(params) > 1 else (0 if params else 3)
        p = decimal_precision(dt_node)
        if not 0 <= scale <= 18 or scale > p:
            raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')} (sluice keeps decimals in 64 bits: "
                                   "scale at most 18 and at most the precision)")
        return decimal(scale)
    raise UnsupportedError(f"type {dt_node.sql(dialect='duckdb')}")


def decimal_precision(dt_node: exp.DataType) -> int | None:
    """The precision of a DECIMAL type (18 when not given, as in DuckDB); None for other types."""
    if dt_node.this != exp.DataType.Type.DECIMAL:
        return None
    params = dt_node.expressions
    if not params:
        return 18
    p = int(params[0].this.this)
    if not 1 <= p <= 38:
        raise PlanError(f"DECIMAL precision must be between 1 and 38, got {p}")
    return p


def _coerce_compare(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """Implicit casts for comparisons: a string constant compared with a date becomes a date."""
    if a.type.kind == "date" and isinstance(b, Lit) and b.type.kind == "string":
        return a, _date_lit(b.value)
    if b.type.kind == "date" and isinstance(a, Lit) and a.type.kind == "string":
        return _date_lit(a.value), b
    if a.type.is_numeric and isinstance(b, Lit) and b.type.kind == "string" and b.value is not None:
        return a, _number_lit(b.value)
    if b.type.is_numeric and isinstance(a, Lit) and a.type.kind == "string" and a.value is not None:
        return _number_lit(a.value), b
    if isinstance(b, Lit) and b.value is None:
        return a, Lit(None, a.type)
    if isinstance(a, Lit) and a.value is None:
        return Lit(None, b.type), b
    return a, b


def _number_lit(s: str) -> Lit:
    """A string constant compared with a number is read as a number (DuckDB casts it)."""
    text = s.strip()
    try:
        dec.Decimal(text)
    except dec.InvalidOperation:
        raise PlanError(f"cannot compare a number with {s!r}: it is not a number") from None
    return literal(exp.Literal.number(text))


def _date_lit(s: str) -> Lit:
    # ISO dates, and one-digit months and days as DuckDB reads them ('1999-2-01').
    m = re.fullmatch(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*", s)
    try:
        d = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else dt.date.fromisoformat(s.strip())
    except ValueError:
        raise PlanError(f"{s!r} is not a date (YYYY-MM-DD)") from None
    return Lit((d - dt.date(1970, 1, 1)).days, DATE)


_NEVER_EQUAL = object()


def _lit_in_repr(v: Lit, t: LType):
    """A literal's value in the representation of a column of type ``t`` (for IN lists), or
    ``_NEVER_EQUAL`` when no value of that type equals it (2.5 for integers, 1.005 for cents)."""
    if v.value is None:
        return None
    x = v.value
    if v.type.kind == "decimal":
        x = dec.Decimal(x).scaleb(-v.type.scale)
    elif isinstance(x, float):
        x = dec.Decimal(x) if x == x and abs(x) != float("inf") else None
    elif isinstance(x, int) and not isinstance(x, bool):
        x = dec.Decimal(x)
    if t.is_float:
        return float(v.value) if v.type.kind != "decimal" else float(x)
    if x is None:
        return _NEVER_EQUAL
    if t.kind == "decimal":
        x = x.scaleb(t.scale)
    elif not t.is_integer:
        return v.value
    if x != x.to_integral_value():
        return _NEVER_EQUAL
    i = int(x)
    bits = {"int8": 8, "int16": 16, "int32": 32}.get(t.kind, 64)
    return i if -(2 ** (bits - 1)) <= i < 2 ** (bits - 1) else _NEVER_EQUAL


def equi_pair(c: Expr, left: set[str], right: set[str]) -> tuple[Expr, Expr] | None:
    """(left expr, right expr) if ``c`` is an equality between the two sides."""
    if not (isinstance(c, Func) and c.op == "="):
        return None
    a, b = c.args
    ca, cb = a.columns(), b.columns()
    if not ca or not cb:
        return None
    if ca <= left and cb <= right:
        pair = (a, b)
    elif ca <= right and cb <= left:
        pair = (b, a)
    else:
        return None
    ta, tb = pair[0].type, pair[1].type
    if ta.kind == "decimal" or tb.kind == "decimal" or ta.is_float or tb.is_float:
        if ta != tb:
            return None  # keep mixed-scale equalities as residual conditions
    return pair


def extract_common_or(e: Expr) -> Expr:
    """(a AND b) OR (a AND c) -> a AND (b OR c): exposes join keys hidden in ORs (TPC-H Q19)."""
    if not (isinstance(e, Func) and e.op == "or"):
        return e
    branches = E.or_branches(e)
    common = [c for c in branches[0] if all(c in b for b in branches[1:])]
    if not common:
        return e
    rest = []
    for b in branches:
        r = [c for c in b if c not in common]
        if not r:
            return E.and_all(common)  # one branch is implied entirely
        rest.append(E.and_all(r))
    return E.and_all(common + [E.make_bool("or", rest)])


def _untyped_null(plan: PlanNode, name: str) -> bool:
    """Whether output ``name`` of ``plan`` is a bare ``NULL`` (which has no type of its own)."""
    while True:
        if isinstance(plan, Project):
            e = dict(plan.exprs).get(name)
            if isinstance(e, Lit):
                return e.value is None and e.type == NULL_TYPE
            if not isinstance(e, Col):
                return False
            name = e.name
            plan = plan.child
        elif isinstance(plan, (Sort, Limit, Filter)):
            plan = plan.child
        else:
            return False


def _replace_subexprs(e: Expr, mapping: dict[Expr, Col]) -> Expr:
    if not mapping:
        return e
    hit = mapping.get(e)
    if hit is not None:
        return hit
    if isinstance(e, Func):
        return Func(e.op, tuple(_replace_subexprs(a, mapping) for a in e.args), e.type, e.params)
    return e
