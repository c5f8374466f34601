"""Correlated subqueries in general: computed over the domain of their outer references.

A subquery that reads its enclosing query's columns (``t.b`` in ``(select count(*) from u
where u.b > t.b)``) is computed once per distinct combination of those values -- the domain
``D = SELECT DISTINCT t.b FROM <the outer rows>`` -- as if ``D`` were one more table of its
FROM clause: each outer reference reads ``D``'s column, aggregations also group by them, LIMIT
counts per value. The result carries ``D``'s columns and joins back to the outer rows on them,
NULL matching NULL. This is the dependent join of Neumann and Kemper's "Unnesting Arbitrary
Queries" (and DuckDB's): one translation for every shape of subquery -- non-equality
correlation, outer references in the select list, in HAVING, two levels down -- rather than
one rewrite per shape.

Where every outer reference is an equality in the subquery's WHERE (TPC-H Q2, Q17, Q20) no
domain is needed: the subquery is grouped by its side of those equalities and joined on them.

A scalar aggregate (aggregates, no GROUP BY) has one row even where no row matches: COUNT is 0,
SUM NULL, and its select expression is computed from those (the classic COUNT bug: ``(select
count(*) + 1 ...)`` is 1 there, not NULL). Its groups exist only for matched values, so what an
unmatched outer row gets comes from :class:`~sluice.sql.scope.EmptyGroup`; EXISTS and IN over
such a subquery are computed from its one value in the same way.

The outer references are found by translating the subquery once through an
:class:`~sluice.sql.scope.Outer` scope that records them; a reference found only on a later
pass (behind an error of the first) starts another pass with the larger domain.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sluice.errors import PlanError, SluiceError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Col, Expr, Lit
from sluice.plan.logical import Aggregate, AggCall, Join, JoinKind, PlanNode, Project, Scan, Filter, OneRow, Shared
from sluice.sql.scope import Correlation, Ctx, Domain, EmptyGroup, Outer, Rel, Source
from sluice.sql.syntax import _outer_aggs, _outer_windows
from sluice.sql.windows import null_safe_zero
from sluice.types import BOOL, INT64

#: Passes over one subquery, each finding outer references the last could not reach; real
#: queries need two.
_MAX_PASSES = 6


@dataclass
class Correlated:
    """A translated subquery and how it joins its outer rows: uncorrelated (``corr`` and
    ``domain`` None), on equality pairs (``corr``), or over a ``domain`` of ``left``'s rows."""

    rel: Rel
    left: PlanNode
    corr: Correlation | None
    domain: Domain | None
    empty: EmptyGroup | None
    refs: dict[str, Col]


def unwrap(body: exp.Expression) -> exp.Expression:
    while isinstance(body, (exp.Subquery, exp.Paren)) and not body.args.get("alias"):
        body = body.this
    return body


def scalar_aggregate(body: exp.Expression) -> bool:
    """A SELECT with aggregates and no GROUP BY: one row, whatever its input."""
    if not isinstance(body, exp.Select) or body.args.get("group") is not None:
        return False
    return any(_outer_aggs(it) for it in body.expressions) or body.args.get("having") is not None


def _grouped_per_key(body: exp.Expression) -> bool:
    """Whether grouping the subquery's result by its side of equality correlations gives
    each outer value its own rows: nothing in it looks at all rows at once (LIMIT, windows,
    DISTINCT ON)."""
    if not isinstance(body, exp.Select):
        return False
    if body.args.get("limit") is not None or body.args.get("offset") is not None:
        return False
    d = body.args.get("distinct")
    if d is not None and d.args.get("on") is not None:
        return False
    parts = list(body.expressions) + [body.args.get("qualify"), body.args.get("order")]
    return not any(_outer_windows(p) for p in parts if p is not None)


def _col_names(e: Expr) -> list[str]:
    """The column names ``e`` reads, once per reference."""
    if isinstance(e, Col):
        return [e.name]
    return [n for a in getattr(e, "args", ()) if isinstance(a, Expr) for n in _col_names(a)]


def _cheap(plan: PlanNode) -> bool:
    """A plan read twice costs less than holding it (a scan, filtered and projected)."""
    return all(isinstance(n, (Scan, Filter, Project, OneRow)) for n in plan.walk())


def null_safe_keys(left: list[Expr], right: list[Expr]) -> tuple[list[Expr], list[Expr]]:
    """Join keys under which NULL matches NULL: each key as ``(k IS NULL, coalesce(k, zero))``."""
    lk: list[Expr] = []
    rk: list[Expr] = []
    for a, b in zip(left, right):
        zero = null_safe_zero(b.type)
        if zero is None:
            raise UnsupportedError(f"a correlated subquery over a {b.type} outer value")
        lk += [E.make_func("is_null", [a]), E.make_func("coalesce", [a, zero])]
        rk += [E.make_func("is_null", [b]), E.make_func("coalesce", [b, zero])]
    return lk, rk


class Dependent:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def _correlated(self, body: exp.Expression, plan: PlanNode, ctx: Ctx, residual_ok: bool = False) -> Correlated:
        """Translate subquery ``body`` of a query whose rows so far are ``plan``. ``residual_ok``
        (semi / anti / mark joins, which test each pair): other WHERE conditions on outer
        columns may stay a residual of the join instead of needing the domain."""
        body = unwrap(body)
        outer = Outer(ctx.scope)
        corr = Correlation()
        rel, err, empty = self._pass(body, outer, corr, None)
        refs = dict(outer.seen)
        if not refs:
            if err is not None:
                raise err
            return Correlated(rel, plan, None, None, empty, {})
        pair_cols = set().union(*(o.columns() for o, _ in corr.pairs)) if corr.pairs else set()
        in_where: dict[str, int] = {}
        for e in [o for o, _ in corr.pairs] + (corr.residual if residual_ok else []):
            for name in _col_names(e):
                if name in refs:
                    in_where[name] = in_where.get(name, 0) + 1
        resid_cols = set().union(*(r.columns() for r in corr.residual)) & set(refs) if corr.residual else set()
        if err is None and (residual_ok or not corr.residual) and (pair_cols or corr.residual) \
                and set(refs) <= (pair_cols | resid_cols) <= set(plan.schema) \
                and outer.uses == in_where and _grouped_per_key(body):
            # every outer reference is in a WHERE condition (an equality, or a residual of a
            # join that tests each pair), read nowhere else
            return Correlated(rel, plan, corr, None, empty, refs)
        for _ in range(_MAX_PASSES):
            missing = sorted(n for n in refs if n not in plan.schema)
            if missing:
                raise PlanError(f"a subquery refers to {missing[0]}, which the query around it does not "
                                "have there (a column that is not grouped, or of a query further out)")
            left = plan if _cheap(plan) else Shared(plan, self.fresh("outer rows"))
            dcols = {n: Col(self.fresh(f"domain {n}"), c.type) for n, c in refs.items()}
            domain = Domain(Aggregate(left, tuple((d.name, refs[n]) for n, d in dcols.items()), ()), dcols)
            outer = Outer(ctx.scope, dcols)
            rel, err, empty = self._pass(body, outer, Correlation(), domain)
            new = {n: c for n, c in outer.seen.items() if n not in refs}
            if new:
                refs.update(new)
                continue
            if err is not None:
                raise err
            return Correlated(rel, left, None, domain, empty, refs)
        raise UnsupportedError("a subquery whose outer references could not be resolved")

    def _pass(self, body, outer: Outer, corr: Correlation, domain: Domain | None):
        """One translation of ``body``: (rel, None, empty) or (None, the error, None)."""
        empty = EmptyGroup() if scalar_aggregate(body) else None
        key = id(body)
        if domain is not None:
            self._domains[key] = domain
        if empty is not None:
            self._empty_groups[key] = empty
        try:
            rel = self.query(body, outer, corr)
            if domain is not None and key in self._domains:
                raise UnsupportedError(f"a correlated {body.key.upper()} subquery")
            return rel, None, (empty if empty is not None and empty.present else None)
        except SluiceError as e:
            return None, e, None
        finally:
            self._domains.pop(key, None)
            self._empty_groups.pop(key, None)

    def _scalar_value(self, body: exp.Expression, plan: PlanNode, ctx: Ctx) -> tuple[PlanNode, Expr, Expr | None]:
        """Join subquery ``body`` to ``plan`` as a value per row: (the plan, the value, and
        whether a row exists -- None when one always does)."""
        tr = self._correlated(body, plan, ctx)
        rel = tr.rel
        if len(rel.outputs) != 1:
            raise PlanError(f"a subquery used as a value must return one column, not {len(rel.outputs)}")
        sch = rel.plan.schema
        v = Col(rel.outputs[0][1], sch[rel.outputs[0][1]])
        if tr.corr is None and tr.domain is None:
            out: PlanNode = Join(plan, rel.plan, JoinKind.CROSS, single_row=True)
        elif tr.domain is None:
            lk = [o for o, _ in tr.corr.pairs]
            rk = [Col(k, sch[k]) for k in tr.corr.inner_key_cols]
            right = rel.plan if tr.empty is not None else self._single_rows(rel.plan, rk, v)
            out = Join(plan, right, JoinKind.LEFT, tuple(lk), tuple(rk))
        else:
            outer = [tr.refs[n] for n in tr.domain.cols]
            dcols = list(tr.domain.cols.values())
            right = rel.plan if tr.empty is not None else self._single_rows(rel.plan, dcols, v)
            lk, rk = null_safe_keys(outer, dcols)
            out = Join(tr.left, right, JoinKind.LEFT, tuple(lk), tuple(rk))
        if tr.empty is None:
            return out, v, None
        emp = tr.empty
        back = {d.name: tr.refs[n] for n, d in (tr.domain.cols.items() if tr.domain else ())}
        present = E.make_func("is_not_null", [Col(emp.present, BOOL)])
        uncorrelated = tr.corr is None and tr.domain is None  # its one group always exists
        value: Expr = v
        nothing = E.substitute(emp.values[0], back)
        if not uncorrelated and not (isinstance(nothing, Lit) and nothing.value is None):
            value = E.make_func("case", [present, v, nothing])
        exists = None
        if emp.having is not None:
            exists = Col(emp.having_col, BOOL) if uncorrelated else \
                E.make_func("case", [present, Col(emp.having_col, BOOL), E.substitute(emp.having, back)])
            value = E.make_func("case", [exists, value, Lit(None, value.type)])
        return out, value, exists

    def _lateral(self, j: exp.Join, left: PlanNode, ctx: Ctx):
        """``left [LEFT] JOIN LATERAL (S) alias [ON true]``: S for each of ``left``'s rows,
        decorrelated as any subquery; a scalar aggregate S gives one row per outer row
        (unmatched ones from :class:`EmptyGroup`). Returns the joined plan and S's source."""
        lat = j.this
        side = (j.side or "").upper()
        on = j.args.get("on")
        if side not in ("", "LEFT") or (j.kind or "").upper() not in ("", "INNER", "CROSS") or \
                (on is not None and not (isinstance(on, exp.Boolean) and on.this)):
            raise UnsupportedError("LATERAL joins other than [LEFT] JOIN LATERAL ... ON true")
        body = unwrap(lat.this)
        tr = self._correlated(body, left, ctx)
        rel = tr.rel
        sch = rel.plan.schema
        kind = "left" if side == "LEFT" else "inner"
        emp = tr.empty
        if tr.corr is None and tr.domain is None:
            out: PlanNode = Join(left, rel.plan, JoinKind.LEFT if side == "LEFT" else JoinKind.CROSS)
        else:
            if tr.domain is None:
                lk = [o for o, _ in tr.corr.pairs]
                rk = [Col(k, sch[k]) for k in tr.corr.inner_key_cols]
            else:
                lk, rk = null_safe_keys([tr.refs[n] for n in tr.domain.cols], list(tr.domain.cols.values()))
            out = Join(tr.left, rel.plan, JoinKind.LEFT if emp is not None else kind, tuple(lk), tuple(rk))
        values = {internal: Col(internal, sch[internal]) for _, internal in rel.outputs}
        if emp is not None and (tr.corr is not None or tr.domain is not None):
            back = {d.name: tr.refs[n] for n, d in (tr.domain.cols.items() if tr.domain else ())}
            present = E.make_func("is_not_null", [Col(emp.present, BOOL)])
            for (_, internal), nothing in zip(rel.outputs, emp.values):
                values[internal] = E.make_func("case", [present, values[internal], E.substitute(nothing, back)])
            if emp.having is not None:
                kept = E.make_func("case", [present, Col(emp.having_col, BOOL), E.substitute(emp.having, back)])
                if side == "LEFT":
                    values = {k: E.make_func("case", [kept, v, Lit(None, v.type)]) for k, v in values.items()}
                else:
                    out = Filter(out, kept)
        elif emp is not None and emp.having is not None:  # uncorrelated: its one row, if HAVING keeps it
            kept = Col(emp.having_col, BOOL)
            if side == "LEFT":
                values = {k: E.make_func("case", [kept, v, Lit(None, v.type)]) for k, v in values.items()}
            else:
                out = Filter(out, kept)
        alias = lat.args.get("alias")
        name = alias.name.lower() if alias is not None and alias.name else self.fresh("lateral")
        names = [u for u, _ in rel.outputs]
        for i, c in enumerate((alias.args.get("columns") if alias is not None else None) or []):
            names[i] = c.name
        keep = tuple((k, Col(k, t)) for k, t in left.schema.items())
        exprs, cols = [], {}
        for u, (_, internal) in zip(names, rel.outputs):
            new = self.fresh(f"{name}.{u}")
            exprs.append((new, values[internal]))
            cols[u.lower()] = Col(new, values[internal].type)
        return Project(out, keep + tuple(exprs)), Source(name, cols)

    def _single_rows(self, plan: PlanNode, keys: list[Col], v: Col) -> PlanNode:
        """``plan``'s one row per key; a key with more raises, as DuckDB's scalar subqueries do."""
        n, one = self.fresh("subquery rows"), self.fresh("subquery value")
        agg = Aggregate(plan, tuple((k.name, k) for k in keys),
                        ((one, AggCall("min", v)), (n, AggCall("count_star", None))))
        checked = E.make_func("single_row", [Col(one, v.type), Col(n, INT64)])
        return Project(agg, tuple((k.name, k) for k in keys) + ((v.name, checked),))
