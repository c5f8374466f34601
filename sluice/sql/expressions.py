"""Scalar expressions: sqlglot nodes -> typed :mod:`sluice.expr.nodes` trees, dispatched by
sqlglot class through :data:`HANDLERS` (each method registers the classes it translates).
Aggregates, windows and subqueries met inside an expression are looked up in the context
(their passes put their results there).
"""

from __future__ import annotations

from decimal import Decimal as _Decimal
from typing import Callable

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.agg_states import is_state, printed
from sluice.sql.calls import CLASS_CALLS
from sluice.sql.row_values import is_row, row_compare, row_in
from sluice.sql.construct_names import construct_name
from sluice.expr import build as E
from sluice.expr.nodes import NULL_TYPE, Expr, Func, Lit
from sluice.types import BOOL, INT64, STRING
from sluice.sql.scope import Ctx
from sluice.sql.syntax import AGG_FUNCS, _split_and
from sluice.sql.literals import _const_int, _is_untyped_null, _int_lit, like_pattern, literal, sql_type, decimal_precision, _coerce_compare, _NEVER_EQUAL, _lit_in_repr


#: Functions of one argument that are one plan function of the same name.
_UNARY_FUNCS = {exp.Upper: "upper", exp.Lower: "lower", exp.Length: "length", exp.Abs: "abs",
                exp.Floor: "floor", exp.Ceil: "ceil", exp.Sqrt: "sqrt", exp.Cbrt: "cbrt",
                exp.Ln: "ln", exp.Exp: "exp", exp.Sign: "sign", exp.IsNan: "isnan", exp.IsInf: "isinf",
                exp.LastDay: "last_day", exp.Dayname: "dayname", exp.Monthname: "monthname"}

#: sqlglot expression class -> the method translating it (registered with :func:`handles`).
HANDLERS: dict[type, Callable] = dict(CLASS_CALLS)


def handles(*classes: type):
    """Register the decorated method as the translation of these sqlglot classes."""
    def register(fn):
        for c in classes:
            HANDLERS[c] = fn
        return fn
    return register


class Expressions:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def expr(self, node: exp.Expression, ctx: Ctx) -> Expr:
        if node is None:  # an argument sqlglot left out unchecked (ceil(): an internal error)
            raise PlanError("a function called with too few arguments")
        if ctx.aggs is not None and id(node) in ctx.aggs:
            return ctx.aggs[id(node)]
        if id(node) in ctx.subs:
            return ctx.subs[id(node)]
        fn = HANDLERS.get(type(node))
        if fn is None:
            if isinstance(node, tuple(AGG_FUNCS)):
                if ctx.aggs is None:
                    raise PlanError(f"aggregate {node.sql(dialect='duckdb')} is not allowed here")
            if isinstance(node, exp.Var):
                if node.name.upper() == "ALL" and isinstance(node.parent, exp.Ordered):
                    raise UnsupportedError("ORDER BY ALL")
                raise UnsupportedError(f"keyword {node.name.upper()} in an expression")
            if isinstance(node, exp.Star):
                raise PlanError("* is only allowed in the select list or COUNT(*)")
            raise UnsupportedError(f"{construct_name(node)} in this position")
        return fn(self, node, ctx)

    @handles(exp.Paren)
    def _x_paren(self, n, ctx):
        return self.expr(n.this, ctx)

    @handles(exp.Alias)
    def _x_alias(self, n, ctx):
        return self.expr(n.this, ctx)

    @handles(exp.Column)
    def _x_column(self, n: exp.Column, ctx):
        if isinstance(n.this, exp.Star):
            raise PlanError("* is only allowed in the select list or COUNT(*)")
        name = n.name.lower()
        if n.args.get("db") is not None:  # t.s.a or s.a.b: struct fields, never a schema's table
            got = self.struct_path(n, ctx)
            if got is None:
                raise UnsupportedError("schema-qualified column names")
            return got
        if not n.table and ctx.aliases is not None and name in ctx.aliases and name not in self._expanding \
                and (id(n) in ctx.alias_columns or not ctx.scope.has_local(name)):
            # A select-list alias of this query before a column of an enclosing one, as DuckDB binds it.
            self._expanding.add(name)
            try:
                return self.expr(ctx.aliases[name], ctx)
            finally:
                self._expanding.discard(name)
        try:
            return ctx.scope.resolve(n.table or None, n.name)
        except PlanError:
            if n.table:  # s.a, t.s.a, s.a.b: fields of a struct column
                got = self.struct_path(n, ctx)
                if got is not None:
                    return got
            # As in DuckDB, a name that is no column may be an alias of the select list (WHERE x > 1,
            # HAVING c > 4, select a + 1 as x, x * 2): translate the aliased expression in its place.
            name = n.name.lower()
            if ctx.aliases is None or n.table or name not in ctx.aliases or name in self._expanding:
                _refuse_pseudo_column(n, ctx)
                raise
        self._expanding.add(name)
        try:
            return self.expr(ctx.aliases[name], ctx)
        finally:
            self._expanding.discard(name)

    @handles(exp.Identifier)
    def _x_identifier(self, n: exp.Identifier, ctx):
        """A bare name where an expression stands: sqlglot writes a lambda's parameters so in
        its body (``lambda x: x + 1``); resolved as a column (:mod:`sluice.sql.lambdas`)."""
        return ctx.scope.resolve(None, n.name)

    @handles(exp.Literal)
    def _x_literal(self, n: exp.Literal, ctx):
        return literal(n)

    @handles(exp.RawString)
    def _x_raw_string(self, n, ctx):
        """A dollar-quoted string (``$$it's$$``, ``$tag$...$tag$``): its text, as written."""
        return Lit(n.this, STRING)

    @handles(exp.Null)
    def _x_null(self, n, ctx):
        return Lit(None, NULL_TYPE)

    @handles(exp.Boolean)
    def _x_boolean(self, n, ctx):
        return Lit(bool(n.this), BOOL)

    @handles(exp.Neg)
    def _x_neg(self, n, ctx):
        inner = n.this
        if isinstance(inner, exp.Literal) and not inner.is_string and inner.this == str(2 ** 63):
            return Lit(-2 ** 63, INT64, integer_literal=True)  # BIGINT's least value, whose magnitude is no BIGINT
        a = self.expr(n.this, ctx)
        if isinstance(a, Lit) and a.integer_literal:  # -128 is an integer literal too, as in DuckDB
            return Lit(-a.value, a.type, integer_literal=True)
        return E.make_func("neg", [a])

    def _binary(self, op, n, ctx):
        a_node, b_node = n.this, n.expression
        if op in E.COMPARE and (is_row(a_node) or is_row(b_node)):
            return row_compare(self, op, a_node, b_node, ctx)
        if op in E.COMPARE and isinstance(a_node, exp.Interval):  # INTERVAL '1 day' < t2 - t1
            b = self.expr(b_node, ctx)
            if b.type.kind == "interval":
                return E.make_compare(op, self._interval_value(a_node), b)
            a = self.expr(a_node, ctx)
        else:
            if isinstance(a_node, exp.Interval) and op == "+":
                return self._interval(self.expr(b_node, ctx), a_node, 1, ctx)
            a = self.expr(a_node, ctx)
            if isinstance(b_node, exp.Interval) and op in ("+", "-"):
                return self._interval(a, b_node, -1 if op == "-" else 1, ctx)
            if op in E.COMPARE and isinstance(b_node, exp.Interval) and a.type.kind == "interval":
                return E.make_compare(op, a, self._interval_value(b_node))
            b = self.expr(b_node, ctx)
        if op in E.COMPARE:
            a, b = _coerce_compare(a, b)
            return E.make_compare(op, a, b)
        return E.make_arith(op, a, b)

    @handles(exp.Add)
    def _x_add(self, n, ctx):
        return self._binary("+", n, ctx)

    @handles(exp.Sub)
    def _x_sub(self, n, ctx):
        return self._binary("-", n, ctx)

    @handles(exp.Mul)
    def _x_mul(self, n, ctx):
        return self._binary("*", n, ctx)

    @handles(exp.Div)
    def _x_div(self, n, ctx):
        return self._binary("/", n, ctx)

    @handles(exp.Mod)
    def _x_mod(self, n, ctx):
        return self._binary("%", n, ctx)

    @handles(exp.EQ)
    def _x_eq(self, n, ctx):
        return self._binary("=", n, ctx)

    @handles(exp.NEQ)
    def _x_neq(self, n, ctx):
        return self._binary("<>", n, ctx)

    @handles(exp.LT)
    def _x_lt(self, n, ctx):
        return self._binary("<", n, ctx)

    @handles(exp.LTE)
    def _x_lte(self, n, ctx):
        return self._binary("<=", n, ctx)

    @handles(exp.GT)
    def _x_gt(self, n, ctx):
        return self._binary(">", n, ctx)

    @handles(exp.GTE)
    def _x_gte(self, n, ctx):
        return self._binary(">=", n, ctx)

    @handles(exp.And)
    def _x_and(self, n, ctx):
        return E.make_bool("and", [self.expr(x, ctx) for x in _split_and(n)])

    @handles(exp.Or)
    def _x_or(self, n, ctx):
        return E.make_bool("or", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    @handles(exp.Not)
    def _x_not(self, n, ctx):
        return E.make_not(self.expr(n.this, ctx))

    @handles(exp.Between)
    def _x_between(self, n, ctx):
        a = self.expr(n.this, ctx)
        lo = self.expr(n.args["low"], ctx)
        hi = self.expr(n.args["high"], ctx)
        a1, lo = _coerce_compare(a, lo)
        a2, hi = _coerce_compare(a, hi)
        # (make_func: DuckDB moves no constant out of a BETWEEN's operand, E.make_compare does)
        return E.make_bool("and", [E.make_func(">=", [a1, lo]), E.make_func("<=", [a2, hi])])

    @handles(exp.IntDiv)
    def _x_int_div(self, n, ctx):
        return E.make_func("int_div", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    @handles(exp.Pow)
    def _x_pow(self, n, ctx):
        return E.make_func("power", [self.expr(n.this, ctx), self.expr(n.expression, ctx)])

    @handles(exp.Log)
    def _x_log(self, n, ctx):
        """LOG(x) is base 10 (DuckDB); LOG(b, x), LOG2, LOG10 arrive as (base, x)."""
        if n.args.get("expression") is None:
            return E.make_func("log10", [self.expr(n.this, ctx)])
        base, x = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        if isinstance(base, Lit) and base.value in (2, 10):
            return E.make_func(f"log{base.value}", [x])
        return E.make_func("log_base", [base, x])

    @handles(exp.NullSafeEQ, exp.NullSafeNEQ)
    def _x_distinct_from(self, n, ctx):
        """``a IS [NOT] DISTINCT FROM b``: equality where NULL equals NULL; never NULL."""
        a, b = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        a, b = _coerce_compare(a, b)
        same = E.make_func("case", [
            E.make_bool("and", [E.make_func("is_null", [a]), E.make_func("is_null", [b])]), Lit(True, BOOL),
            E.make_bool("or", [E.make_func("is_null", [a]), E.make_func("is_null", [b])]), Lit(False, BOOL),
            E.make_compare("=", a, b)])
        return same if isinstance(n, exp.NullSafeEQ) else E.make_func("not", [same])

    @handles(exp.Repeat)
    def _x_repeat(self, n, ctx):
        return self._string_fn(n, ctx, "repeat", _const_int(n.args["times"], "REPEAT"))

    @handles(exp.ConcatWs)
    def _x_concat_ws(self, n, ctx):
        """CONCAT_WS(sep, ...): the non-NULL arguments joined by ``sep`` ('' when all are NULL,
        NULL when ``sep`` is)."""
        sep, *parts = [self.expr(x, ctx) for x in n.expressions]
        if any(x.type.is_nested for x in [sep, *parts]):  # DuckDB joins a list's elements: CONCAT_WS(',', [1], [2]) is 1,2
            raise UnsupportedError("CONCAT_WS of a LIST / STRUCT / MAP value")
        parts = [E.make_func("cast", [x], (STRING,)) if x.type.kind != "string" else x for x in parts]
        if sep.type.kind != "string":
            sep = E.make_func("cast", [sep], (STRING,))
        out: Expr = Lit(None, STRING)
        for p in parts:
            if isinstance(p, Lit) and p.value is None:
                continue
            out = E.make_func("case", [E.make_func("is_null", [p]), out,
                                       E.make_func("is_null", [out]), p,
                                       E.make_func("concat", [E.make_func("concat", [out, sep]), p])])
        return E.make_func("case", [E.make_func("is_null", [sep]), Lit(None, STRING),
                                    E.make_func("coalesce", [out, Lit("", STRING)])])

    @handles(exp.Is)
    def _x_is(self, n, ctx):
        a = self.expr(n.this, ctx)
        if isinstance(n.expression, exp.Null):
            return E.make_func("is_null", [a])
        raise UnsupportedError(f"IS {n.expression.sql()}")

    @handles(exp.In)
    def _x_in(self, n, ctx):
        if is_row(n.this):
            return row_in(self, n, ctx)
        if n.args.get("query") is not None:
            raise UnsupportedError("IN (subquery) inside an expression")
        a = self.expr(n.this, ctx)
        vals = [self.expr(v, ctx) for v in n.expressions]
        if a.type.kind == "null":  # NULL IN (...) is NULL
            return Lit(None, BOOL)
        if all(isinstance(v, Lit) for v in vals) and not a.type.is_nested:
            conv = []
            for v in vals:
                _, v2 = _coerce_compare(a, v)
                if v2.value is not None:
                    E.make_compare("=", a, v2)  # type check
                rep = _lit_in_repr(v2, a.type)
                if rep is not _NEVER_EQUAL:  # e.g. 2.5 in a list compared with integers
                    conv.append(rep)
            if not conv:  # x IN (2.5) over integers: FALSE, or NULL where x is NULL
                return E.make_func("case", [E.make_func("is_null", [a]), Lit(None, BOOL), Lit(False, BOOL)])
            return E.make_func("in", [a], (tuple(conv),))
        return E.make_bool("or", [E.make_compare("=", *_coerce_compare(a, v)) for v in vals])

    @handles(exp.Like)
    def _x_like(self, n, ctx):
        return self._like(n, ctx, "like")

    @handles(exp.ILike)
    def _x_ilike(self, n, ctx):
        return self._like(n, ctx, "ilike")

    def _like(self, n, ctx, op, escape: str | None = None):
        a = self.expr(n.this, ctx)
        pat = n.expression
        if isinstance(pat, exp.Null):  # x LIKE NULL is NULL
            return Lit(None, BOOL)
        op = ("not_" if n.args.get("negate") else "") + op
        if isinstance(pat, exp.Literal) and pat.is_string:
            return E.make_func(op, [a], (like_pattern(pat.this, escape),))
        p = self.expr(pat, ctx)  # an expression: a constant once folded ('a' || chr(0)), else per row
        if isinstance(p, Lit) and p.type.kind in ("string", "null"):
            return Lit(None, BOOL) if p.value is None else E.make_func(op, [a], (like_pattern(p.value, escape),))
        if a.type.kind == "null":
            return Lit(None, BOOL)
        return E.make_func(op + "_rows", [a, p], (escape,))

    @handles(exp.Escape)
    def _x_escape(self, n, ctx):
        like = n.this
        esc = n.expression
        if not isinstance(like, (exp.Like, exp.ILike)):
            raise UnsupportedError(f"ESCAPE with {construct_name(like)}")
        if isinstance(esc, exp.Null):  # (DuckDB: NULL, whatever the strings)
            self.expr(like, ctx)  # (still checked: its names must exist)
            return Lit(None, BOOL)
        if not (isinstance(esc, exp.Literal) and esc.is_string and len(esc.this) <= 1):
            raise PlanError("ESCAPE needs a constant string of at most one character")
        return self._like(like, ctx, "ilike" if isinstance(like, exp.ILike) else "like", esc.this or None)

    @handles(exp.Case)
    def _x_case(self, n, ctx):
        args: list[Expr] = []
        base = n.this
        base_e = self.expr(base, ctx) if base is not None else None
        for i in n.args.get("ifs") or []:
            cond = self.expr(i.this, ctx)
            if base_e is not None:
                cond = E.make_compare("=", *_coerce_compare(base_e, cond))
            if isinstance(cond, Lit) and cond.value is None:
                cond = Lit(None, BOOL)  # WHEN NULL never holds
            if cond.type.kind != "bool":
                raise PlanError(f"CASE WHEN needs a boolean condition, got {cond.type}")
            args += [cond, self.expr(i.args["true"], ctx)]
        default = n.args.get("default")
        args.append(self.expr(default, ctx) if default is not None else Lit(None, NULL_TYPE))
        return E.make_func("case", args)

    @handles(exp.If)
    def _x_if(self, n, ctx):
        cond = self.expr(n.this, ctx)
        if isinstance(cond, Lit) and cond.value is None:
            cond = Lit(None, BOOL)  # IF(NULL, a, b) is b
        f = n.args.get("false")
        return E.make_func("case", [cond, self.expr(n.args["true"], ctx),
                                    self.expr(f, ctx) if f is not None else Lit(None, NULL_TYPE)])

    @handles(exp.Coalesce)
    def _x_coalesce(self, n, ctx):
        args = [self.expr(n.this, ctx)] + [self.expr(x, ctx) for x in n.expressions]
        return E.make_func("coalesce", args)

    # ---- date functions

    @handles(exp.Greatest)
    def _x_greatest(self, n, ctx):
        return self._extreme(n, ctx, ">=")

    @handles(exp.Least)
    def _x_least(self, n, ctx):
        return self._extreme(n, ctx, "<=")

    def _extreme(self, n, ctx, op: str) -> Expr:
        """GREATEST / LEAST as DuckDB defines them: NULL arguments are skipped (NULL only when
        all are NULL); the arguments share one type."""
        args = [self.expr(n.this, ctx)] + [self.expr(x, ctx) for x in n.expressions]
        typed = [a for a in args if not _is_untyped_null(a)]
        if not typed:
            return Lit(None, NULL_TYPE)
        t = E.common_type(typed, "GREATEST / LEAST")
        args = [E.coerce(a, t) for a in args]
        best = args[0]
        for a in args[1:]:
            best = E.make_func("case", [E.make_func("is_null", [best]), a,
                                        E.make_func("is_null", [a]), best,
                                        E.make_compare(op, best, a), best, a])
        return best

    @handles(exp.Nullif)
    def _x_nullif(self, n, ctx):
        a, b = self.expr(n.this, ctx), self.expr(n.expression, ctx)
        return E.make_func("case", [E.make_compare("=", a, b), Lit(None, NULL_TYPE), a])

    @handles(exp.Try)
    def _x_try(self, n, ctx):
        """TRY(x): x, NULL on the rows where x fails a value check (evaluated in
        :func:`sluice.expr.evaluate._try`). TRY(CAST(y AS t)) is TRY(TRY_CAST(y AS t)): the
        same NULLs, and a cast of strings checks its values per dictionary entry, not per row.
        DuckDB's binder refuses a subquery, an aggregate or a window function inside it."""
        if n.this.find(exp.Subquery, exp.Exists):
            raise PlanError("TRY can not be used in combination with a scalar subquery")
        if n.this.find(exp.AggFunc, exp.Window):
            raise PlanError("aggregates and window functions are not allowed inside the TRY expression")
        a = self.expr(n.this, ctx)
        if isinstance(a, Func) and a.op == "cast":
            a = E.make_func("try_cast", list(a.args), a.params)
        return a if isinstance(a, Lit) else E.make_func("try", [a])

    @handles(exp.Cast, exp.TryCast)
    def _x_cast(self, n, ctx):
        """CAST, and TRY_CAST (NULL where the value does not convert)."""
        a = self.expr(n.this, ctx)
        if is_state(a.type):
            a = printed(a)  # (DuckDB casts the state's value: a one-value state's value, else its fields)
        t = sql_type(n.args["to"])
        if isinstance(a, Lit) and a.value is None:
            return Lit(None, t)
        precision = decimal_precision(n.args["to"])
        if a.type == t and precision is None and not _nested_decimal(t):  # (a literal cast has its type: 1::INTEGER stays one)
            return Lit(a.value, t) if isinstance(a, Lit) else a
        op = "try_cast" if isinstance(n, exp.TryCast) else "cast"
        return E.make_func(op, [a], (t, precision) if precision is not None else (t,))

    @handles(*_UNARY_FUNCS)
    def _x_unary(self, n, ctx):
        """A function of one argument that is one plan function (UPPER, LOWER, LENGTH, ABS)."""
        a = self.expr(n.this, ctx)
        if isinstance(n, exp.Length) and a.type.kind in ("list", "map"):  # LEN(list): its elements
            return E.make_func("list_len", [a])
        return E.make_func(_UNARY_FUNCS[type(n)], [a])

    def _digits(self, n, ctx, what: str) -> int | None:
        """The constant number of digits of ROUND / TRUNC (None when not given)."""
        d = n.args.get("decimals")
        if d is None:
            return None
        digits = self.expr(d, ctx)
        if not _int_lit(digits) or digits.value is None:
            raise UnsupportedError(f"{what} with a non-constant or non-integer number of digits")
        return int(digits.value)

    @handles(exp.Trunc)
    def _x_trunc(self, n, ctx):
        """TRUNC(x) and TRUNC(x, n): toward zero, to n digits after the point (n < 0: before)."""
        digits = self._digits(n, ctx, "TRUNC")
        return E.make_func("trunc", [self.expr(n.this, ctx)], (digits,) if digits is not None else ())

    @handles(exp.Round)
    def _x_round(self, n, ctx):
        return E.make_func("round", [self.expr(n.this, ctx)], (self._digits(n, ctx, "ROUND") or 0,))

    @handles(exp.Subquery)
    def _x_subquery(self, n, ctx):
        raise UnsupportedError("a subquery in this position")

    @handles(exp.Exists)
    def _x_exists(self, n, ctx):
        raise UnsupportedError("EXISTS inside OR or another expression")


# ---------------------------------------------------------------------- helpers


def _nested_decimal(t) -> bool:
    """Whether nested type ``t`` holds a DECIMAL (its precision, not part of type equality, is
    checked by the cast: ``[123.45]::DECIMAL(4,2)[]`` is DuckDB's out-of-range error)."""
    if not t.is_nested:
        return False
    kids = [u for _, u in t.args] if t.kind == "struct" else list(t.args)
    return any(u.kind == "decimal" or _nested_decimal(u) for u in kids)


def _cutoff(e: Expr, name: str) -> float | None:
    """The score cutoff of JARO_SIMILARITY / JARO_WINKLER_SIMILARITY: a numeric constant (NULL:
    every result is NULL, as in DuckDB)."""
    if isinstance(e, Lit) and e.value is None:
        return None
    if not isinstance(e, Lit) or not e.type.is_numeric:
        raise UnsupportedError(f"{name.upper()} with a score cutoff that is not a numeric constant")
    if e.type.kind == "decimal":  # a scaled integer
        return float(_Decimal(e.value).scaleb(-e.type.scale))
    return float(e.value)


def _refuse_pseudo_column(n: exp.Column, ctx) -> None:
    """What DuckDB reads where no column has the name, and sluice does not: ``rowid`` (a row's
    number in its table) and a table's name as a value (its row as a STRUCT). Refused in one
    line instead of "unknown column"."""
    name = n.name.lower()
    if name == "rowid":
        raise UnsupportedError("rowid (a row's number in its table: sluice's tables are files; "
                               "row_number() OVER () numbers rows)")
    if n.table:
        return
    scope = ctx.scope
    while scope is not None:
        if any(src.alias == name for src in scope.sources):
            raise UnsupportedError(f"table name {n.name} used as a value (its row as a STRUCT)")
        scope = scope.parent
