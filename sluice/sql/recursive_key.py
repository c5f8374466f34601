"""WITH RECURSIVE t(k, v) USING KEY (k, min(v) [AS v]) AS (anchor UNION [ALL] step): the key
list bound as DuckDB's binder binds it -- column names are the key, each aggregate call
aggregates the column its alias (else its first argument, a column) names, every other column
keeps its key's last value -- and the CTE without a reference to itself (a keyed UNION ALL,
aggregated once).

Aggregates are those whose state merges across iterations (SUM, COUNT, MIN, MAX, AVG, the
variances, BOOL_AND / BOOL_OR, PRODUCT, APPROX_COUNT_DISTINCT); the order-dependent and
holistic ones (FIRST, STRING_AGG, LIST, ARG_MIN, quantiles ...) are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import Col
from sluice.plan.logical import Aggregate, AggCall, Union
from sluice.sql.scope import Ctx, Rel, Scope, Source
from sluice.sql.syntax import AGG_FUNCS


@dataclass(frozen=True)
class KeySpec:
    """USING KEY bound: the key columns and the aggregated ones (internal names)."""

    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]


def references_recurring(node: exp.Expression, name: str) -> bool:
    """Whether ``node`` reads ``recurring.<name>`` (DuckDB's table of every row so far)."""
    return any(t.name.lower() == name and str(t.args.get("db") or "").lower() == "recurring"
               and not t.args.get("catalog") for t in node.find_all(exp.Table))


class RecursiveKeys:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def _using_key(self, items: list[exp.Expression], anchor: Rel, name: str) -> KeySpec:
        """Bind the USING KEY list over the CTE's columns (those of ``anchor``)."""
        sch = anchor.plan.schema
        cols = {u.lower(): Col(i, sch[i]) for u, i in anchor.outputs}
        ctx = Ctx(Scope(None, [Source(name, cols)], {c.name for c in cols.values()}))
        keys: list[str] = []
        aggs: dict[str, AggCall] = {}
        for item in items:
            alias = item.alias if isinstance(item, exp.Alias) else None
            node = item.this if isinstance(item, exp.Alias) else item
            if isinstance(node, exp.Column):
                if alias is not None:
                    raise PlanError("in USING KEY, only direct calls to an aggregate function can have an alias")
                target = ctx.scope.resolve(node.table or None, node.name).name
                if target in aggs:
                    raise PlanError(f"column {node.name!r} cannot be used as both key and aggregate in USING KEY")
                if target not in keys:
                    keys.append(target)
                continue
            if type(node) not in AGG_FUNCS or node.meta.get("any_value"):
                if isinstance(node, (exp.AggFunc, exp.Anonymous)):
                    raise UnsupportedError(f"{_call_name(node)} in USING KEY (aggregates there: SUM, COUNT, MIN, MAX, "
                                           "AVG, variances, BOOL_AND / BOOL_OR, PRODUCT, APPROX_COUNT_DISTINCT)")
                raise PlanError(f"{node.sql('duckdb')!r} can't be used in the USING KEY clause: it has to be "
                                "either a column name as a key or a direct call to an aggregate function")
            if isinstance(node.this, exp.Distinct):
                raise PlanError("DISTINCT is not yet supported for aggregates in USING KEY")
            if alias is not None:
                target_col = cols.get(alias.lower())
                if target_col is None:
                    raise PlanError(f"could not find column with name {alias!r} to bind aggregate to")
            else:
                first = node.this
                if not isinstance(first, exp.Column):
                    raise PlanError("in USING KEY, an aggregate must either have a column reference or an alias")
                target_col = ctx.scope.resolve(first.table or None, first.name)
            target = target_col.name
            if target in aggs:
                raise PlanError(f"column {target_col.name!r} referenced multiple times in USING KEY")
            if target in keys:
                raise PlanError(f"column {target_col.name!r} cannot be used as both key and aggregate in USING KEY")
            aggs[target] = self._agg_call(node, ctx)
        if not keys:
            raise PlanError("USING KEY clause requires at least one key column")
        return KeySpec(tuple(keys), tuple((n, aggs[n]) for _, n in anchor.outputs if n in aggs))

    def _keyed_union(self, anchor_plan, step_plan, spec: KeySpec, outputs, name: str):
        """A USING KEY CTE that does not read itself: anchor UNION ALL step, aggregated by
        the key once. A column without an aggregate would take its key's last row, which
        depends on the order the two sides' rows arrive (DuckDB's is not defined): refused."""
        aggregated = dict(spec.aggs)
        last = [u for u, i in outputs if i not in spec.keys and i not in aggregated]
        if last:
            raise UnsupportedError(f"USING KEY in CTE {name!r} that does not read itself, with column {last[0]!r} "
                                   "not aggregated (its value would depend on the order rows arrive)")
        sch = anchor_plan.schema
        return Aggregate(Union((anchor_plan, step_plan)), tuple((k, Col(k, sch[k])) for k in spec.keys), spec.aggs)


def _call_name(node: exp.Expression) -> str:
    if node.meta.get("any_value"):
        return "ANY_VALUE"
    if isinstance(node, exp.Anonymous):
        return str(node.this).upper()
    names = type(node).sql_names() if hasattr(type(node), "sql_names") else []
    return names[0] if names else type(node).__name__.upper()
