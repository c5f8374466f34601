"""sqlglot AST -> logical plan: the queries pass (SELECT, set operations, ORDER BY / LIMIT),
composed with one mixin per pass, each in its module:

- :mod:`sluice.sql.normalize` -- AST rewrites before translation (named windows, spellings);
- :mod:`sluice.sql.scope` -- name resolution (scopes, sources, correlation);
- :mod:`sluice.sql.sources` -- FROM: tables, CTEs (recursive too), files, joins;
- :mod:`sluice.sql.aggregation` -- GROUP BY, grouping sets, aggregates, windows;
- :mod:`sluice.sql.subqueries` -- decorrelation into semi / anti / mark / scalar joins;
- :mod:`sluice.sql.expressions` -- scalar expressions, dispatched by sqlglot class;
- :mod:`sluice.sql.literals`, :mod:`sluice.sql.syntax` -- constants and AST questions.

The translator only translates: join order is the ``order_joins`` plan rule's decision
(:mod:`sluice.plan.rules`), as are filter placement and column pruning.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field

from typing import Callable


from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.coverage import check_supported
from sluice.sql.construct_names import construct_name
from sluice.sql.normalize import JOIN_GROUP, normalize
from sluice.catalog import TableInfo
from sluice.expr import build as E
from sluice.expr.functions.logic import as_boolean
from sluice.expr.nodes import Col, Expr, Lit
from sluice.plan.logical import (Aggregate, Filter, Limit, OneRow, PlanNode, Project, Window, WindowCall,
                                 Sort, SortKey)
from sluice.types import BOOL, INT64
from sluice.sql.limits import limit_value
from sluice.sql.having_names import having_names
from sluice.sql.scope import Catalog, Scope, Correlation, Rel, Ctx, Source, Domain, EmptyGroup
from sluice.exec.aggregate_functions import registered
from sluice.sql.agg_states import combined_states, is_combine_aggr, printed_states
from sluice.sql.binned_histogram import binned_histograms, is_binned_histogram
from sluice.sql.syntax import AGG_FUNCS, HOLISTIC, _from, _contains_subquery, WINDOW_FUNCS, _outer_windows, _outer_aggs, _grouping_calls, _group_by_all, _order_by_all, _split_and
from sluice.sql.sources import _references
from sluice.sql.recursive_key import RecursiveKeys, references_recurring
from sluice.plan.joins import extract_common_or
from sluice.sql.sources import FromClause, is_asof, _natural
from sluice.sql.outer_on import OuterJoinPairs
from sluice.sql.aggregation import Aggregation
from sluice.sql.windows import Windows
from sluice.sql.subqueries import Subqueries
from sluice.sql.dependent import Dependent
from sluice.sql.expressions import Expressions
from sluice.sql.temporal_calls import TemporalCalls
from sluice.sql.order_keys import OrderKeys
from sluice.sql.set_operations import SetOperations
from sluice.sql.string_calls import StringCalls
from sluice.sql.select_list import SelectList, _aliases_defined_before_use
from sluice.sql.nested import HIDDEN_UNNEST, NestedExpressions, UnnestSources

__all__ = ["AGG_FUNCS", "HOLISTIC", "WINDOW_FUNCS", "Translator"]


class Translator(FromClause, OuterJoinPairs, RecursiveKeys, SetOperations, Aggregation, Windows, Subqueries, Dependent, UnnestSources, NestedExpressions,
                 StringCalls, TemporalCalls, OrderKeys, SelectList, Expressions):
    def __init__(self, catalog: Catalog, files: Callable[[list[str]], TableInfo] | None = None) -> None:
        self.catalog = catalog
        self.files = files
        self._using_pairs: dict[int, list[tuple[Col, Col]]] = {}
        #: a FULL JOIN ... USING's merged columns, COALESCE(left, right), computed above the join
        self._using_coalesce: dict[int, list[tuple[str, Expr]]] = {}
        self._semi_sources: dict[int, Source] = {}  # a SEMI / ANTI JOIN -> its right side
        #: CURRENT_DATE / CURRENT_TIMESTAMP: one instant per query, as in DuckDB.
        self.now = _dt.datetime.now(_dt.timezone.utc)
        self.ctes: list[dict[str, exp.Expression]] = []
        self._names: set[str] = set()
        self._cte_refs: dict[int, int] = {}
        self._cte_columns: dict[int, list[str]] = {}  # id(CTE body) -> its column names, WITH t(a, b)
        self._recursive: set[int] = set()             # id(CTE body) of WITH RECURSIVE CTEs that use themselves
        self._work: dict[int, Rel] = {}               # id(CTE body) -> its work table, inside its step
        self._recurring: dict[int, Rel] = {}          # id(CTE body) -> recurring.<name>, inside its step
        self._cte_keys: dict[int, list] = {}          # id(CTE body) -> its USING KEY list (WITH RECURSIVE)
        self._cte_scope: dict[int, Scope | None] = {}  # id(CTE body) -> the scope around its WITH's query
        self._shared: dict[int, Rel] = {}
        self._expanding: set[str] = set()  # select-list aliases being expanded (no self-reference)
        self._unnamed = 0  # subqueries in FROM without an alias so far
        #: id(SELECT AST) -> the domain it is translated over / its report of an empty group
        #: (set by sluice.sql.dependent just before translating a correlated subquery).
        self._domains: dict[int, Domain] = {}
        self._empty_groups: dict[int, EmptyGroup] = {}
        self._join_on: dict[int, exp.Expression | None] = {}  # id(JOIN) -> its ON less what went to WHERE
        self._on_pushed: dict[int, list[exp.Expression]] = {}  # id(outer JOIN) -> ON conjuncts with subqueries

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
        if any(is_combine_aggr(n) or is_binned_histogram(n) for n in ast.walk()):
            ast = ast.copy()  # (COMBINE_AGGR, HISTOGRAM(x, bins) are rewritten in place: the parsed tree is cached)
        check_supported(ast)  # nothing the query says may be dropped: refuse what is not read
        return printed_states(self.query(ast, None, None))

    def query(self, ast: exp.Expression, parent: Scope | None, corr: Correlation | None) -> Rel:
        with_ = ast.args.get("with_") or ast.args.get("with")
        pushed = False
        if with_ is not None:
            level = {c.alias_or_name.lower(): c.this for c in with_.expressions}
            for c in with_.expressions:
                self._cte_scope[id(c.this)] = parent
                alias = c.args.get("alias")
                if alias is not None and alias.args.get("columns"):
                    self._cte_columns[id(c.this)] = [x.name for x in alias.args["columns"]]
                keyed = bool(c.args.get("key_expressions")) and isinstance(c.this, exp.Union)
                if keyed and with_.args.get("recursive"):  # (DuckDB reads USING KEY only there)
                    self._cte_keys[id(c.this)] = c.args["key_expressions"]
                if with_.args.get("recursive") and (keyed or _references(c.this, c.alias_or_name.lower())
                                                    or references_recurring(c.this, c.alias_or_name.lower())):
                    self._recursive.add(id(c.this))
            self.ctes.append(level)
            pushed = True
            # Count references to each CTE: one referenced twice is computed once (Shared).
            for t in ast.find_all(exp.Table):
                cte = level.get(t.name.lower())
                if cte is not None and id(cte) in self._recursive and _inside(t, cte):
                    continue  # a recursive step reads its work table, not the CTE's result
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
                    pos = int(target.this) if target.this.isdigit() else 0
                    if not 1 <= pos <= len(rel.outputs):
                        raise PlanError(f"ORDER BY position {target.this} is not in the select list")
                    col = rel.outputs[pos - 1][1]
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
        ctx = Ctx(Scope(None))
        return limit_value(self, ast.args.get("limit"), ctx), limit_value(self, ast.args.get("offset"), ctx) or 0

    def _sort_key(self, o: exp.Ordered, e: Expr) -> SortKey:
        desc = bool(o.args.get("desc"))
        nf = o.args.get("nulls_first")
        nulls_first = bool(nf) if nf is not None else desc  # NULLs are largest by default
        return SortKey(e, not desc, nulls_first)

    # ------------------------------------------------------------------ SELECT

    def select(self, sel: exp.Select, parent: Scope | None, corr: Correlation | None) -> Rel:
        """One SELECT, clause by clause in SQL's logical order: FROM and WHERE, GROUP BY and
        HAVING, subqueries in the select list, windows and QUALIFY, the select list, DISTINCT
        (ON), ORDER BY, LIMIT / OFFSET."""
        st = _Select(sel, Scope(parent), corr, self._domains.pop(id(sel), None), self._empty_groups.pop(id(sel), None))
        st.ctx = st.post_ctx = Ctx(st.scope, aliases={it.alias.lower(): it.this for it in sel.expressions
                                                      if isinstance(it, exp.Alias)})
        items, specs = self._from_items(st)
        st.plan = self._from_where(st, items, specs)
        self._group_having(st)
        for it in st.select_items:  # scalar subqueries as a value, EXISTS / IN as a mark column
            st.plan = self._join_subqueries(it, st.plan, st.post_ctx)
        self._windows_qualify(st)
        self._select_list(st)
        on_keys = self._distinct_on(st)
        hidden = self._order_by(st) + on_keys
        return self._finish(st, on_keys, hidden)

    def _post_or_expr(self, node: exp.Expression, st: "_Select") -> Expr:
        """``node`` over the aggregation's output (when the SELECT aggregates) or its rows."""
        return self._post(node, st.post_ctx) if st.aggregated else self.expr(node, st.post_ctx)

    def _from_items(self, st: "_Select") -> tuple[list[PlanNode], list]:
        """The FROM clause's relations in order, each with its JOIN (None: the first, a LATERAL
        already joined, the correlation domain); their sources are added to the scope."""
        sel, scope, ctx = st.sel, st.scope, st.ctx
        frm = _from(sel)
        joins = sel.args.get("joins") or []
        items: list[PlanNode] = []
        specs = []
        if frm is None:
            items.append(OneRow())
            specs.append(None)
        else:
            if isinstance(frm.this, exp.Unnest):  # FROM UNNEST([...]) AS u(x): over one row
                plan0, src0 = self.unnest_source(frm.this, OneRow(), ctx)
            else:
                plan0, src0 = self.table_source(frm.this, scope)
            scope.add(src0)
            items.append(plan0)
            specs.append(None)
            for j in joins:
                if is_asof(j) and isinstance(j.this, (exp.Unnest, exp.Lateral)):
                    raise UnsupportedError(f"ASOF JOIN of {j.this.key.upper()}")
                if isinstance(j.this, exp.Unnest):
                    # Joined to what precedes it, now: its lists are those rows' (a lateral join).
                    kind = ((j.side or "") + " " + (j.kind or "")).strip().upper()
                    on = j.args.get("on")
                    keep = kind in ("LEFT", "LEFT OUTER") and isinstance(on, exp.Boolean) and on.this is True \
                        and not j.args.get("using")
                    if not keep and (kind not in ("", "CROSS", "INNER") or on is not None or j.args.get("using")):
                        raise UnsupportedError(f"{kind or 'a'} JOIN of UNNEST with a condition (only FROM t, UNNEST(...),"
                                               " CROSS JOIN UNNEST(...) and LEFT JOIN UNNEST(...) ON TRUE)")
                    prefix = self._plan_from(items, specs, [], ctx)
                    p, s = self.unnest_source(j.this, prefix, ctx, keep)
                    scope.add(s)
                    if s.alias == HIDDEN_UNNEST:  # a select list's UNNESTs: not columns of SELECT *
                        scope.hidden.update((s.alias, c) for c in s.cols)
                    items, specs = [p], [None]
                    continue
                if isinstance(j.this, exp.Lateral):
                    # Joined to what precedes it, now: it reads those rows (sluice.sql.dependent).
                    prefix = self._plan_from(items, specs, [], ctx)
                    p, s = self._lateral(j, prefix, ctx)
                    scope.add(s)
                    items, specs = [p], [None]
                    continue
                if is_join_group(j.this):  # ... JOIN (r JOIN r2 ON c) ON ...: one item, several sources
                    if j.args.get("using") or _natural(j) or is_asof(j) or (j.kind or "").upper() in ("SEMI", "ANTI"):
                        raise UnsupportedError("USING, NATURAL, ASOF, SEMI or ANTI with a parenthesised join")
                    p, group = self.join_group(j.this.this, scope)
                    for s in group.sources:
                        scope.add(s)
                    scope.merged.update({k: v for k, v in group.merged.items() if k not in scope.merged})
                    scope.hidden.update(group.hidden)
                    items.append(p)
                    specs.append(j)
                    continue
                try:
                    p, s = self.table_source(j.this, scope)
                except PlanError:
                    if not (isinstance(j.this, exp.Subquery) and _reads_outside(j.this, scope)):
                        raise
                    if is_asof(j):
                        raise UnsupportedError("ASOF JOIN of a subquery reading an earlier FROM item (LATERAL)")
                    # A subquery in FROM reading an earlier FROM item: LATERAL, as DuckDB reads it.
                    lat = exp.Join(this=exp.Lateral(this=j.this.this, alias=j.this.args.get("alias")),
                                   side=j.side, kind=j.kind, on=j.args.get("on"))
                    prefix = self._plan_from(items, specs, [], ctx)
                    p, s = self._lateral(lat, prefix, ctx)
                    scope.add(s)
                    items, specs = [p], [None]
                    continue
                left = list(scope.sources)
                scope.add(s)
                self._using(j, left, s, scope)
                if (j.kind or "").upper() in ("SEMI", "ANTI"):  # visible only in its ON
                    scope.remove(s)
                    self._semi_sources[id(j)] = s
                items.append(p)
                specs.append(j)
        if sel.args.get("laterals"):
            raise UnsupportedError("LATERAL")
        if st.domain is not None:
            # The outer references' distinct values, cross-joined in: each answers as its
            # domain column (sluice.sql.dependent), a local column of this SELECT.
            scope.add(Source("\x00domain", {f"\x00{c.name}": c for c in st.domain.cols.values()}))
            items.insert(0, st.domain.plan)
            specs.insert(0, None)
        return items, specs

    def join_group(self, sel: exp.Select, scope: Scope) -> tuple[PlanNode, Scope]:
        """A parenthesised group of joins in FROM (``sluice.sql.normalize._mark_join_group``):
        its joined rows and the scope of its tables, each visible to the query by its own name."""
        st = _Select(sel, Scope(scope.parent), None, None, None)
        st.ctx = st.post_ctx = Ctx(st.scope)
        items, specs = self._from_items(st)
        return self._from_where(st, items, specs), st.scope

    def _from_where(self, st: "_Select", items: list[PlanNode], specs: list) -> PlanNode:
        """FROM joined with WHERE: plain conjuncts join the FROM items (placed by the rules),
        subquery predicates are decorrelated above them. An inner join's ON conditions with a
        subquery join it as WHERE conditions do (the same rows when every later join keeps the
        rows it is given: inner, cross or LEFT); correlated conjuncts go to ``st.corr``."""
        sel, scope, ctx, corr = st.sel, st.scope, st.ctx, st.corr
        joins = sel.args.get("joins") or []
        plain: list[Expr] = []
        subq: list[exp.Expression] = []
        moved: list[exp.Expression] = []
        for k, j in enumerate(joins):
            on = j.args.get("on")
            if on is None or not _contains_subquery(on):
                continue
            if is_asof(j):
                raise UnsupportedError("subqueries in the ON condition of an ASOF JOIN")
            later = [((x.side or "") + (x.kind or "")).upper() for x in joins[k + 1:]]
            if ((j.side or "").upper() in ("LEFT", "RIGHT", "FULL") and (j.kind or "").upper() in ("", "OUTER")
                    or not j.side and (j.kind or "").upper() in ("SEMI", "ANTI")):
                # joined to the side they read (FromClause._on_subqueries)
                parts = _split_and(on)
                self._on_pushed[id(j)] = [c for c in parts if _contains_subquery(c)]
                rest = [c for c in parts if not _contains_subquery(c)]
                self._join_on[id(j)] = exp.and_(*rest) if rest else None
                continue
            if (j.side or (j.kind or "").upper() not in ("", "INNER", "CROSS")) \
                    or any(x not in ("", "INNER", "CROSS", "LEFT", "LEFTOUTER") for x in later):
                raise UnsupportedError("subqueries in the ON condition of an outer join")
            parts = _split_and(on)
            moved += [c for c in parts if _contains_subquery(c)]
            rest = [c for c in parts if not _contains_subquery(c)]
            self._join_on[id(j)] = exp.and_(*rest) if rest else None
        for c in _split_and(sel.args.get("where")) + moved:
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
                c = E.coerce(c, BOOL) if c.type.kind == "null" else as_boolean(c)  # WHERE NULL keeps no row
                if c.type.kind != "bool":
                    raise PlanError(f"WHERE needs a boolean condition, got {c.type}")
                local_plain.append(c)
        plan = self._plan_from(items, specs, local_plain, ctx)
        for c in subq:
            plan = self.subquery_predicate(c, plan, ctx, where_scope=scope, corr=corr)
        return plan

    def _group_having(self, st: "_Select") -> None:
        """GROUP BY, the aggregates of every clause, HAVING: ``st.plan`` becomes the groups and
        ``st.post_ctx`` reads expressions over them."""
        sel, ctx, corr, domain = st.sel, st.ctx, st.corr, st.domain
        select_items = st.select_items = self._expand_star(sel, st.scope)
        _aliases_defined_before_use(select_items, st.scope)
        having = sel.args.get("having")
        order = st.order = _order_by_all(sel.args.get("order"), len(select_items))
        group = _group_by_all(sel.args.get("group"), select_items)
        if having is not None and sel.args.get("group") is not None and sel.args["group"].args.get("all"):
            group = self._group_by_all_having(having, group, select_items, ctx)
        rewritten = [*select_items, having, *(order.expressions if order is not None else [])]
        combined_states(self, rewritten, ctx)
        binned_histograms(self, rewritten, ctx)
        select_items[:] = rewritten[:len(select_items)]
        clauses = list(select_items) + ([having] if having is not None else []) + \
            (list(order.expressions) if order is not None else [])
        agg_nodes = [n for c in clauses for n in _outer_aggs(c)]
        grouping_nodes = [n for c in clauses for n in _grouping_calls(c)]
        st.aggregated = bool(group) or bool(agg_nodes) or having is not None  # (HAVING alone: one group)
        alias_map = {it.alias.lower(): it.this for it in select_items if isinstance(it, exp.Alias)}
        if corr is not None and corr.pairs:
            # Inner side of each correlation pair becomes an output (and a group key).
            for _, inner in corr.pairs:
                corr.inner_key_cols.append(inner.name if isinstance(inner, Col) else self.fresh("corr_key"))
        if st.empty is not None and (not st.aggregated or group is not None):
            st.empty = None  # rows come only from groups: no row is what no rows give
        if not st.aggregated:
            if having is not None:
                raise PlanError("HAVING without aggregation")
            return
        for node in agg_nodes:  # subqueries in an aggregate's FILTER or arguments: joined to its input rows
            if _contains_subquery(node):
                st.plan = self._join_subqueries(node, st.plan, ctx)
        st.plan, st.post_ctx = self._aggregate(st.plan, ctx, select_items, group, agg_nodes, alias_map, corr,
                                               grouping_nodes,
                                               domain_keys=list(domain.cols.values()) if domain else [])
        if having is not None:
            post = st.post_ctx
            ids, _ = having_names(lambda n: self.expr(n, post), having,
                                  lambda e: e in (post.group_map or {}), post.aliases)
            st.post_ctx = dataclasses.replace(post, alias_columns=frozenset(ids))
        for c in _split_and(having) if having is not None else []:
            if _contains_subquery(c):
                if st.empty is not None:
                    raise UnsupportedError("a subquery in the HAVING clause of a correlated scalar subquery")
                st.plan = self.subquery_predicate(c, st.plan, st.post_ctx, where_scope=None, corr=None)
            elif st.empty is not None:  # keep the group, with HAVING's verdict (EmptyGroup)
                st.having_flag = E.and_all([st.having_flag, self._post(c, st.post_ctx)])
            else:
                st.plan = Filter(st.plan, self._post(c, st.post_ctx))

    def _group_by_all_having(self, having, group, select_items, ctx: Ctx):
        """GROUP BY ALL groups by HAVING's plain columns too (outside aggregates, not a select
        item's key, not an alias), as DuckDB's HavingBinder adds them."""
        keys = list(group.expressions) if group is not None else []
        key_exprs = set()
        for k in keys:
            it = select_items[int(k.this) - 1]
            try:
                key_exprs.add(self.expr(it.this if isinstance(it, exp.Alias) else it, ctx))
            except (PlanError, UnsupportedError):
                pass
        aliases = {it.alias.lower() for it in select_items if isinstance(it, exp.Alias)}
        _, plain = having_names(lambda n: self.expr(n, ctx), having, lambda e: e in key_exprs, aliases)
        return exp.Group(expressions=keys + [c.copy() for c in plain]) if keys or plain else group

    def _windows_qualify(self, st: "_Select") -> None:
        """Window functions (after grouping and HAVING), then QUALIFY on their results."""
        qualify = st.sel.args.get("qualify")
        windows = [w for it in st.select_items for w in _outer_windows(it)]
        if qualify is not None:
            windows += _outer_windows(qualify)
        if st.order is not None:
            windows += [w for o in st.order.expressions for w in _outer_windows(o)]
        if windows:
            if st.domain is not None:
                raise UnsupportedError("window functions in a correlated subquery")
            st.plan = self._windows(st.plan, windows, st.post_ctx, st.aggregated)
        if qualify is not None:
            # its subqueries (``QUALIFY row_number() OVER w = (SELECT ...)``) joined as values first
            st.plan = self._join_subqueries(qualify.this, st.plan, st.post_ctx)
            c = self._post_or_expr(qualify.this, st)
            c = E.coerce(c, BOOL) if c.type.kind == "null" else as_boolean(c)
            if c.type.kind != "bool":
                raise PlanError(f"QUALIFY needs a boolean condition, got {c.type}")
            st.plan = Filter(st.plan, c)

    def _select_list(self, st: "_Select") -> None:
        """The select list as (user name, internal name, expression), and the columns that
        travel with it: correlation keys and residual inputs, domain columns, the empty-group
        report."""
        outputs = st.outputs
        for it in st.select_items:
            name = it.alias_or_name if isinstance(it, (exp.Alias, exp.Column)) else it.sql(dialect="duckdb")
            e = self._post_or_expr(it.this if isinstance(it, exp.Alias) else it, st)
            # A column shown twice (``select ename, ename as path``) gets a name of its own for
            # the second: each output must be its own column (a recursive step fills them).
            reuse = isinstance(e, Col) and all(e.name != internal for _, internal, _ in outputs)
            outputs.append((name, e.name if reuse else self.fresh(name), e))
        extra = st.extra
        if st.corr is not None:
            sch = st.plan.schema
            for (outer, inner), kname in zip(st.corr.pairs, st.corr.inner_key_cols):
                extra.append((kname, Col(kname, sch[kname]) if st.aggregated else inner))
            for r in st.corr.residual:
                for cname in sorted(r.columns() & st.scope.local):
                    if cname in sch:
                        extra.append((cname, Col(cname, sch[cname])))
        if st.domain is not None:
            extra += [(d.name, Col(d.name, d.type)) for d in st.domain.cols.values()]
        if st.empty is not None:
            self._report_empty(st.empty, st.plan, outputs, st.having_flag, st.domain)
            extra.append((st.empty.present, Lit(True, BOOL)))
            if st.having_flag is not None:
                extra.append((st.empty.having_col, st.having_flag))

    def _finish(self, st: "_Select", on_keys: list[tuple[str, Expr]], hidden: list[tuple[str, Expr]]) -> Rel:
        """The projection (outputs, the columns that travel with them, hidden sort and DISTINCT
        ON keys), then LIMIT / OFFSET (per outer row in a correlated subquery), DISTINCT ON,
        DISTINCT, ORDER BY; hidden columns dropped last."""
        domain, empty = st.domain, st.empty
        proj_exprs = [(internal, e) for _, internal, e in st.outputs]
        seen = {n for n, _ in proj_exprs}
        for n, e in st.extra:
            if n not in seen:
                proj_exprs.append((n, e))
                seen.add(n)
        limit, offset = self._limit_offset(st.sel)
        sort_keys = st.sort_keys
        plan = Project(st.plan, tuple(proj_exprs + [h for h in hidden if h[0] not in seen]))
        if empty is not None and (limit == 0 or offset):
            raise UnsupportedError("LIMIT 0 or OFFSET on a correlated aggregate subquery")
        if domain is not None and (limit is not None or offset):
            # LIMIT / OFFSET per outer row: numbered within each domain value.
            rn = self.fresh("row_number")
            plan = Window(plan, tuple(domain.cols.values()), tuple(sort_keys), ((rn, WindowCall("row_number", ())),))
            keep = E.make_compare(">", Col(rn, INT64), Lit(offset, INT64))
            if limit is not None:
                keep = E.make_bool("and", [keep, E.make_compare("<=", Col(rn, INT64), Lit(offset + limit, INT64))])
            plan = Filter(plan, keep)
            sort_keys, limit, offset = [], None, 0
        elif domain is not None or empty is not None:
            sort_keys = []  # a subquery's rows have no order; an aggregate's one row is itself
            limit = None
        if on_keys:
            if domain is not None:
                raise UnsupportedError("DISTINCT ON in a correlated subquery")
            rn = self.fresh("row_number")
            plan = Window(plan, tuple(Col(n, e.type) for n, e in on_keys), tuple(sort_keys),
                          ((rn, WindowCall("row_number", ())),))
            plan = Filter(plan, E.make_compare("=", Col(rn, INT64), Lit(1, INT64)))
        if st.distinct is not None:
            sch = plan.schema
            plan = Aggregate(plan, tuple((n, Col(n, sch[n])) for n, _ in proj_exprs), ())
        if sort_keys:
            plan = Sort(plan, tuple(sort_keys), limit, offset)
        elif limit is not None or offset:
            plan = Limit(plan, limit, offset)
        if hidden:
            sch = plan.schema
            plan = Project(plan, tuple((n, Col(n, sch[n])) for n, _ in proj_exprs))
        return Rel(plan, [(u, internal) for u, internal, _ in st.outputs])

    def _report_empty(self, empty: EmptyGroup, plan: PlanNode, outputs_exprs, having: Expr | None,
                      domain: Domain | None) -> None:
        """Fill ``empty`` (see :class:`EmptyGroup`): each output and HAVING with every aggregate
        as it is over no rows -- COUNT 0, the others NULL."""
        calls = {n: c for node in plan.walk() if isinstance(node, Aggregate) for n, c in node.aggs}
        nothing = {n: Lit(0, INT64) if registered(c.func).counts
                   else Lit(None, c.type) for n, c in calls.items()}
        known = set(nothing) | {d.name for d in (domain.cols.values() if domain else ())}
        for _, _, e in outputs_exprs + ([("", "", having)] if having is not None else []):
            if e.columns() - known:
                raise UnsupportedError("a correlated scalar subquery whose result uses a value other than "
                                       "its aggregates and outer references")
        empty.values = [E.fold_constants(E.substitute(e, nothing)) for _, _, e in outputs_exprs]
        empty.having = E.fold_constants(E.substitute(having, nothing)) if having is not None else None
        empty.present = self.fresh("present")
        empty.having_col = self.fresh("having")


def _reads_outside(sub: exp.Subquery, scope: Scope) -> bool:
    """Whether a subquery in FROM (that could not be read alone) names a table alias of the
    FROM items before it, or a column name one of them has."""
    aliases = {src.alias for src in scope.sources}
    return any(c.table.lower() in aliases if c.table else scope.has_local(c.name) for c in sub.find_all(exp.Column))


def _inside(node: exp.Expression, root: exp.Expression) -> bool:
    """Whether ``node`` lies in the tree under ``root``."""
    while node is not None:
        if node is root:
            return True
        node = node.parent
    return False


@dataclass
class _Select:
    """What the steps of :meth:`Translator.select` hand on: the SELECT, its scope and
    correlation, and the plan and outputs as each clause adds to them."""

    sel: exp.Select
    scope: Scope
    corr: Correlation | None
    domain: Domain | None  # the outer references' values a correlated subquery runs over
    empty: EmptyGroup | None  # a scalar aggregate subquery's report of an empty group
    ctx: Ctx | None = None  # names over the FROM clause's rows
    post_ctx: Ctx | None = None  # names over the aggregation's output (ctx when not aggregated)
    plan: PlanNode | None = None
    select_items: list = field(default_factory=list)
    order: exp.Order | None = None
    aggregated: bool = False
    having_flag: Expr | None = None
    distinct: exp.Distinct | None = None
    outputs: list[tuple[str, str, Expr]] = field(default_factory=list)  # (user name, internal, expr)
    extra: list[tuple[str, Expr]] = field(default_factory=list)  # columns that travel with the outputs
    sort_keys: list[SortKey] = field(default_factory=list)


def is_join_group(node: exp.Expression) -> bool:
    """Whether ``node`` is a parenthesised group of joins, as normalize marks it."""
    return isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and bool(node.this.meta.get(JOIN_GROUP))
