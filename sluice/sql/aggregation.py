"""Aggregation: GROUP BY (with ROLLUP / CUBE / GROUPING SETS and GROUPING()), aggregate calls
(FILTER, DISTINCT), holistic aggregates computed through a window (MEDIAN, quantiles,
STRING_AGG, ARG_MIN/ARG_MAX), and expressions above an aggregation. Window calls are planned in
:mod:`sluice.sql.windows`.
"""

from __future__ import annotations



from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.coverage import construct_name
from sluice.sql.dialect import ArgMaxNull, ArgMinNull, wrong_arguments
from sluice.expr import build as E
from sluice.expr.functions.logic import as_boolean
from sluice.expr.nodes import NULL_TYPE, Col, Expr, Lit
from sluice.plan.logical import (Aggregate, AggCall, PlanNode, Project, Window, WindowCall,
                                 Shared, SortKey, Union)
from sluice.physical.key_ranges import column_statistics_range
from sluice.types import BOOL, FLOAT64, INT32, INT64, STRING, is_bit
from sluice.sql.scope import Ctx
from sluice.exec.aggregate_functions import registered
from sluice.sql.syntax import AGG_FUNCS, _BOOL_AGGS, HOLISTIC, is_bitstring_agg, is_entropy, is_histogram, is_mad, is_named_holistic, _outer_aggs, _set_members, _grouping_sets
from sluice.sql.literals import _replace_subexprs




class Aggregation:
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
            elif (got := self._nested_extreme(plan, node, keys, bool(set_keys), ctx)) is not None:
                plan, call = got
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

    def _nested_extreme(self, plan, node, keys, grouping_sets: bool, ctx: Ctx):
        """MIN / MAX of a LIST, STRUCT or MAP: the group's rows sorted by the value (DuckDB's order
        of nested values, :mod:`sluice.kernels.nested_keys`; NULLs last), the first row's value,
        as ARG_MIN does; None when ``node`` is no MIN / MAX of a nested value."""
        cond = None
        if isinstance(node, exp.Filter):  # agg(x) FILTER (WHERE c): agg(CASE WHEN c THEN x END)
            cond, node = node.expression.this, node.this
        if not isinstance(node, (exp.Min, exp.Max)) or node.this is None:
            return None
        arg = self._order_free(node.this, ctx)
        if isinstance(arg, exp.Distinct) or _outer_aggs(arg):
            return None
        value = self.expr(arg, ctx)
        if not value.type.is_nested:
            return None
        if cond is not None:
            c = as_boolean(self.expr(cond, ctx))
            if c.type.kind != "bool":
                raise PlanError(f"FILTER needs a boolean condition, got {c.type}")
            value = E.make_func("case", [c, value, Lit(None, value.type)])
        what = "MIN" if isinstance(node, exp.Min) else "MAX"
        if grouping_sets:
            raise UnsupportedError(f"{what} of a nested value with ROLLUP / CUBE / GROUPING SETS")
        missing = E.make_func("is_null", [value])
        order = (SortKey(missing, True, False), SortKey(value, isinstance(node, exp.Min), False))
        call = WindowCall("first_value", (value,), (), ("rows", ("unbounded", 0), ("unbounded", 0)))
        wname = self.fresh(node.sql(dialect="duckdb"))
        plan = Window(plan, tuple(k for _, k in keys), order, ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _holistic(self, plan, node, keys, grouping_sets: bool, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        """Aggregates that need a group's rows in an order: a Window over the rows partitioned
        by the group keys computes the group's result on every row, and the aggregation takes
        that per-group constant (its MIN; a group with no rows has none, so NULL as in SQL).

        - MEDIAN / QUANTILE_CONT / QUANTILE_DISC / PERCENTILE_* WITHIN GROUP: rows sorted by
          the argument, NULLs last; the quantile picked from the non-NULL count.
        - ARG_MIN / ARG_MAX (MIN_BY / MAX_BY): rows with a NULL value or key last, then by the
          key; the first row's value (ARG_MIN_NULL / ARG_MAX_NULL: only a NULL key puts a row last).
        - STRING_AGG / LISTAGG / GROUP_CONCAT: rows in the ORDER BY given (else as they come),
          the non-NULL values joined by the separator (DISTINCT: each value once).
        - FIRST / LAST (x ORDER BY k): the first row's value in that order (LAST: reversed).
        - MODE: rows sorted by the value; the longest run of equal values.
        """
        name = node.sql(dialect="duckdb")
        what = name.split("(")[0].upper()
        if isinstance(node, exp.Filter):
            return self._filtered_holistic(plan, node, keys, grouping_sets, ctx)
        if grouping_sets:
            raise UnsupportedError(f"{what} with ROLLUP / CUBE / GROUPING SETS")
        args = list(node.this.iter_expressions()) + [node.expression] if isinstance(node, exp.WithinGroup) \
            else list(node.iter_expressions())
        if any(_outer_aggs(a) for a in args):
            raise PlanError("aggregate functions cannot be nested")
        part = tuple(k for _, k in keys)
        wname = self.fresh(name)
        if isinstance(node, (exp.ArgMin, exp.ArgMax)):
            # ARG_MIN(x, k ORDER BY o): of the rows tied on k, the first by o (DuckDB's order)
            key_ast, ties = node.expression, ()
            if isinstance(key_ast, exp.Order):
                ties = tuple(self._sort_key(o, self.expr(o.this, ctx)) for o in key_ast.expressions)
                key_ast = key_ast.this
            value, key = self.expr(node.this, ctx), self.expr(key_ast, ctx)
            if isinstance(node.this, exp.Distinct):
                raise UnsupportedError(f"DISTINCT in {what}")
            if isinstance(node, (ArgMinNull, ArgMaxNull)):  # a NULL value is an answer; a NULL key is skipped
                missing = E.make_func("is_null", [key])
            else:
                missing = E.make_bool("or", [E.make_func("is_null", [value]), E.make_func("is_null", [key])])
            order = (SortKey(missing, True, False), SortKey(key, isinstance(node, exp.ArgMin), False)) + ties
            # the first row after sorting; NULL when every row misses its value or key
            value = E.make_func("case", [missing, Lit(None, value.type), value])
            call = WindowCall("first_value", (value,), (), ("rows", ("unbounded", 0), ("unbounded", 0)))
            plan = Window(plan, part, order, ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        if isinstance(node, exp.GroupConcat):
            return self._string_agg(plan, node, part, wname, ctx)
        if isinstance(node, exp.ArrayAgg):
            return self._list_agg(plan, node, part, wname, ctx)
        if isinstance(node, (exp.First, exp.Last)):
            # FIRST / LAST (x ORDER BY k): the value (NULL too) of the group's first / last row
            # by k; without an ORDER BY the first row is whichever arrives first: refused.
            if not isinstance(node.this, exp.Order) or node.this.this is None:
                raise UnsupportedError(f"{what} without ORDER BY (the first row depends on the order rows "
                                       "arrive; FIRST(x ORDER BY k) or ARG_MIN(x, k) are defined)")
            value = self.expr(node.this.this, ctx)
            order = tuple(self._sort_key(o, self.expr(o.this, ctx)) for o in node.this.expressions)
            if isinstance(node, exp.Last):
                order = tuple(SortKey(k.expr, not k.ascending, not k.nulls_first) for k in order)
            call = WindowCall("first_value", (value,), (), ("rows", ("unbounded", 0), ("unbounded", 0)))
            plan = Window(plan, part, order, ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        if is_bitstring_agg(node):
            return self._bitstring_agg(plan, node, part, wname, ctx)
        if is_histogram(node):
            # HISTOGRAM: the group's rows sorted by the value; each run of equal non-NULL
            # values is a map entry (the value, its count), keys ascending as DuckDB's
            e = self.expr(self._order_free(node.expressions[0], ctx), ctx)
            if e.type.kind == "null":
                raise UnsupportedError("HISTOGRAM of an untyped NULL")
            call = WindowCall("histogram", (e,))
            plan = Window(plan, part, (SortKey(e, True, False),), ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        if is_entropy(node):
            # ENTROPY: the group's rows sorted by the value; each run of equal non-NULL values
            # of count c among N adds -(c/N) log2(c/N) (NULLs skipped; -0.0 is 0.0, as DuckDB's map)
            e = self.expr(self._order_free(node.expressions[0], ctx), ctx)
            if e.type.kind == "null":
                e = Lit(None, INT32)
            if e.type.is_float:
                e = E.make_arith("+", e, Lit(0.0, e.type))
            call = WindowCall("entropy", (e,))
            plan = Window(plan, part, (SortKey(e, True, False),), ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        if is_mad(node):
            # MAD: the median of the distances from the median (decimals and REALs in their
            # own type, other numbers as DOUBLE, as DuckDB)
            e = self.expr(self._order_free(node.expressions[0], ctx), ctx)
            if not e.type.is_numeric:
                raise UnsupportedError(f"MAD of {e.type}")
            m1, dev = self.fresh("median"), self.fresh("deviation")
            c1 = WindowCall("quantile_cont", (e,), (0.5,))
            plan = Window(plan, part, (SortKey(e, True, False),), ((m1, c1),))
            x = e if e.type.kind in ("decimal", "float32") else E.make_func("cast", [e], (FLOAT64,))
            d = E.make_func("abs", [E.make_arith("-", x, Col(m1, c1.type))])
            plan = Project(plan, tuple((k, Col(k, t)) for k, t in plan.schema.items()) + ((dev, d),))
            c2 = WindowCall("quantile_cont", (Col(dev, d.type),), (0.5,))
            plan = Window(plan, part, (SortKey(Col(dev, d.type), True, False),), ((wname, c2),))
            return plan, AggCall("min", Col(wname, c2.type))
        if isinstance(node, exp.Mode):
            # MODE: the most frequent non-NULL value (the least of those tied), from the
            # partition sorted by the value: its longest run of peers.
            if node.this is None:
                raise wrong_arguments("MODE")
            if isinstance(node.this, exp.Order):
                return self._ordered_mode(plan, node.this, part, wname, ctx)
            if isinstance(node.this, exp.Distinct):
                raise UnsupportedError("DISTINCT in MODE")
            e = self.expr(node.this, ctx)
            call = WindowCall("mode", (e,))
            plan = Window(plan, part, (SortKey(e, True, False),), ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        distinct_arg = node.this.this if isinstance(node, exp.WithinGroup) else self._order_free(node.this, ctx)
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
            arg = self._order_free(node.this, ctx)
            q_ast = None if isinstance(node, exp.Median) else node.args.get(
                "quantile" if isinstance(node, exp.Quantile) else "expression")
            if q_ast is None and not isinstance(node, exp.Median):
                raise wrong_arguments(what)  # (quantile_cont(x) took 0.5: DuckDB has no default)
        q = 0.5
        if q_ast is not None:
            qe = self.expr(self._order_free(q_ast, ctx), ctx)  # quantile(x, q ORDER BY k): its Order holds q
            if not isinstance(qe, Lit) or qe.value is None or not qe.type.is_numeric:
                raise UnsupportedError(f"a quantile that is not one constant number in {name}")
            q = float(qe.value) / (10 ** qe.type.scale if qe.type.kind == "decimal" else 1)
            if not -1 <= q <= 1:
                raise PlanError(f"the quantile must be between -1 and 1 in {name}")
            if q < 0 and cont:
                raise UnsupportedError(f"a negative quantile in {name}")
        e = self.expr(arg, ctx)
        if cont and not e.type.is_numeric:
            raise UnsupportedError(f"{what} of {e.type}")
        # DuckDB: a negative quantile counts from the top -- |q| of the values sorted descending
        call = WindowCall("quantile_cont" if cont else "quantile_disc", (e,), (abs(q),))
        plan = Window(plan, part, (SortKey(e, q >= 0, False),), ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _filter_condition(self, node: exp.Filter, ctx: Ctx) -> Expr:
        """The boolean of ``agg(...) FILTER (WHERE c)`` (a NULL constant as a boolean)."""
        if _outer_aggs(node.expression):
            raise PlanError("aggregate functions cannot be nested")
        cond = self.expr(node.expression.this, ctx)
        cond = E.coerce(cond, BOOL) if cond.type.kind == "null" else as_boolean(cond)
        if cond.type.kind != "bool":
            raise PlanError(f"FILTER needs a boolean condition, got {cond.type}")
        return cond

    def _filtered_holistic(self, plan, node: exp.Filter, keys, grouping_sets: bool, ctx: Ctx):
        """``agg(x) FILTER (WHERE c)`` of a holistic aggregate: its window partitioned by the
        group keys and ``c IS TRUE`` too, so the rows passing c are a partition of their own;
        the aggregation takes the result of those rows only (NULL where none passes, as
        DuckDB). HISTOGRAM / ENTROPY / BITSTRING_AGG (other answers over no row) are refused."""
        inner = node.this
        what = node.this.sql(dialect="duckdb").split("(")[0].upper()
        if not isinstance(inner, (exp.Mode, exp.Median, exp.Quantile, exp.PercentileCont, exp.PercentileDisc,
                                  exp.ArgMin, exp.ArgMax, exp.GroupConcat, exp.ArrayAgg, exp.First,
                                  exp.Last)) and not is_mad(inner):
            raise UnsupportedError(f"FILTER on {what}")
        cond = self._filter_condition(node, ctx)
        passes = E.make_func("coalesce", [cond, Lit(False, BOOL)])
        plan, call = self._holistic(plan, inner, [*keys, (self.fresh("filter"), passes)], grouping_sets, ctx)
        return plan, AggCall(call.func, E.make_func("case", [passes, call.arg, Lit(None, call.arg.type)]))

    def _order_free(self, arg, ctx: Ctx):
        """The argument of an aggregate whose answer does not depend on the order of its rows,
        an ORDER BY in its call (``sum(x ORDER BY k)``) dropped as DuckDB drops it; its keys are
        still bound (a wrong name stays an error) and under DISTINCT must be the argument, as
        DuckDB requires."""
        if not isinstance(arg, exp.Order):
            return arg
        for o in arg.expressions:
            if _outer_aggs(o.this):
                raise PlanError("aggregate functions cannot be nested")
            self.expr(o.this, ctx)
        inner = arg.this
        if isinstance(inner, exp.Distinct) and any(o.this not in inner.expressions for o in arg.expressions):
            raise PlanError("in a DISTINCT aggregate, ORDER BY expressions must appear in the argument list")
        return inner

    def _ordered_mode(self, plan, order: exp.Order, part, wname: str, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        """MODE(x ORDER BY k): the most frequent non-NULL value, of those tied the one seen first
        in that order (DuckDB's). Three windows: each row's position by k; per (group, value)
        its count and first position; per group the value with the largest count, then the
        least first position. MODE(DISTINCT x ORDER BY ...) gives each value one vote: the
        first non-NULL value in that order."""
        arg = order.this
        keys = tuple(self._sort_key(o, self.expr(o.this, ctx)) for o in order.expressions)
        whole = ("rows", ("unbounded", 0), ("unbounded", 0))
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise wrong_arguments("MODE")
            if any(o.this not in arg.expressions for o in order.expressions):
                raise PlanError("in a DISTINCT aggregate, ORDER BY expressions must appear in the argument list")
            e = self.expr(arg.expressions[0], ctx)
            call = WindowCall("first_value", (e,), (), whole)
            plan = Window(plan, part, (SortKey(E.make_func("is_null", [e]), True, False),) + keys, ((wname, call),))
            return plan, AggCall("min", Col(wname, call.type))
        e = self.expr(arg, ctx)
        pos, count, first = self.fresh("position"), self.fresh("value_count"), self.fresh("first_position")
        number = WindowCall("row_number", (), (), ("rows", ("unbounded", 0), ("current", 0)))
        plan = Window(plan, part, keys, ((pos, number),))
        counted = (WindowCall("count", (e,), (), whole), WindowCall("min", (Col(pos, number.type),), (), whole))
        plan = Window(plan, part + (e,), (), ((count, counted[0]), (first, counted[1])))
        best = (SortKey(E.make_func("is_null", [e]), True, False), SortKey(Col(count, counted[0].type), False, True),
                SortKey(Col(first, counted[1].type), True, False))
        call = WindowCall("first_value", (e,), (), whole)
        plan = Window(plan, part, best, ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _ordered_argument(self, node, ctx: Ctx):
        """(argument node, ORDER BY keys, DISTINCT) of an ordered aggregate's ``x [ORDER BY ...]``
        or ``DISTINCT x [ORDER BY ...]`` (STRING_AGG, LIST / ARRAY_AGG)."""
        arg, order = node.this, ()
        if isinstance(arg, exp.Order):
            order = tuple(self._sort_key(o, self.expr(o.this, ctx)) for o in arg.expressions)
            arg = arg.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise UnsupportedError("DISTINCT aggregates over several arguments")
            arg = arg.expressions[0]
        return arg, order, distinct

    def _string_agg(self, plan, node: exp.GroupConcat, part, wname: str, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        arg, order, distinct = self._ordered_argument(node, ctx)
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

    def _bitstring_agg(self, plan, node, part, wname: str, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        """BITSTRING_AGG(x, min, max): per group a BIT of max - min + 1 bits, bit x - min set for
        each non-NULL x (a value outside the range raises, as in DuckDB); NULL for a group without
        values. Without min and max DuckDB takes them from the statistics of the rows it
        aggregates: a constant's own value, or the Parquet file's min / max of a column read
        whole (as DuckDB reading the file does); under a filter DuckDB narrows its statistics by
        rules of its own, so that and any other expression is refused."""
        args = [self.expr(a, ctx) for a in node.expressions]
        e = args[0]
        if isinstance(node.expressions[0], exp.Distinct):
            raise UnsupportedError("DISTINCT in BITSTRING_AGG")
        if not (e.type.is_integer or e.type.kind == "null"):
            raise UnsupportedError(f"BITSTRING_AGG of {e.type} (sluice has it for integers)")
        if len(args) == 1 and isinstance(e, Col) and e.type.is_integer \
                and column_statistics_range(plan, e.name) is not None:
            lo, hi = column_statistics_range(plan, e.name)
        elif len(args) == 1:
            if not (isinstance(e, Lit) and e.value is not None):
                raise UnsupportedError("BITSTRING_AGG without its min and max of other than a column read whole "
                                       "(DuckDB takes them from statistics it narrows by its own rules): "
                                       "BITSTRING_AGG(x, min, max)")
            lo = hi = int(e.value)
        else:
            bounds = args[1:]
            if not all(isinstance(b, Lit) and b.value is not None and b.type.is_integer for b in bounds):
                raise UnsupportedError("BITSTRING_AGG with a min or max that is not a constant integer")
            lo, hi = (int(b.value) for b in bounds)
        if e.type.kind == "null":
            e = Lit(None, INT64)
        call = WindowCall("bitstring_agg", (e,), (lo, hi))
        plan = Window(plan, part, (), ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

    def _list_agg(self, plan, node: exp.ArrayAgg, part, wname: str, ctx: Ctx) -> tuple[PlanNode, AggCall]:
        """LIST / ARRAY_AGG (x [ORDER BY ...]): the group's values, NULLs kept, in the ORDER BY
        given (else as the rows come); DISTINCT keeps each value once (NULL too), ordered by the
        value, as DuckDB. A window over the group's rows builds the list once per group."""
        arg, order, distinct = self._ordered_argument(node, ctx)
        if arg is None:
            raise wrong_arguments("LIST")
        e = self.expr(arg, ctx)
        if e.type.kind == "null":
            raise UnsupportedError("LIST of an untyped NULL")
        if distinct:
            if order and not all(k.expr == e for k in order):
                raise UnsupportedError("LIST(DISTINCT x ORDER BY another expression)")
            order = order or (SortKey(e, True, False),)
        call = WindowCall("list", (e,), (distinct,))
        plan = Window(plan, part, order, ((wname, call),))
        return plan, AggCall("min", Col(wname, call.type))

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
