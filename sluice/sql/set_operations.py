"""UNION, INTERSECT and EXCEPT [ALL] (and UNION BY NAME): the translator's set operations, each
input a Project onto shared fresh names with one type per column (mixed into
:class:`sluice.sql.translate.Translator`)."""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import NULL_TYPE, Col, Func, Lit
from sluice.plan.logical import Aggregate, AggCall, Filter, PlanNode, Project, Repeat, Union
from sluice.sql.literals import _untyped_null
from sluice.sql.scope import Rel
from sluice.types import INT64, supertype


class SetOperations:
    """Translator methods of set operations."""

    def union(self, ast: exp.Union, parent, corr) -> Rel:
        if corr is not None:
            raise UnsupportedError("correlated subquery over UNION")
        parts: list[exp.Expression] = []

        def flatten(n):
            if isinstance(n, exp.Union) and not any(n.args.get(k) for k in ("order", "limit", "offset", "with_")) \
                    and bool(n.args.get("distinct")) == bool(ast.args.get("distinct")) \
                    and bool(n.args.get("by_name")) == bool(ast.args.get("by_name")):
                flatten(n.left)
                flatten(n.right)
            else:
                parts.append(n)
        # The root's own ORDER BY / LIMIT apply to the whole union (below), not to a branch.
        flatten(ast.left)
        flatten(ast.right)
        fixed, names, outputs = self._set_inputs("UNION", parts, parent, by_name=bool(ast.args.get("by_name")))
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

    def _set_inputs(self, kind: str, parts: list[exp.Expression], parent,
                    by_name: bool = False) -> tuple[list[Project], list[str], list]:
        """The inputs of a set operation as Projects onto shared fresh names, each column cast
        to one type (an untyped ``NULL as x`` takes the other inputs' type); the output names.
        ``by_name`` (UNION [ALL] BY NAME): columns matched by name (:func:`_by_name`)."""
        rels = [self.query(p, parent, None) for p in parts]
        if by_name:
            rels = self._by_name(rels)
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
            t0.append(supertype(typed, f"{kind} column {i + 1}", strings_win=True) if typed
                      else inputs[0].exprs[i][1].type)
        fixed = []
        for p, nl in zip(inputs, nulls):
            exprs = []
            for i, ((n, e), t) in enumerate(zip(p.exprs, t0)):
                if nl[i] and e.type != t:
                    e = Func("cast_null", (e,), t)
                if e.type != t:
                    e = Func("cast", (e,), t, (t,))
                exprs.append((n, e))
            fixed.append(Project(p.child, tuple(exprs)))
        outputs = [(u, n) for (u, _), n in zip(rels[0].outputs, names)]
        return fixed, names, outputs

    def _by_name(self, rels: list[Rel]) -> list[Rel]:
        """UNION [ALL] BY NAME's inputs as inputs matched by position: every input has every
        name any input has (case-insensitively, in the order names first appear), NULL where it
        lacks one, as in DuckDB."""
        order: dict[str, str] = {}
        for r in rels:
            seen = set()
            for user, _ in r.outputs:
                key = user.lower()
                if key in seen:
                    raise PlanError(f"UNION BY NAME: column {user!r} appears twice in one input")
                seen.add(key)
                order.setdefault(key, user)
        out = []
        for r in rels:
            sch = r.plan.schema
            have = {user.lower(): internal for user, internal in r.outputs}
            exprs, outputs = [], []
            for key, user in order.items():
                name = self.fresh(user)
                exprs.append((name, Col(have[key], sch[have[key]]) if key in have else Lit(None, NULL_TYPE)))
                outputs.append((user, name))
            out.append(Rel(Project(r.plan, tuple(exprs)), outputs))
        return out
