"""Subquery decorrelation: EXISTS / NOT EXISTS -> semi / anti join, IN / NOT IN -> semi /
(null-aware) anti join, subqueries under OR / CASE / a select item -> mark joins, scalar
subqueries -> a one-row cross join or, when correlated, an aggregate grouped by the correlation
keys joined on them.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sluice.errors import PlanError
from sluice.expr import build as E
from sluice.expr.nodes import Col, Expr, Func, Lit
from sluice.plan.logical import (Filter, Join, JoinKind, PlanNode, Project, Shared)
from sluice.types import BOOL, INT32
from sluice.sql.dependent import Correlated, null_safe_keys, scalar_aggregate, unwrap
from sluice.sql.scope import Scope, Correlation, Ctx
from sluice.sql.syntax import _level_nodes




class Subqueries:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

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
        if isinstance(inner, exp.Exists) and not scalar_aggregate(unwrap(inner.this)):
            tr = self._correlated(inner.this, plan, ctx, residual_ok=True)
            return self._semi(tr, [], negate, null_aware=False)
        if isinstance(inner, exp.In) and inner.args.get("query") is not None \
                and not scalar_aggregate(unwrap(inner.args["query"])):
            lhs = self.expr(inner.this, ctx) if ctx.aggs is None else self._post(inner.this, ctx)
            tr = self._correlated(inner.args["query"], plan, ctx, residual_ok=not negate)
            if len(tr.rel.outputs) != 1:
                raise PlanError("subquery in IN must return one column")
            return self._semi(tr, [lhs], negate, null_aware=negate)
        # A predicate with subqueries inside: join each (scalar ones as a value, EXISTS / IN
        # as a mark column), then filter.
        plan = self._join_subqueries(node, plan, ctx)
        e = self._post(node, ctx) if ctx.aggs is not None else self.expr(node, ctx)
        if where_scope is not None and corr is not None and (e.columns() - where_scope.local - {c.name for c in ctx.subs.values()}):
            self._correlate(e, where_scope, corr)
            return plan
        return Filter(plan, e)

    def _semi(self, tr: Correlated, lhs: list[Expr], negate: bool, null_aware: bool):
        """``tr``'s outer rows with (``negate``: without) a matching subquery row; IN's ``lhs``
        against its one column."""
        rel = tr.rel
        sch = rel.plan.schema
        if tr.domain is not None:
            lk, rk = null_safe_keys([tr.refs[n] for n in tr.domain.cols], list(tr.domain.cols.values()))
            resid = None
        else:
            c = tr.corr or Correlation()
            lk = [o for o, _ in c.pairs]
            rk = [Col(k, sch[k]) for k in c.inner_key_cols]
            resid = E.and_all(c.residual)
        if lhs:
            out = rel.outputs[0][1]
            v = Col(out, sch[out])
            if lhs[0].type.kind == "null" or v.type.kind == "null":
                # an untyped NULL on either side takes the other's type (INTEGER where both are)
                t = v.type if v.type.kind != "null" else lhs[0].type if lhs[0].type.kind != "null" else INT32
                lhs = [E.coerce(lhs[0], t)]
                if v.type != t:
                    plan = Project(rel.plan, tuple((k, E.coerce(Col(k, u), t) if k == out else Col(k, u))
                                                   for k, u in sch.items()))
                    rel = replace(rel, plan=plan)
                    sch = plan.schema
                    v = Col(out, t)
            if (lhs[0].type.kind == "string") != (v.type.kind == "string"):
                raise PlanError(f"IN compares {lhs[0].type} with {v.type}")
            if null_aware and lk:
                # NOT IN per outer row: a row goes where its own subquery rows hold an equal
                # value or a NULL (or it is NULL and they are not empty) -- an anti join on
                # the correlation keys alone; a null-aware one would look at all rows at once.
                unknown = E.make_bool("or", [E.make_compare("=", lhs[0], v), E.make_func("is_null", [lhs[0]]),
                                             E.make_func("is_null", [v])])
                return Join(tr.left, rel.plan, JoinKind.ANTI, tuple(lk), tuple(rk), E.and_all([resid, unknown]))
            lk, rk = list(lk) + lhs, list(rk) + [v]
        return Join(tr.left, rel.plan, JoinKind.ANTI if negate else JoinKind.SEMI, tuple(lk), tuple(rk), resid,
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
        boolean mark column (a matching subquery row exists; NULL where IN's answer is unknown)."""
        body = unwrap(n.this if isinstance(n, exp.Exists) else n.args["query"])
        lhs = [] if isinstance(n, exp.Exists) else [self.expr(n.this, ctx) if ctx.aggs is None else self._post(n.this, ctx)]
        name = self.fresh("mark")
        if scalar_aggregate(body):
            # One row per outer row, whatever matches: EXISTS is whether HAVING keeps it, IN
            # compares with its one value.
            plan, value, exists = self._scalar_value(body, plan, ctx)
            kept = Lit(True, BOOL) if exists is None else E.make_func("coalesce", [exists, Lit(False, BOOL)])
            mark = kept if not lhs else E.make_func("case", [kept, E.make_compare("=", lhs[0], value), Lit(False, BOOL)])
            keep = tuple((k, Col(k, t)) for k, t in plan.schema.items())
            ctx.subs[id(n)] = Col(name, BOOL)
            return Project(plan, keep + ((name, mark),))
        tr = self._correlated(body, plan, ctx, residual_ok=not lhs)
        null_aware = False
        if lhs:
            if len(tr.rel.outputs) != 1:
                raise PlanError("subquery in IN must return one column")
            if tr.corr is not None or tr.domain is not None:
                return self._correlated_in_mark(tr, lhs[0], n, ctx)
            null_aware = True
        join = self._semi(tr, lhs, False, null_aware)
        ctx.subs[id(n)] = Col(name, BOOL)
        return replace(join, kind=JoinKind.MARK, mark=name)

    def _correlated_in_mark(self, tr: Correlated, lhs: Expr, n: exp.In, ctx: Ctx) -> PlanNode:
        """A correlated ``x IN (subquery)`` as a value: NULL-aware per outer row, over that
        row's own subquery rows -- TRUE where one equals ``x``, else NULL where one is NULL or
        ``x`` is NULL (and there are some), else FALSE. Two mark joins on the correlation keys
        (one also on ``x``; one keeping the pairs where either side is NULL) and a CASE."""
        rel = tr.rel
        shared = Shared(rel.plan, self.fresh("in subquery rows"))
        tr = replace(tr, rel=replace(rel, plan=shared))
        equal = self._semi(tr, [lhs], False, null_aware=False)
        hit, unknown, name = self.fresh("in match"), self.fresh("in unknown"), self.fresh("mark")
        equal = replace(equal, kind=JoinKind.MARK, mark=hit)
        keys = self._semi(tr, [], False, null_aware=False)
        out = rel.outputs[0][1]
        v = Col(out, shared.schema[out])
        nulls = E.make_bool("or", [E.make_func("is_null", [lhs]), E.make_func("is_null", [v])])
        either = replace(keys, left=equal, kind=JoinKind.MARK, mark=unknown,
                         residual=E.and_all([keys.residual, nulls]))
        value = E.make_func("case", [Col(hit, BOOL), Lit(True, BOOL),
                                     E.make_func("case", [Col(unknown, BOOL), Lit(None, BOOL), Lit(False, BOOL)])])
        keep = tuple((k, Col(k, t)) for k, t in equal.schema.items() if k != hit)
        ctx.subs[id(n)] = Col(name, BOOL)
        return Project(either, keep + ((name, value),))

    def _scalar_subquery(self, sq: exp.Subquery, plan: PlanNode, ctx: Ctx) -> PlanNode:
        plan, value, _ = self._scalar_value(sq.this, plan, ctx)
        if not isinstance(value, Col):
            name = self.fresh("subquery value")
            keep = tuple((k, Col(k, t)) for k, t in plan.schema.items())
            plan = Project(plan, keep + ((name, value),))
            value = Col(name, value.type)
        ctx.subs[id(sq)] = value
        return plan
