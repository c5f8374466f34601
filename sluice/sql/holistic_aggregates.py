"""Holistic aggregates: the ones that need a group's rows in an order (MEDIAN and quantiles,
ARG_MIN / ARG_MAX, STRING_AGG, LIST, MODE, BITSTRING_AGG, MIN / MAX of nested values). Each is
planned as a Window over the group's rows whose per-group constant the aggregation then takes;
:class:`sluice.sql.aggregation.Aggregation` (GROUP BY and the plain calls) mixes this in.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.construct_names import construct_name
from sluice.sql.dialect import ArgMaxNull, ArgMinNull, wrong_arguments
from sluice.expr import build as E
from sluice.expr.functions.logic import as_boolean
from sluice.expr.nodes import Col, Expr, Lit
from sluice.plan.logical import (AggCall, PlanNode, Project, Window, WindowCall,
                                 SortKey)
from sluice.physical.key_ranges import column_statistics_range
from sluice.types import BOOL, FLOAT64, INT32, INT64, STRING
from sluice.sql.scope import Ctx
from sluice.sql.syntax import is_bitstring_agg, is_entropy, is_histogram, is_mad, _outer_aggs


class HolisticAggregates:
    """The Window plans of aggregates over a group's ordered rows (mixed into the Translator)."""

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

    @staticmethod
    def _on_first_rows(plan: PlanNode, agg: AggCall) -> PlanNode:
        """The Window on top of ``plan`` with the calls ``agg`` picks from put on each
        partition's first row only (``WindowCall.once``): the aggregation takes a group's value
        from a non-NULL row, and every other row then carries NULL, not the group's list, through
        what comes after (more windows and their sorts, spill pages)."""
        if not isinstance(plan, Window):
            return plan
        names = agg.arg.columns()
        calls = tuple((n, replace(c, once=True) if n in names else c) for n, c in plan.calls)
        return Window(plan.child, plan.partition, plan.order, calls)

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
