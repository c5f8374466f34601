"""Aggregation: GROUP BY (with ROLLUP / CUBE / GROUPING SETS and GROUPING()), aggregate calls
(FILTER, DISTINCT), and expressions above an aggregation. Holistic aggregates (MEDIAN,
quantiles, STRING_AGG, ARG_MIN/ARG_MAX, LIST...) are planned through a window in
:mod:`sluice.sql.holistic_aggregates`; window calls in :mod:`sluice.sql.windows`.
"""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import NULL_TYPE, Col, Expr, Lit
from sluice.plan.logical import (Aggregate, AggCall, PlanNode, Project, Shared, Union)
from sluice.types import BOOL, FLOAT64, INT32, INT64, is_bit
from sluice.sql.scope import Ctx
from sluice.exec.aggregate_functions import registered
from sluice.sql.syntax import AGG_FUNCS, _BOOL_AGGS, HOLISTIC, is_entropy, is_named_holistic, _outer_aggs, _set_members, _grouping_sets
from sluice.sql.literals import _replace_subexprs
from sluice.sql.holistic_aggregates import HolisticAggregates


class Aggregation(HolisticAggregates):
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def _grouping_set_union(self, plan, keys, aggs, set_keys, grouping_nodes, ctx, agg_cols) -> PlanNode:
        """ROLLUP / CUBE / GROUPING SETS, the keys outside a set as NULL, UNION ALL of the sets.
        Where every aggregate merges, the input is aggregated once by all keys and each set
        from those groups (:meth:`_mergeable_states`); otherwise one aggregation per set over
        the input (computed once, shared). GROUPING(...) is a constant of each branch: bit j
        (from the last argument) set when argument j is not grouped in that set."""
        calls = []
        for node in grouping_nodes:
            idx = self._grouping_keys(node, keys, ctx)
            name = self.fresh(node.sql(dialect="duckdb"))
            calls.append((name, idx))
            agg_cols[id(node)] = Col(name, INT64)

        def grouping_consts(members):
            out = []
            for name, idx in calls:
                bits = 0
                for i in idx:
                    bits = bits * 2 + (0 if i in members else 1)
                out.append((name, Lit(bits, INT64)))
            return out

        def keys_of(members):
            return [(n, Col(n, e.type) if i in members else Lit(None, e.type)) for i, (n, e) in enumerate(keys)]

        branches = []
        states = self._mergeable_states(aggs)
        if states is not None:
            # Every aggregate merges (SUM, COUNT, MIN, MAX, AVG as SUM / COUNT): aggregate the
            # input once by every key, then each set from those groups -- one pass over the input
            # instead of one per set, and no copy of the input kept.
            parts, finals = states
            finest = Shared(Aggregate(plan, tuple(keys), tuple(parts)), self.fresh("grouping sets groups"))
            for members in set_keys:
                src, whole = finest, len(members) == len(keys)
                if not whole:
                    sub = tuple((n, Col(n, e.type)) for i, (n, e) in enumerate(keys) if i in members)
                    src = Aggregate(finest, sub, tuple((n, AggCall(registered(c.func).rolls_up, Col(n, c.type))) for n, c in parts))
                exprs = keys_of(members) + [(n, f(whole)) for n, f in finals] + grouping_consts(members)
                branches.append(Project(src, tuple(exprs)))
        else:
            shared = Shared(plan, self.fresh("grouping sets input"))
            for members in set_keys:
                sub = tuple(k for i, k in enumerate(keys) if i in members)
                agg = Aggregate(shared, sub, tuple(aggs))
                exprs = keys_of(members) + [(n, Col(n, a.type)) for n, a in aggs] + grouping_consts(members)
                branches.append(Project(agg, tuple(exprs)))
        return branches[0] if len(branches) == 1 else Union(tuple(branches))

    def _grouping_keys(self, node: exp.Grouping, keys, ctx: Ctx) -> list[int]:
        """The GROUP BY key each GROUPING argument is (repeats allowed), as DuckDB checks them:
        each must be a key, and at most 63 of them (the result is a BIGINT with one bit per
        argument; 64 once overflowed int64, an internal error, and more answered)."""
        if len(node.expressions) > 63:
            raise PlanError(f"GROUPING with {len(node.expressions)} arguments: at most 63")
        idx = []
        for a in node.expressions:
            e = self.expr(a, ctx)
            match = [i for i, (_, k) in enumerate(keys) if k == e]
            if not match:
                raise PlanError(f"GROUPING argument {a.sql()} is not a GROUP BY key")
            idx.append(match[0])
        return idx

    def _mergeable_states(self, aggs):
        """For grouping sets: the aggregates as states a coarser grouping can merge -- (name,
        call) over the input -- and each aggregate's final expression over them (a function of
        whether the states come straight from the finest grouping); None where one does not
        merge (DISTINCT, variances, ...)."""
        parts: dict[AggCall, str] = {}

        def part(call: AggCall) -> Col:
            if call not in parts:
                parts[call] = self.fresh(str(call))
            return Col(parts[call], call.type)

        finals = []
        for name, call in aggs:
            if call.distinct or (call.func != "avg" and registered(call.func).rolls_up is None):
                return None
            if call.func == "avg":  # rolls up as its SUM over its COUNT
                s, c = part(AggCall("sum", call.arg)), part(AggCall("count", call.arg))
                finals.append((name, lambda whole, s=s, c=c: E.make_arith("/", s, c)))
            elif registered(call.func).counts:
                c = part(call)
                # A count merged over no groups (the grand total of an empty input) is 0.
                finals.append((name, lambda whole, c=c: c if whole else E.make_func("coalesce", [c, Lit(0, INT64)])))
            else:
                v = part(call)
                finals.append((name, lambda whole, v=v: v))
        return [(n, c) for c, n in parts.items()], finals

    def _aggregate(self, plan, ctx: Ctx, select_items, group, agg_nodes, alias_map, corr, grouping_nodes=(),
                   domain_keys=()):
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
                if isinstance(g, exp.Literal) and not g.is_string and g.this.isdigit():
                    # (a position; GROUP BY 1.5 groups by that constant, as in DuckDB)
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
        if domain_keys and set_keys:
            raise UnsupportedError("correlated subquery with ROLLUP / CUBE / GROUPING SETS")
        for d in domain_keys:  # a correlated subquery's groups are per outer value (sluice.sql.dependent)
            if d not in group_map:
                keys.append((d.name, d))
                group_map[d] = Col(d.name, d.type)
        aggs: list[tuple[str, AggCall]] = []
        seen: dict[AggCall, Col] = {}
        agg_cols: dict[int, Col] = {}
        for node in agg_nodes:
            if isinstance(node, HOLISTIC) or is_named_holistic(node) or (
                    isinstance(node, exp.Filter) and (isinstance(node.this, HOLISTIC) or is_named_holistic(node.this))):
                plan, call = self._holistic(plan, node, keys, bool(set_keys), ctx)
                plan = self._on_first_rows(plan, call)
            elif (got := self._nested_extreme(plan, node, keys, bool(set_keys), ctx)) is not None:
                plan, call = got
                plan = self._on_first_rows(plan, call)
            elif (halves := self._timestamp_halves(node, ctx)) is not None:
                cols = []
                for part in halves:  # AVG of timestamps: two exact sums and a count (timestamp_average)
                    if part not in seen:
                        name = self.fresh(node.sql(dialect="duckdb"))
                        aggs.append((name, part))
                        seen[part] = Col(name, part.type)
                    cols.append(seen[part])
                agg_cols[id(node)] = E.make_func("timestamp_average", cols, (halves[0].arg.args[0].type,))
                continue
            else:
                call = self._agg_call(node, ctx)
            if call not in seen:
                name = self.fresh(node.sql(dialect="duckdb"))
                aggs.append((name, call))
                seen[call] = Col(name, call.type)
            agg_cols[id(node)] = seen[call]
            if is_entropy(node):  # over no rows (an empty table's one group) 0, not NULL, as DuckDB
                agg_cols[id(node)] = E.make_func("coalesce", [seen[call], Lit(0.0, FLOAT64)])
        if set_keys:
            out = self._grouping_set_union(plan, keys, aggs, set_keys, grouping_nodes, ctx, agg_cols)
        else:
            out = Aggregate(plan, tuple(keys), tuple(aggs))
            if grouping_nodes:  # without grouping sets every key is grouped: GROUPING is 0
                sch = out.schema
                zeros = []
                for node in grouping_nodes:
                    self._grouping_keys(node, keys, ctx)
                    agg_cols[id(node)] = Col(self.fresh(node.sql(dialect="duckdb")), INT64)
                    zeros.append((agg_cols[id(node)].name, Lit(0, INT64)))
                out = Project(out, tuple((n, Col(n, t)) for n, t in sch.items()) + tuple(zeros))
        post = Ctx(ctx.scope, aggs=agg_cols, group_map=group_map, subs=dict(ctx.subs),
                   aliases=dict(alias_map))
        return out, post

    def _timestamp_halves(self, node, ctx: Ctx) -> tuple[AggCall, AggCall, AggCall] | None:
        """AVG(ts) of TIMESTAMP / TIMESTAMPTZ values as the sums of their high and low halves
        and their count (``expr/functions/timestamp_average.py``); None for every other call."""
        if not isinstance(node, exp.Avg) or isinstance(node.this, (exp.Distinct, exp.Order)) or _outer_aggs(node.this):
            return None  # (AVG(x ORDER BY k): the ordered-aggregate rules, :meth:`_agg_call`)
        e = self.expr(node.this, ctx)
        if e.type.kind not in ("timestamp", "timestamptz"):
            return None
        return (AggCall("sum", E.make_func("timestamp_half", [e], ("high",))),
                AggCall("sum", E.make_func("timestamp_half", [e], ("low",))), AggCall("count", e))

    def _agg_call(self, node, ctx: Ctx) -> AggCall:
        if isinstance(node, exp.Filter):
            # agg(x) FILTER (WHERE c) is agg(CASE WHEN c THEN x END): rows failing c count as NULL.
            call = self._agg_call(node.this, ctx)
            cond = self._filter_condition(node, ctx)
            if call.func == "count_star":
                return AggCall("count", E.make_func("case", [cond, Lit(1, INT64), Lit(None, NULL_TYPE)]))
            return AggCall(call.func, E.make_func("case", [cond, call.arg, Lit(None, NULL_TYPE)]), call.distinct)
        func = AGG_FUNCS[type(node)]
        ordered = isinstance(node.this, exp.Order)
        arg = self._order_free(node.this, ctx)
        distinct = False
        if isinstance(arg, exp.Distinct):
            distinct = True
            if len(arg.expressions) != 1:
                raise UnsupportedError("DISTINCT aggregates over several arguments")
            arg = arg.expressions[0]
        if func == "count" and (arg is None or isinstance(arg, exp.Star)):
            return AggCall("count_star", None)
        if arg is None:
            raise PlanError(f"{node.sql('duckdb').upper()} needs an argument")
        if _outer_aggs(arg):
            raise PlanError("aggregate functions cannot be nested")
        e = self.expr(arg, ctx)
        if ordered:
            refuse_float_order(func, e)
        if _only_outer(e, ctx):
            raise UnsupportedError(f"{node.sql('duckdb')} aggregates only columns of an enclosing query inside a "
                                   "subquery (SQL makes it an aggregate of that query)")
        if e.type.is_nested and func != "count":  # COUNT (DISTINCT: by order keys) only
            raise UnsupportedError(f"aggregate {func.upper()}{' DISTINCT' if distinct else ''} of a "
                                   f"{e.type.kind.upper()} column")
        if func in _BITWISE:
            return AggCall(func, _bitwise_argument(e, node), distinct)
        if func == "decimal_average" and e.type.kind != "decimal":
            raise PlanError(f"DECIMAL_AVERAGE requires a DECIMAL argument, got {e.type}")
        numeric = registered(func).numeric
        e = _typed_null_argument(e, numeric, isinstance(node, _BOOL_AGGS))
        if func == "avg" and e.type.kind in ("timestamp", "timestamptz"):  # (plain AVG: _timestamp_halves)
            raise UnsupportedError(f"{node.sql('duckdb')} of {e.type.kind.upper()} values with DISTINCT, FILTER or ORDER BY")
        if func == "avg" and e.type.kind == "date":
            raise UnsupportedError("AVG of DATE values (DuckDB answers a TIMESTAMP_NS, a type sluice does not have)")
        if numeric and e.type.kind == "interval":
            raise UnsupportedError(f"{func.upper()} of INTERVAL values")
        if numeric and not (e.type.is_numeric or e.type.kind == "bool"):
            raise PlanError(f"{func.upper()} needs a number, got {e.type} in {node.sql()}")
        if numeric and e.type.kind == "bool" and func != "sum" and not isinstance(node, _BOOL_AGGS):
            # DuckDB sums booleans, and binds no AVG, PRODUCT, variance or SKEWNESS of them
            raise PlanError(f"{func.upper()} needs a number, got BOOLEAN")
        if isinstance(node, _BOOL_AGGS) and e.type.kind != "bool":
            raise PlanError(f"{node.sql('duckdb')} needs a boolean, got {e.type}")
        if func == "product":  # DuckDB multiplies DOUBLEs, whatever the argument's type
            if e.type.kind == "bool":
                raise UnsupportedError("PRODUCT of BOOLEAN values")
            e = E.make_func("cast", [e], (FLOAT64,))
        return AggCall(func, e, distinct)

    def _post(self, node: exp.Expression, ctx: Ctx) -> Expr:
        """Translate an expression above an aggregation."""
        e = self.expr(node, ctx)
        e = _replace_subexprs(e, ctx.group_map or {})
        allowed = {c.name for c in (ctx.group_map or {}).values()} | \
            {n for c in (ctx.aggs or {}).values() for n in c.columns()} | {c.name for c in ctx.subs.values()}
        bad = e.columns() - allowed
        if bad:
            raise PlanError(f"column {sorted(bad)[0]} must appear in GROUP BY or be used in an aggregate")
        return e


_BITWISE = ("bit_and", "bit_or", "bit_xor")


def _bitwise_argument(e: Expr, node) -> Expr:
    """BIT_AND / BIT_OR / BIT_XOR's argument: an integer (DuckDB binds NULL as a BIGINT) or a
    BIT value; every other type is DuckDB's binder error."""
    if e.type.kind == "null":
        return E.coerce(e, INT64)
    if not (e.type.is_integer or is_bit(e.type)):
        raise PlanError(f"{node.sql('duckdb').split('(')[0].upper()} needs an integer, got {e.type}")
    return e


#: Aggregates computed in floating point whatever their argument: their answer depends on the
#: order rows are added in.
_FLOAT_ACCUMULATING = ("product", "stddev_samp", "stddev_pop", "var_samp", "var_pop", "skewness")


def refuse_float_order(func: str, e: Expr) -> None:
    """``sum(x ORDER BY k)`` over floating-point values: DuckDB adds them in that order (2^53 + 1
    + 1 is 2^53 one way, 2^53 + 2 the other), sluice's sums are pairwise and merged across chunks
    and ranks, so the ORDER BY cannot be honoured: refused. Exact sums (integers, decimals),
    COUNT, MIN, MAX and the holistic ones are the same in any order and drop it."""
    if func in _FLOAT_ACCUMULATING or (func in ("sum", "avg") and e.type.is_float):
        raise UnsupportedError(f"{func.upper()} of {e.type} with ORDER BY (floating-point sums follow the order "
                               "rows are added in, which sluice does not keep; drop the ORDER BY)")


def _typed_null_argument(e: Expr, numeric: bool, boolean: bool) -> Expr:
    """An aggregate's argument of DuckDB's NULL type (``sum(NULL)``) as a NULL of the type the
    aggregate takes: a number (INTEGER) or a boolean; MIN, MAX, COUNT... keep it as it is."""
    if e.type.kind != "null" or not (numeric or boolean):
        return e
    return E.coerce(e, BOOL if boolean else INT32)


def _only_outer(e: Expr, ctx: Ctx) -> bool:
    """Whether ``e`` reads columns and all of them come from an enclosing query (outer columns,
    or the domain standing for them: sluice.sql.dependent)."""
    cols = e.columns()
    if not cols:
        return False
    domain = {c.name for s in ctx.scope.sources if s.alias == "\x00domain" for c in s.cols.values()}
    return not (cols & (ctx.scope.local - domain))
