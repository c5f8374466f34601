"""Subquery decorrelation: EXISTS / NOT EXISTS -> semi / anti join, IN / NOT IN -> semi /
(null-aware) anti join, subqueries under OR / CASE / a select item -> mark joins, scalar
subqueries -> a one-row cross join or, when correlated, an aggregate grouped by the correlation
keys joined on them.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.plan import expr as E
from sluice.plan.expr import Col, Expr, Func, Lit
from sluice.plan.logical import (Filter, Join, PlanNode, Project)
from sluice.types import BOOL, INT64
from sluice.sql.scope import Scope, Correlation, Rel, Ctx
from sluice.sql.syntax import _level_nodes, _outer_aggs




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
