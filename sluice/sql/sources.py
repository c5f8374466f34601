"""FROM: tables, CTEs (recursive ones too), VALUES, derived tables and files named in the query
(Parquet with Hive partitions, CSV), and the joins between them. Runs of inner joins become one
:class:`InnerJoins` node whose order the ``order_joins`` plan rule decides; outer joins keep
their written order.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sluice.errors import PlanError, SluiceError, UnsupportedError
from sluice.sql.construct_names import construct_name
from sluice.catalog import TableInfo
from sluice.expr import build as E
from sluice.expr.functions.logic import as_boolean
from sluice.expr.nodes import Col, Expr
from sluice.plan.logical import (Filter, InnerJoins, Join, OneRow, PlanNode, Project, RecursiveUnion, Scan, Shared, Union, WorkTable)
from sluice.sql.recursive_key import references_recurring
from sluice.sql.scope import Source, Scope, Outer, Rel, Ctx
from sluice.sql.series import is_series, series
from sluice.sql.syntax import _contains_subquery
from sluice.sql.literals import _is_untyped_null
from sluice.plan.joins import equi_pair
from sluice.sql.asof import asof_join
from sluice.types import BOOL
from pathlib import PurePath


def _references(node: exp.Expression, name: str) -> bool:
    """Whether ``node`` reads a table called ``name`` (a CTE's reference to itself)."""
    return any(t.name.lower() == name and not t.args.get("db") for t in node.find_all(exp.Table))


def _enclosing_column(body: exp.Expression, scope: Scope | None) -> str | None:
    """A column ``body`` names that a query around it has (``scope``: the scopes around the
    query whose WITH defines it), as written; None when it names none."""
    while scope is not None:
        if not isinstance(scope, Outer):  # (an Outer stands for its parent, and records what it resolves)
            own = Scope(None, scope.sources, scope.local, scope.merged)
            for c in body.find_all(exp.Column):
                try:
                    own.resolve(c.table or None, c.name)
                except SluiceError:
                    continue
                return c.sql("duckdb")
        scope = scope.parent
    return None


def is_asof(j: exp.Join) -> bool:
    """Whether ``j`` is an ASOF JOIN (sqlglot's join method)."""
    return str(j.args.get("method") or "").upper() == "ASOF"


def _natural(j: exp.Join) -> bool:
    return str(j.args.get("method") or "").upper() == "NATURAL"


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
    stem = PurePath(pattern.rstrip("/")).name.split(".")[0]
    return stem if stem and _is_table_name(stem) else "file"


def _is_table_name(name: str) -> bool:
    """A plain table name (not a path, a glob or a file name)."""
    return bool(name) and not any(ch in name for ch in "/\\*?[") and name not in (".", "..") \
        and not name.lower().endswith((".parquet", ".csv", ".json"))


class FromClause:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def table_source(self, node: exp.Expression, scope: Scope) -> tuple[PlanNode, Source]:
        if isinstance(node, exp.Table):
            ref = _file_ref(node)
            if ref is not None:
                if self.files is None:
                    raise UnsupportedError("querying files directly in this context")
                alias = (node.alias or _file_alias(ref.patterns[0])).lower()
                return self._scan_source(self.files(ref), alias, node.args.get("alias"))
            if is_series(node.this):
                alias_node = node.args.get("alias")
                rel = series(node.this, self.fresh)
                alias = alias_node.name.lower() if alias_node is not None and alias_node.name else rel.outputs[0][0]
                return self._derived(rel, alias, alias_node)
            if not isinstance(node.this, exp.Identifier):
                raise UnsupportedError(f"table function {construct_name(node.this).split()[-1]}")
            name = node.name.lower()
            alias = (node.alias or node.name).lower()
            if str(node.args.get("db") or "").lower() == "main" and not node.args.get("catalog") \
                    and _is_table_name(node.name):  # DuckDB's default schema: its tables, never a CTE
                return self._scan_source(self.catalog(name), alias, node.args.get("alias"))
            recurring = self._recurring_table(node, name, alias)
            if recurring is not None:
                return recurring
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
                    except PlanError as e:
                        if not any(w in str(e) for w in ("unknown column", "unknown table or alias", "has no column")):
                            raise
                        # A CTE is translated once, on its own: one that reads a column of a query
                        # around it (inside a correlated subquery or LATERAL) would have to be
                        # computed per outer row; it was "unknown column" where DuckDB answers.
                        outer = _enclosing_column(cte_ast, self._cte_scope.get(id(cte_ast)))
                        if outer is None:
                            raise
                        raise UnsupportedError(f"CTE {name!r} reading {outer} of an enclosing query (correlated "
                                               "CTEs: a CTE is computed once, not per outer row)") from None
                    finally:
                        self.ctes = saved
                    if self._cte_refs.get(id(cte_ast), 0) > 1:
                        rel = Rel(Shared(rel.plan, len(self._shared)), rel.outputs)
                        self._shared[id(cte_ast)] = rel
                    return self._derived(rel, alias, node.args.get("alias"))
            return self._scan_source(self.catalog(name), alias, node.args.get("alias"))
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

    def _recurring_table(self, node: exp.Table, name: str, alias: str) -> tuple[PlanNode, Source] | None:
        """``recurring.<name>`` inside the step of recursive CTE ``name``: every row so far."""
        if str(node.args.get("db") or "").lower() != "recurring" or node.args.get("catalog"):
            return None
        for level in reversed(self.ctes):
            cte_ast = level.get(name)
            if cte_ast is not None and id(cte_ast) in self._recurring:
                return self._derived(self._recurring[id(cte_ast)], alias, node.args.get("alias"))
        return None

    def _recursive_cte(self, body, name: str, ctes) -> Rel:
        """WITH RECURSIVE name AS (anchor UNION [ALL] step): the anchor (which must not use
        the name) gives the columns, names and types; in the step, the name reads the work
        table and ``recurring.name`` every row so far; the step's columns are cast to the
        anchor's types, as DuckDB does. USING KEY: :mod:`sluice.sql.recursive_key`."""
        if not isinstance(body, exp.Union) or any(body.args.get(k) for k in ("order", "limit", "offset")):
            raise UnsupportedError("WITH RECURSIVE other than anchor UNION [ALL] step")
        if _references(body.left, name) or references_recurring(body.left, name):
            raise UnsupportedError(f"recursive CTE {name!r} used in its anchor (the part before the last UNION)")
        anchor = self._named_columns(self.query(body.left, None, None), body, name)
        sch = anchor.plan.schema
        internal = [i for _, i in anchor.outputs]
        items = self._cte_keys.get(id(body))
        spec = self._using_key(items, anchor, name) if items else None
        distinct = bool(body.args.get("distinct"))
        reads_itself = _references(body.right, name) or references_recurring(body.right, name)
        self._unnamed += 1
        key = self._unnamed
        result = dict(sch)
        if spec is not None:
            result.update((n, call.type) for n, call in spec.aggs)
        # (a keyed UNION's step reads the changed keys' finalized rows, the aggregates' types)
        work_types = result if spec is not None and distinct else sch
        self._work[id(body)] = Rel(WorkTable(key, tuple((i, work_types[i]) for i in internal)), list(anchor.outputs))
        self._recurring[id(body)] = Rel(WorkTable(key, tuple((i, result[i]) for i in internal), recurring=True),
                                        list(anchor.outputs))
        saved = self.ctes
        self.ctes = ctes  # the step sees the CTE's own name
        try:
            step = self.query(body.right, None, None)
        finally:
            self.ctes = saved
            del self._work[id(body)], self._recurring[id(body)]
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
        anchor_plan = Project(anchor.plan, tuple((i, Col(i, sch[i])) for i in internal))
        if spec is not None and not reads_itself:
            return Rel(self._keyed_union(anchor_plan, Project(step.plan, tuple(exprs)), spec, anchor.outputs, name),
                       list(anchor.outputs))
        plan = RecursiveUnion(anchor_plan, Project(step.plan, tuple(exprs)), key, distinct,
                              spec.keys if spec is not None else (), spec.aggs if spec is not None else (),
                              references_recurring(body.right, name))
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
            types.append(E.common_type(typed, "VALUES column") if typed else rows[0][i].type)
        branches = []
        for r in rows:
            exprs = tuple((n, E.coerce(e, t)) for n, e, t in zip(names, r, types))
            branches.append(Project(OneRow(), exprs))
        plan: PlanNode = branches[0] if len(branches) == 1 else Union(tuple(branches))
        return Rel(plan, [(f"col{i}", n) for i, n in enumerate(names)])

    def _scan_source(self, info: TableInfo, alias: str, alias_node=None) -> tuple[PlanNode, Source]:
        """A table or file as a source; ``t AS a(x, y)`` names its first columns x and y (the
        names were ignored: ``v AS _(p)`` had no column p)."""
        files = list(info.arrow_schema.names)
        names = list(files)
        col_aliases = alias_node.args.get("columns") if alias_node is not None else None
        if col_aliases:
            if len(col_aliases) > len(names):
                raise PlanError(f"table {alias!r} has {len(names)} columns but {len(col_aliases)} names were given")
            for i, c in enumerate(col_aliases):
                names[i] = c.name
            names = _dedupe(names)
        cols = {}
        colmap = {}
        for c, u in zip(files, names):
            if c in info.unsupported:
                continue
            internal = self.fresh(f"{alias}.{u}")
            cols[u.lower()] = Col(internal, info.types[c])
            colmap[internal] = c
        return Scan(info, alias, colmap), Source(alias, cols, {u.lower(): info.unsupported[c] for c, u in zip(files, names)
                                                               if c in info.unsupported}, _shown(names))

    def _derived(self, rel: Rel, alias: str, alias_node) -> tuple[PlanNode, Source]:
        """A subquery or CTE as a source of named columns; a name given twice is renamed as
        DuckDB renames it (``a, a, a`` -> ``a, a_1, a_2``), so each column stays reachable."""
        names = [u for u, _ in rel.outputs]
        col_aliases = alias_node.args.get("columns") if alias_node is not None else None
        if alias_node is not None and alias_node.meta.get("one_column") and len(names) != 1:
            raise PlanError(f"a subquery compared with ANY / ALL must return one column, not {len(names)}")
        want = alias_node.meta.get("column_count") if alias_node is not None else None
        if want is not None and len(names) != want:
            raise PlanError(f"a row value of {want} fields compared with a subquery of {len(names)} columns")
        if col_aliases:
            if len(col_aliases) > len(names):
                raise PlanError(f"{alias} has {len(names)} columns but {len(col_aliases)} names were given")
            for i, c in enumerate(col_aliases):
                names[i] = c.name
        names = _dedupe(names)
        sch = rel.plan.schema
        exprs = []
        cols = {}
        for u, (_, internal) in zip(names, rel.outputs):
            new = self.fresh(f"{alias}.{u}")
            exprs.append((new, Col(internal, sch[internal])))
            cols[u.lower()] = Col(new, sch[internal])
        return Project(rel.plan, tuple(exprs)), Source(alias, cols, shown=_shown(names))


    def _plan_from(self, items, specs, conjuncts: list[Expr], ctx: Ctx) -> PlanNode:
        """Join the FROM items: each run of inner joins (the plan so far counting as one item
        after an outer join) is one InnerJoins with its ON conditions, for the ``order_joins``
        rule to order; outer joins keep their written order. The WHERE conjuncts filter the
        whole; where each one goes is the ``push_filters`` rules' decision."""
        for j in specs:
            kind = ((j.kind or "").upper() if j is not None else "")
            if kind in ("ASOF", "POSITIONAL") or (kind in ("SEMI", "ANTI") and (j.side or "")):
                raise UnsupportedError(f"{(j.side or '').upper() + ' ' if j.side else ''}{kind} JOIN")
        # DuckDB's t SEMI / ANTI JOIN u ON ...: the rows of t with (without) a match; u's
        # columns are not in the result. They keep their written place, as outer joins do.
        sides = [((j.side or j.kind or "").lower() if j is not None else "") for j in specs]
        sides = [s if s in ("left", "right", "full", "semi", "anti") else "" for s in sides]
        # An ASOF join keeps its written place too (its right side's rows are not a set to
        # reorder against: which one is nearest depends on all of them).
        sides = [("asof " + (s or "inner")) if j is not None and is_asof(j) else s for s, j in zip(sides, specs)]
        plan = None
        k = 0
        while k < len(items):
            if sides[k]:
                pushed = self._on_pushed.get(id(specs[k])) if specs[k] is not None else None
                extra: list[Expr] = []
                if pushed:
                    joined = self._on_subqueries(plan, items[k], pushed, specs[k], ctx)
                    if joined is None:  # a subquery reading both sides: by row ids (sluice.sql.outer_on)
                        plain = [x for c in self._join_conditions(specs[k], ctx) for x in E.conjuncts(c)]
                        hidden = self._semi_sources.get(id(specs[k]))  # a SEMI / ANTI join's right side
                        if hidden is not None:
                            ctx.scope.add(hidden)
                        try:
                            plan = self.outer_join_by_pairs(plan, items[k], sides[k], plain, pushed, ctx)
                        finally:
                            if hidden is not None:
                                ctx.scope.remove(hidden)
                        k += 1
                        continue
                    plan, items[k], extra = joined
                conds = [x for c in self._join_conditions(specs[k], ctx) + extra for x in E.conjuncts(c)]
                if sides[k].startswith("asof "):
                    plan = asof_join(plan, items[k], sides[k][5:], conds)
                else:
                    plan = self._outer_join(plan, items[k], sides[k], conds)
                merged = self._using_coalesce.get(id(specs[k])) if specs[k] is not None else None
                if merged:  # FULL JOIN ... USING: each merged column is COALESCE(left, right)
                    keep = tuple((c, Col(c, t)) for c, t in plan.schema.items())
                    plan = Project(plan, keep + tuple(merged))
                k += 1
                continue
            run = [] if plan is None else [plan]
            conds = []
            while k < len(items) and not sides[k]:
                run.append(items[k])
                if specs[k] is not None:
                    conds += [x for c in self._join_conditions(specs[k], ctx) for x in E.conjuncts(c)]
                k += 1
            plan = InnerJoins(tuple(run), tuple(conds)) if len(run) > 1 or conds else run[0]
        if conjuncts:
            plan = Filter(plan, E.and_all(conjuncts))
        return plan

    def _on_subqueries(self, plan: PlanNode, item: PlanNode, conds: list[exp.Expression], j: exp.Join,
                       ctx: Ctx) -> tuple[PlanNode, PlanNode, list[Expr]] | None:
        """A LEFT / RIGHT / FULL JOIN's ON conjuncts with subqueries: each conjunct's subqueries
        joined (a value or mark column, as in a WHERE with OR: ``_join_subqueries``) to the side
        they read -- a join that keeps every row of that side and adds a column -- and the
        conjunct an ordinary ON condition over both sides and those columns. Their outer
        references are resolved seeing one side's sources at a time (the joined item, else
        everything before it). None where a subquery reads both sides (or the joined item is
        not one source): the caller joins by row ids instead (``sluice.sql.outer_on``), and
        nothing registered here is kept."""
        scope = ctx.scope
        alias = j.this.alias_or_name.lower() if isinstance(j.this, (exp.Table, exp.Subquery)) else None
        at = [i for i, s in enumerate(scope.sources) if s.alias == alias]
        if len(at) != 1:
            return None
        sides = {"item": scope.sources[at[0]:at[0] + 1], "plan": scope.sources[:at[0]]}
        before = dict(ctx.subs)
        out = []
        for c in conds:
            for side in ("item", "plan"):
                subs = dict(ctx.subs)
                try:
                    joined = self._with_sources(sides[side], ctx, lambda: self._join_subqueries(
                        c, item if side == "item" else plan, ctx))
                except PlanError:
                    ctx.subs.clear()
                    ctx.subs.update(subs)
                    continue
                if side == "item":
                    item = joined
                else:
                    plan = joined
                break
            else:
                ctx.subs.clear()
                ctx.subs.update(before)
                return None
            out.append(_join_condition(self.expr(c, ctx)))
        return plan, item, out

    def _with_sources(self, visible: list[Source], ctx: Ctx, fn):
        """``fn()`` with only ``visible`` of this scope's sources in sight (and no USING
        columns unless all are): a name of another source is then no column, not that one."""
        scope = ctx.scope
        merged, order, local = scope.merged, list(scope.sources), set(scope.local)
        for s in order:
            if s not in visible:
                scope.remove(s)
        if len(visible) != len(order):
            scope.merged = {}
        try:
            return fn()
        finally:
            scope.merged = merged
            scope.sources[:] = order
            scope.local.clear()
            scope.local.update(local)

    def _outer_join(self, plan: PlanNode, p: PlanNode, side: str, conds: list[Expr]) -> PlanNode:
        """One LEFT / RIGHT / FULL / SEMI / ANTI join in written order: its equalities between
        the sides are its keys, the rest its residual (``push_filters`` moves a conjunct on the
        null-extended side alone below the join)."""
        kind = {"left": "left", "right": "right", "full": "full", "semi": "semi", "anti": "anti"}[side]
        left_names = set(plan.schema)
        right_names = set(p.schema)
        lk, rk, resid = [], [], []
        for c in conds:
            pair = equi_pair(c, left_names, right_names)
            if pair is not None:
                lk.append(pair[0])
                rk.append(pair[1])
            else:
                resid.append(c)
        return Join(plan, p, kind, tuple(lk), tuple(rk), E.and_all(resid))

    def _join_conditions(self, j: exp.Join, ctx: Ctx) -> list[Expr]:
        on = self._join_on[id(j)] if id(j) in self._join_on else j.args.get("on")
        out = []
        if on is not None:
            if _contains_subquery(on):
                raise UnsupportedError("subqueries in the ON condition of an outer join")
            hidden = self._semi_sources.get(id(j))
            if hidden is not None:
                ctx.scope.add(hidden)
            try:
                out.append(_join_condition(self.expr(on, ctx)))
            finally:
                if hidden is not None:
                    ctx.scope.remove(hidden)
        pairs = self._using_pairs.get(id(j), [])
        for i, (lcol, rcol) in enumerate(pairs):
            # ASOF ... USING (k, t): the last column is the inequality, as DuckDB reads it
            op = ">=" if is_asof(j) and i == len(pairs) - 1 else "="
            out.append(E.make_compare(op, lcol, rcol))
        return out

    def _using(self, j: exp.Join, left: list[Source], right: Source, scope: Scope) -> None:
        """JOIN ... USING (a, b) and NATURAL JOIN (every name both sides have): equality of
        each named column, the pair shown once, as DuckDB merges it: the left side's value for
        inner and LEFT joins, the right side's for RIGHT, COALESCE of both for FULL (computed
        above the join: ``_using_coalesce``)."""
        natural = _natural(j)
        if not j.args.get("using") and not natural:
            return
        side = (j.side or "").upper()
        if natural:
            left_names = {n for s in left for n in s.cols}
            names = [n for n in right.cols if n in left_names]
            if not names:
                raise PlanError(f"NATURAL JOIN with {right.alias!r}: no column names in common (use CROSS JOIN)")
        else:
            names = [i.name.lower() for i in j.args["using"]]
        pairs = []
        coalesced = []
        for name in names:
            hits = [s for s in left if name in s.cols]
            if name in scope.merged:
                lcol = scope.merged[name]
            elif len(hits) == 1:
                lcol = hits[0].cols[name]
                scope.merged_at[name] = lcol
            else:
                raise PlanError(f"USING column {name!r} is {'ambiguous' if hits else 'not'} on the left side")
            if name not in right.cols:
                raise PlanError(f"USING column {name!r} is not in {right.alias!r}")
            rcol = right.cols[name]
            pairs.append((lcol, rcol))
            if side == "RIGHT":
                scope.merged[name] = rcol
            elif side == "FULL":
                value = E.make_func("coalesce", [lcol, rcol])
                merged = Col(self.fresh(name), value.type)
                coalesced.append((merged.name, value))
                scope.merged[name] = merged
                scope.local.add(merged.name)
            else:
                scope.merged[name] = lcol
            scope.hidden.add((right.alias, name))
        self._using_pairs[id(j)] = pairs
        if coalesced:
            self._using_coalesce[id(j)] = coalesced


def _dedupe(names: list[str]) -> list[str]:
    """DuckDB's names for a subquery's columns: a name already taken (ignoring case) gets the
    first free suffix ``_1``, ``_2``, ...."""
    seen: set[str] = set()
    out = []
    for n in names:
        new, k = n, 0
        while new.lower() in seen:
            k += 1
            new = f"{n}_{k}"
        seen.add(new.lower())
        out.append(new)
    return out


def _shown(names: list[str]) -> dict[str, str]:
    """The names that ``*`` shows as written (``MyCol``), where they are not lower case."""
    return {n.lower(): n for n in names if n != n.lower()}


def _join_condition(e: Expr) -> Expr:
    """An ON condition as a boolean: ``ON NULL`` matches no row (a NULL of no type is a NULL
    boolean); anything else not boolean is an error, not a residual of another type."""
    if e.type.kind == "null":
        return E.coerce(e, BOOL)
    e = as_boolean(e)  # as DuckDB: ON 1, ON a.x -- non-zero holds
    if e.type.kind != "bool":
        raise PlanError(f"JOIN ... ON needs a boolean condition, got {e.type}")
    return e
