"""Window calls: OVER (PARTITION BY ... ORDER BY ... frame) planned as Window nodes, one per
distinct partitioning and order, or -- for aggregates over whole partitions -- as a grouped
aggregate joined back to its rows (as DuckDB runs them); frames checked and normalised here.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Col, Expr, Lit
from sluice.plan.logical import (DISTRIBUTION, OFFSETS, RANKING, Aggregate, AggCall, Join, JoinKind, MOMENTS, PlanNode, Project, Shared, SortKey,
                                 Window, WindowCall, WINDOW_AGGREGATES)
from sluice.sql.construct_names import construct_name
from sluice.sql.scope import Ctx
from sluice.sql.syntax import AGG_FUNCS, WINDOW_FUNCS
from sluice.sql.aggregation import refuse_float_order
from sluice.types import INT64


def _value_order(f: exp.Expression) -> exp.Order | None:
    """The ORDER BY in a FIRST_VALUE / LAST_VALUE / NTH_VALUE call (``first_value(x ORDER BY k)``;
    NTH_VALUE's holds its n), or None."""
    if not isinstance(f, (exp.FirstValue, exp.LastValue, exp.NthValue)):
        return None
    held = f.args.get("offset") if isinstance(f, exp.NthValue) else f.this
    return held if isinstance(held, exp.Order) else None


class Windows:
    """Translator methods for window calls (mixed into :class:`sluice.sql.translate.Translator`)."""

    def _windows(self, plan: PlanNode, nodes: list[exp.Window], ctx: Ctx, aggregated: bool) -> PlanNode:
        """Window nodes over ``plan``, one per distinct (PARTITION BY, ORDER BY); each call's
        result is bound to its AST node in ``ctx.subs``. Inputs that are not plain columns
        are computed first by one Project."""
        def tr(n):
            return self._post(n, ctx) if aggregated else self.expr(n, ctx)
        computed: dict[Expr, Col] = {}

        def column(e: Expr) -> Expr:
            if isinstance(e, (Col, Lit)):
                return e
            if e not in computed:
                computed[e] = Col(self.fresh("window_input"), e.type)
            return computed[e]
        specs: dict[tuple, list[tuple[str, WindowCall]]] = {}
        for w in nodes:
            if id(w) in ctx.subs:
                continue
            f = w.this.this if isinstance(w.this, exp.IgnoreNulls) else w.this
            if not isinstance(f, tuple(WINDOW_FUNCS) + tuple(AGG_FUNCS)):
                raise UnsupportedError(f"{construct_name(f)} as a window function")
            part = tuple(column(tr(p)) for p in w.args.get("partition_by") or [])
            order = w.args.get("order")
            keys = tuple(self._sort_key(o, column(tr(o.this))) for o in (order.expressions if order else []))
            inner = _value_order(f)
            if inner is not None:
                # FIRST_VALUE(x ORDER BY k) OVER (PARTITION BY p) (coverage: no ORDER BY or frame
                # of the window's own): the whole partition in k's order
                keys = tuple(self._sort_key(o, column(tr(o.this))) for o in inner.expressions)
            call = self._window_call(w, tr, column, keys)
            name = self.fresh(w.sql(dialect="duckdb"))
            specs.setdefault((part, keys), []).append((name, call))
            ctx.subs[id(w)] = Col(name, call.type)
        if computed:
            sch = plan.schema
            plan = Project(plan, tuple((n, Col(n, t)) for n, t in sch.items()) +
                           tuple((c.name, e) for e, c in computed.items()))
        for (part, keys), calls in specs.items():
            plan = self._partition_aggregates(plan, part, calls) if _whole_partition_aggregates(part, keys, calls) \
                else Window(plan, part, keys, tuple(calls))
        return plan

    def _partition_aggregates(self, plan: PlanNode, part: tuple[Expr, ...], calls) -> PlanNode:
        """Aggregates over whole partitions (``sum(x) over (partition by k)``) as DuckDB runs
        them: the input once (Shared), grouped by the partition keys, joined back to its rows
        on the keys, NULL matching NULL (each key as ``(k IS NULL, coalesce(k, zero))``). A
        Window operator would sort every row by the keys first (15-27x DuckDB at SF 1)."""
        shared = Shared(plan, self.fresh("window partitions"))
        names = [self.fresh("partition_key") for _ in part]
        agg = Aggregate(shared, tuple(zip(names, part)),
                        tuple((n, AggCall(c.func, c.args[0] if c.args else None)) for n, c in calls))
        lk, rk = [], []
        for k, name in zip(part, names):
            zero = null_safe_zero(k.type)
            other = Col(name, k.type)
            lk += [E.make_func("is_null", [k]), E.make_func("coalesce", [k, zero])]
            rk += [E.make_func("is_null", [other]), E.make_func("coalesce", [other, zero])]
        join = Join(shared, agg, JoinKind.INNER, tuple(lk), tuple(rk))
        keep = [(n, Col(n, t)) for n, t in plan.schema.items()] + [(n, Col(n, c.type)) for n, c in calls]
        return Project(join, tuple(keep))

    def _window_call(self, w: exp.Window, tr, column, keys: tuple[SortKey, ...]) -> WindowCall:
        if isinstance(w.this, exp.IgnoreNulls):  # FIRST_VALUE / LAST_VALUE / LAG / LEAD (coverage)
            call = replace(self._window_call_of(w.this.this, w, tr, column, keys), ignore_nulls=True)
        else:
            call = self._window_call_of(w.this, w, tr, column, keys)
        return _excluding(call, w.args.get("spec"))

    def _window_call_of(self, f: exp.Expression, w: exp.Window, tr, column, keys: tuple[SortKey, ...]) -> WindowCall:
        frame = self._frame(w.args.get("spec"), keys)
        if isinstance(f, tuple(AGG_FUNCS)):
            func = AGG_FUNCS[type(f)]
            if func not in WINDOW_AGGREGATES:
                raise UnsupportedError(f"{func.upper()} over a window")
            arg = f.this
            ordered = isinstance(arg, exp.Order)
            if ordered:  # sum(x ORDER BY k) OVER (...): the same in any order (exact sums), as DuckDB
                for o in arg.expressions:
                    tr(o.this)  # (still bound: a wrong name stays an error)
                arg = arg.this
            if isinstance(arg, exp.Distinct):
                raise UnsupportedError("DISTINCT in a window aggregate")
            if func == "count" and (arg is None or isinstance(arg, exp.Star)):
                return WindowCall("count_star", (), (), frame)
            e = tr(arg)
            if ordered:
                refuse_float_order(func, e)
            if e.type.is_nested and func != "count":  # (its values' order is not the codes')
                raise UnsupportedError(f"{func.upper()} of a {e.type.kind.upper()} value over a window")
            if func in ("sum", "avg") and e.type.kind == "interval":
                raise UnsupportedError(f"{func.upper()} of INTERVAL values over a window")
            if func in ("sum", "avg") and not (e.type.is_numeric or e.type.kind == "bool") or \
                    func in MOMENTS and not e.type.is_numeric:
                raise PlanError(f"{func.upper()} needs a number, got {e.type} in {f.sql()}")
            return WindowCall(func, (column(e),), (), frame)
        func = WINDOW_FUNCS[type(f)]
        if _value_order(f) is not None:  # x ORDER BY k: over the whole partition sorted by k
            f = f.copy()
            if isinstance(f.this, exp.Order):
                f.set("this", f.this.this)
            else:
                f.set("offset", f.args["offset"].this)
            frame = ("rows", ("unbounded", 0), ("unbounded", 0))
        if func in ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist"):
            return WindowCall(func, (), (), frame)
        if func == "ntile":
            return WindowCall(func, (), (self._constant_int(f.this, "NTILE", 1),), frame)
        value = column(tr(f.this))
        if func in ("lag", "lead"):
            offset = self._constant_int(f.args.get("offset"), func.upper(), 0) if f.args.get("offset") else 1
            args: tuple[Expr, ...] = (value,)
            default = f.args.get("default")
            if default is not None and not isinstance(default, exp.Null):
                d = tr(default)
                if d.type != value.type:  # DuckDB casts the default to the value's type
                    d = E.make_func("cast", [d], (value.type,))
                args = (value, column(d))
            return WindowCall(func, args, (offset,), frame)
        if func == "nth_value":
            return WindowCall(func, (value,), (self._constant_int(f.args.get("offset"), "NTH_VALUE", 1),), frame)
        return WindowCall(func, (value,), (), frame)

    @staticmethod
    def _constant_int(node, what: str, least: int) -> int:
        if not (isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()):
            raise UnsupportedError(f"{what} with an argument that is not an integer constant")
        v = int(node.this)
        if v < least:
            raise PlanError(f"{what} needs an argument of at least {least}, got {v}")
        return v

    @staticmethod
    def _frame(spec, keys: tuple[SortKey, ...]) -> tuple:
        """(rows|range|groups, start, end) of a window frame; the SQL default without one: the
        whole partition, or with ORDER BY from its start to the current row's last peer.

        Each bound is (unbounded|preceding|current|following, offset). ROWS and GROUPS
        offsets count rows and peer groups (integer constants); a RANGE offset is a distance
        in the one ORDER BY key's units (a number; for a date key days or an INTERVAL of
        days; for a timestamp key an INTERVAL of fixed units, in microseconds), kept as a float in the key's stored units (a decimal key's scaled integers)."""
        if spec is None:
            return ("range", ("unbounded", 0), ("current", 0) if keys else ("unbounded", 0))
        kind = str(spec.args["kind"]).lower()

        def offset(v) -> float | int:
            if kind != "range":
                if not (isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit()):
                    raise UnsupportedError("window frame offsets that are not integer constants")
                if int(v.this) >= 2 ** 63:  # (a BIGINT in DuckDB; it overflowed a tensor here)
                    raise PlanError(f"window frame offset {v.this} is beyond BIGINT")
                return int(v.this)
            if len(keys) != 1:
                raise PlanError("a RANGE frame with an offset needs exactly one ORDER BY expression")
            kt = keys[0].expr.type
            if kt.kind == "timestamp" and isinstance(v, exp.Interval):
                return _interval_micros(v)
            if not (kt.is_numeric or kt.kind == "date"):
                raise PlanError(f"a RANGE frame with an offset needs a numeric or date ORDER BY, got {kt}")
            if isinstance(v, exp.Interval) and kt.kind == "date":
                unit = (v.args.get("unit").name if v.args.get("unit") is not None else "").lower().rstrip("s")
                text = v.this.name if isinstance(v.this, exp.Literal) else ""
                parts = text.split()
                if len(parts) == 2 and not unit:
                    text, unit = parts[0], parts[1].lower().rstrip("s")
                if unit not in ("day", "week") or not text.isdigit():
                    raise UnsupportedError("RANGE frame offsets other than whole days or weeks")
                return int(text) * (7 if unit == "week" else 1)
            if not (isinstance(v, exp.Literal) and not v.is_string):
                raise UnsupportedError("RANGE frame offsets that are not numeric constants")
            x = float(v.this)
            if kt.kind == "decimal":
                x *= 10 ** kt.scale
            return x

        def bound(v, side, is_start: bool) -> tuple[str, float | int]:
            side = str(side or "").lower()
            if v is None or (isinstance(v, str) and v.upper() == "CURRENT ROW"):
                return ("current", 0)
            if isinstance(v, str) and v.upper() == "UNBOUNDED":
                if (side == "following") == is_start:
                    raise PlanError(f"a window frame cannot {'start' if is_start else 'end'} at UNBOUNDED "
                                    f"{side.upper()}")
                return ("unbounded", 0)
            return (side, offset(v))
        start = bound(spec.args.get("start"), spec.args.get("start_side"), True)
        end = bound(spec.args.get("end"), spec.args.get("end_side"), False) if spec.args.get("end") else ("current", 0)
        rank = {"preceding": 0, "current": 1, "following": 2}
        if start[0] in rank and end[0] in rank and rank[start[0]] > rank[end[0]]:
            raise PlanError("a window frame cannot end before its start row")
        return (kind, start, end)


#: Window aggregates that a grouped aggregate computes alike over a whole partition.
_PARTITION_AGGREGATES = {"sum", "avg", "count", "count_star", "min", "max"} | MOMENTS


def _whole_partition_aggregates(part, keys, calls) -> bool:
    """Whether every call of a window is an aggregate over its whole partition (no ORDER BY,
    unbounded frame) of keys that have a zero to stand for NULL in the join back."""
    return bool(part) and not keys and all(
        c.func in _PARTITION_AGGREGATES and not c.ignore_nulls and not c.exclude
        and c.frame[1][0] == "unbounded" and c.frame[2][0] == "unbounded" for _, c in calls) \
        and all(null_safe_zero(k.type) is not None for k in part)


#: The window functions EXCLUDE applies to here (ranking functions ignore frames in DuckDB).
_EXCLUDING = {"count", "count_star", "sum", "avg", "min", "max"}


def _excluding(call: WindowCall, spec) -> WindowCall:
    """``call`` with its frame's EXCLUDE CURRENT ROW / GROUP / TIES (NO OTHERS: none)."""
    ex = spec.args.get("exclude") if spec is not None else None
    what = " ".join(str(ex.name if isinstance(ex, exp.Expression) else ex).lower().split()) if ex is not None else ""
    if what in ("", "no others"):
        return call
    if what not in ("current row", "group", "ties"):
        raise UnsupportedError(f"EXCLUDE {what.upper()} in a window frame")
    if call.func in RANKING | DISTRIBUTION | OFFSETS:
        return call  # they ignore the frame, and so its EXCLUDE, as DuckDB's do
    if call.func not in _EXCLUDING:
        raise UnsupportedError(f"EXCLUDE in the window frame of {call.func.upper()}")
    return replace(call, exclude=what)


def null_safe_zero(t):
    """A constant of type ``t`` (NULL keys join as it, flagged by IS NULL), or None."""
    if t.kind == "string":
        return Lit("", t)
    if t.kind == "bool":
        return Lit(False, t)
    if t.kind == "date" or t.is_timestamp:
        return Lit(0, t)
    if t.is_numeric:
        return E.make_func("cast", [Lit(0, INT64)], (t,))
    return None


_MICROS = {"week": 7 * 86_400_000_000, "day": 86_400_000_000, "hour": 3_600_000_000, "minute": 60_000_000,
           "second": 1_000_000, "millisecond": 1_000, "microsecond": 1}


def _interval_micros(v: exp.Interval) -> int:
    """A RANGE offset over a TIMESTAMP key: an INTERVAL of whole fixed units (weeks to
    microseconds; a day is 24 hours, as DuckDB adds one to a TIMESTAMP) in microseconds, the
    key's stored units; months and years have no one length and are refused."""
    unit = (v.args.get("unit").name if v.args.get("unit") is not None else "").lower().rstrip("s")
    text = v.this.name if isinstance(v.this, exp.Literal) else ""
    parts = text.split()
    if len(parts) == 2 and not unit:
        text, unit = parts[0], parts[1].lower().rstrip("s")
    if unit not in _MICROS or not text.isdigit():
        raise UnsupportedError("RANGE frame offsets over a TIMESTAMP other than whole weeks, days, hours, "
                               "minutes, seconds, milliseconds or microseconds")
    return int(text) * _MICROS[unit]
