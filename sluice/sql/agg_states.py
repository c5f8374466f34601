"""Aggregate states: ``agg(x) EXPORT_STATE``, ``FINALIZE(state)``, ``COMBINE(state, state)`` and
the aggregate ``COMBINE_AGGR(state)``, as DuckDB answers them.

Why a tagged STRUCT: a state must travel through everything a value travels through -- CTEs,
subqueries, UNION ALL, GROUP BY, ``=`` -- and still say which aggregate made it, because
FINALIZE and COMBINE of a column are decided by its type alone. A state is therefore a STRUCT
whose first field is the tag ``__sluice_state_<agg>`` (TRUE, or NULL with the state), followed
by DuckDB's own state fields (``value``; ``count``, ``value``; ``count``, ``mean``,
``dsquared``). The tag keeps a state apart from any user STRUCT: UNION of two states of
different aggregates, or of a state and a STRUCT, meets different field names and is refused;
field access on a state is refused (:func:`is_state`), as DuckDB refuses it. The state is NULL
exactly where DuckDB's is (SUM / MIN / MAX / BOOL_AND / BOOL_OR of no value), so IS NULL and
COMBINE's NULL rules agree.

EXPORT_STATE is rewritten before translation (:func:`export_state`: the state's fields are
plain aggregates of the argument); COMBINE_AGGR after the FROM clause, where its argument's
type is known (:func:`combine_aggr`: plain aggregates of the fields); FINALIZE and COMBINE are
scalar expressions over the fields (:func:`finalize_call`, :func:`combine_call`).

Not answered (refused in one line): states of other aggregates; a state printed as it is
(DuckDB shows its internal layout, which sluice's fields do not reproduce for every type);
COMBINE_AGGR with a repeat count and COMBINE_AGGR of variance states (only a pairwise merge
is numerically safe); a state read back from a table (it is a plain STRUCT there: which
aggregate made it is lost).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.dialect import Product, Sluice
from sluice.expr import build as E
from sluice.expr.nodes import Col, Expr, Lit
from sluice.plan.logical import Project
from sluice.sql.scope import Rel
from sluice.types import BOOL, FLOAT64, STATE_TAG, LType, is_aggregate_state

TAG = STATE_TAG

#: sqlglot's aggregate classes -> the state's aggregate.
_CLASSES = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Count: "count", exp.Avg: "avg",
            exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.Stddev: "stddev_samp",
            exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop", exp.Variance: "var_samp",
            exp.VariancePop: "var_pop", Product: "product", exp.ArrayAgg: "list", exp.ArgMin: "arg_min",
            exp.ArgMax: "arg_max"}
#: The aggregates whose state is one ``value``, NULL on no value, merged by the same aggregate.
_ONE_VALUE = {"sum": "sum", "min": "min", "max": "max", "bool_and": "bool_and", "bool_or": "bool_or",
              "product": "product", "list": None}
_MOMENTS = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")

_X = "__sluice_x"
#: The call a COMBINE_AGGR's tree reads a state's field with (field access on a state is refused).
FIELD = "__sluice_state_field"
#: The call a state's tree checks a numeric aggregate's argument with (a state of numbers only).
NUMBER = "__sluice_state_number"
_NUMERIC = ("sum", "avg", "product", *("var_pop", "var_samp", "stddev_pop", "stddev_samp"))


def _template(sql: str, **subs: exp.Expression) -> exp.Expression:
    """``sql`` parsed, each column named by a key of ``subs`` replaced by a copy of its tree."""
    tree = sqlglot.parse_one(sql, read=Sluice)
    for col in list(tree.find_all(exp.Column)):
        if col.name in subs and not col.table:
            col.replace(subs[col.name].copy())
    return tree


def is_state(t: LType) -> bool:
    """Whether ``t`` is an aggregate state's type."""
    return is_aggregate_state(t)


def state_agg(t: LType) -> str:
    return t.args[0][0][len(TAG):]


def export_state(call: exp.Expression) -> exp.Expression:
    """``call EXPORT_STATE`` (an aggregate call's tree) as the tree of its state; with FILTER,
    each of the state's aggregates reads the filtered rows."""
    if isinstance(call, exp.Filter):
        tree = export_state(call.this)
        for agg in [a for a in tree.find_all(exp.AggFunc)]:
            agg.replace(exp.Filter(this=agg.copy(), expression=call.expression.copy()))
        return tree
    agg = _CLASSES.get(type(call))
    if isinstance(call, exp.Anonymous) and str(call.this).lower() == "mean" and len(call.expressions) == 1:
        agg = "avg"
        call = exp.Avg(this=call.expressions[0])
    if agg is None:
        name = call.sql(dialect="duckdb").split("(")[0].upper() if isinstance(call, exp.Func) else "this call"
        raise UnsupportedError(f"EXPORT_STATE of {name} (states of SUM, MIN, MAX, COUNT, AVG, BOOL_AND, "
                               "BOOL_OR, PRODUCT, LIST, ARG_MIN, ARG_MAX and the variance family are supported)")
    arg = call.this
    if isinstance(arg, exp.Distinct):
        raise PlanError("EXPORT_STATE is not supported for DISTINCT aggregates (as in DuckDB)")
    if agg in ("bool_and", "bool_or") and isinstance(arg, exp.Cast):
        arg = arg.this  # (sqlglot's own cast: bool_and's argument is a boolean already)
    tag = TAG + agg
    if agg in _NUMERIC and arg is not None:
        arg = exp.Anonymous(this=NUMBER, expressions=[arg, exp.Literal.string(agg)])
    if agg in ("arg_min", "arg_max"):
        if call.args.get("count") is not None or call.expression is None:
            raise UnsupportedError(f"EXPORT_STATE of {agg.upper()} with other than two arguments")
        extreme = agg[4:]
        return _template(f"CASE WHEN count(CASE WHEN {_X} IS NOT NULL AND __sluice_y IS NOT NULL THEN 1 END) = 0 "
                         f"THEN NULL ELSE struct_pack({tag} := true, arg := {agg}({_X}, __sluice_y), "
                         f"\"by\" := {extreme}(CASE WHEN {_X} IS NOT NULL THEN __sluice_y END)) END",
                         **{_X: arg, "__sluice_y": call.expression})
    if agg == "count":
        counted = "count(*)" if arg is None or isinstance(arg, exp.Star) else f"count({_X})"
        return _template(f"struct_pack({tag} := true, count := {counted})", **{_X: arg} if arg is not None else {})
    if arg is None:
        raise PlanError(f"{agg.upper()} needs an argument")
    if agg == "list":
        if arg.find(exp.Order) is not None or isinstance(arg, exp.Order):
            raise UnsupportedError("EXPORT_STATE of LIST with ORDER BY")
        return _template(f"CASE WHEN count(*) = 0 THEN NULL ELSE struct_pack({tag} := true, "
                         f"value := list({_X})) END", **{_X: arg})
    if agg in _ONE_VALUE:
        return _template(f"CASE WHEN count({_X}) = 0 THEN NULL ELSE struct_pack({tag} := true, "
                         f"value := {agg}({_X})) END", **{_X: arg})
    if agg == "avg":
        return _template(f"struct_pack({tag} := true, count := count({_X}), value := coalesce(sum({_X}), 0))",
                         **{_X: arg})
    d = f"CAST({_X} AS DOUBLE)"
    return _template(f"struct_pack({tag} := true, count := count({_X}), mean := coalesce(avg({d}), 0.0::DOUBLE), "
                     f"dsquared := coalesce(var_pop({d}) * count({_X}), 0.0::DOUBLE))", **{_X: arg})


def combine_aggr(node: exp.Anonymous, arg_type: LType, times: int = 1) -> exp.Expression:
    """COMBINE_AGGR(state[, times]) over a group: the tree of the merged state (plain aggregates
    of the fields), each state merged ``times`` times (a constant: 0 or NULL ignores it)."""
    s = node.expressions[0]
    if arg_type.kind == "null":
        raise PlanError('Can only "combine_aggr" AGGREGATE_STATE, not NULL')
    if not is_state(arg_type):
        raise UnsupportedError(f"COMBINE_AGGR of a {arg_type} value (only a state made by EXPORT_STATE in the "
                               "same query: a state read from a table is a plain STRUCT)")
    agg = state_agg(arg_type)
    tag = TAG + agg

    def f(name: str) -> str:
        return f"{FIELD}({_X}, '{name}')" if times else f"CASE WHEN false THEN {FIELD}({_X}, '{name}') END"

    def times_(name: str) -> str:
        return f(name) if times == 1 else f"({f(name)} * {times})"
    if agg == "list":
        raise UnsupportedError("COMBINE_AGGR of a LIST state (use COMBINE)")
    if agg in ("arg_min", "arg_max"):
        sql = (f"CASE WHEN count({f(tag)}) = 0 THEN NULL ELSE struct_pack({tag} := true, "
               f"arg := {agg}({f('arg')}, {f('by')}), \"by\" := {agg[4:]}({f('by')})) END")
        return _template(sql, **{_X: s})
    if agg in _ONE_VALUE:
        value = f('value')
        if times > 1 and agg in ("sum", "product"):
            value = times_("value") if agg == "sum" else f"pow({value}, {times})"
        sql = (f"CASE WHEN count({f(tag)}) = 0 THEN NULL ELSE struct_pack({tag} := true, "
               f"value := {_ONE_VALUE[agg]}({value})) END")
    elif agg == "count":
        sql = f"struct_pack({tag} := true, count := coalesce(sum({times_('count')}), 0))"
    elif agg == "avg":
        sql = (f"struct_pack({tag} := true, count := coalesce(sum({times_('count')}), 0), "
               f"value := coalesce(sum({times_('value')}), 0))")
    else:
        raise UnsupportedError(f"COMBINE_AGGR of a {agg.upper()} state (only a pairwise merge is numerically "
                               "safe: use COMBINE)")
    return _template(sql, **{_X: s})


def _times(tr, node: exp.Expression, ctx) -> int:
    """COMBINE_AGGR's repeat count: a constant integer, NULL as 0; negative is DuckDB's error."""
    e = tr.expr(node, ctx)
    if not isinstance(e, Lit):
        raise UnsupportedError("COMBINE_AGGR with a repeat count that is not a constant")
    if e.value is None:
        return 0
    if not (e.type.is_integer and isinstance(e.value, int)):
        raise PlanError(f"COMBINE_AGGR's repeat count must be an integer, got {e.type}")
    if e.value < 0:
        raise PlanError("combine_aggr multiplicity must be non-negative")
    return e.value


def _field(e: Expr, name: str) -> Expr:
    return E.make_func("struct_extract", [e], (name,))


def state_number(e: Expr, agg: str) -> Expr:
    """``e``, the argument of a numeric aggregate's state: refused where it is not a number."""
    if not (e.type.is_numeric or e.type.kind in ("bool", "null")):
        raise UnsupportedError(f"EXPORT_STATE of {agg.upper()} of a {e.type} value (states of numbers only)")
    return e


def state_field(e: Expr, name: str) -> Expr:
    """Field ``name`` of state ``e`` (for the trees of :func:`combine_aggr` only)."""
    if not is_state(e.type):
        raise PlanError(f"{FIELD} reads aggregate states only")
    return _field(e, name)


def _case(*args: Expr) -> Expr:
    return E.make_func("case", list(args))


def _null(t: LType) -> Expr:
    return Lit(None, t)


def _double(e: Expr) -> Expr:
    return E.make_func("cast", [e], (FLOAT64,))


def _moment_value(agg: str, n: Expr, dsq: Expr) -> Expr:
    """VAR_POP / VAR_SAMP / STDDEV_* from a state's count and sum of squared deviations."""
    samp = agg.endswith("samp")
    few = E.make_compare("<=", n, Lit(1, n.type)) if samp else E.make_compare("=", n, Lit(0, n.type))
    div = E.make_arith("-", n, Lit(1, n.type)) if samp else n
    v = E.make_arith("/", dsq, _double(div))
    if agg.startswith("stddev"):
        v = E.make_func("sqrt", [v])
    return _case(few, _null(FLOAT64), v)


def finalize(e: Expr) -> Expr:
    """The aggregate's value from its state ``e``."""
    if e.type.kind == "null":
        raise PlanError('Can only "finalize" AGGREGATE_STATE, not NULL')
    if not is_state(e.type):
        raise UnsupportedError(f"FINALIZE of a {e.type} value (only a state made by EXPORT_STATE in the same "
                               "query: a state read from a table is a plain STRUCT)")
    agg = state_agg(e.type)
    if agg in _ONE_VALUE:
        return _field(e, "value")
    if agg == "count":
        return _field(e, "count")
    if agg in ("arg_min", "arg_max"):
        return _field(e, "arg")
    n = _field(e, "count")
    if agg == "avg":
        return _case(E.make_compare("=", n, Lit(0, n.type)), _null(FLOAT64),
                     E.make_arith("/", _double(_field(e, "value")), _double(n)))
    return _moment_value(agg, n, _field(e, "dsquared"))


def combine(a: Expr, b: Expr) -> Expr:
    """COMBINE(a, b): the state of both inputs (a NULL state is no input)."""
    for x in (a, b):
        if x.type.kind == "null":
            raise PlanError('Can only "combine" AGGREGATE_STATE, not NULL')
        if not is_state(x.type):
            raise UnsupportedError(f"COMBINE of a {x.type} value (only states made by EXPORT_STATE in the same query)")
    if a.type != b.type:
        raise PlanError("Cannot COMBINE aggregate states from different functions or parameters")
    agg = state_agg(a.type)
    tag = a.type.args[0][0]
    names = [n for n, _ in a.type.args]

    def pack(*fields: Expr) -> Expr:
        return E.make_func("struct_pack", [Lit(True, BOOL), *fields], (tuple(names),))
    fa, fb = (lambda n: _field(a, n)), (lambda n: _field(b, n))
    if agg in ("min", "max"):
        op = "<=" if agg == "min" else ">="
        merged = _case(E.make_compare(op, fa("value"), fb("value")), a, b)
    elif agg in ("arg_min", "arg_max"):  # (a tie: the second state's, as DuckDB)
        merged = _case(E.make_compare("<" if agg == "arg_min" else ">", fa("by"), fb("by")), a, b)
    elif agg in ("sum", "product", "list", "bool_and", "bool_or"):
        if agg in ("sum", "product"):
            v = E.make_arith("+" if agg == "sum" else "*", fa("value"), fb("value"))
        elif agg == "list":
            v = E.make_func("list_concat", [fa("value"), fb("value")])
        else:
            v = E.make_bool("and" if agg == "bool_and" else "or", [fa("value"), fb("value")])
        merged = pack(v)
    elif agg == "count":
        merged = pack(E.make_arith("+", fa("count"), fb("count")))
    elif agg == "avg":
        merged = pack(E.make_arith("+", fa("count"), fb("count")), E.make_arith("+", fa("value"), fb("value")))
    else:  # Chan et al.'s pairwise merge of (count, mean, sum of squared deviations), as DuckDB
        na, nb = fa("count"), fb("count")
        n = E.make_arith("+", na, nb)
        delta = E.make_arith("-", fb("mean"), fa("mean"))
        mean = E.make_arith("+", fa("mean"), E.make_arith("/", E.make_arith("*", delta, _double(nb)), _double(n)))
        dsq = E.make_arith("+", E.make_arith("+", fa("dsquared"), fb("dsquared")),
                           E.make_arith("/", E.make_arith("*", E.make_arith("*", delta, delta),
                                                          E.make_arith("*", _double(na), _double(nb))), _double(n)))
        merged = _case(E.make_compare("=", na, Lit(0, na.type)), b,
                       E.make_compare("=", nb, Lit(0, nb.type)), a, pack(n, mean, dsq))
    del tag
    return _case(E.make_func("is_null", [a]), b, E.make_func("is_null", [b]), a, merged)


def is_combine_aggr(n: exp.Expression) -> bool:
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "combine_aggr"


def combined_states(tr, clauses: list, ctx) -> None:
    """Each COMBINE_AGGR(state) in a SELECT's clauses (not inside a subquery) replaced, in place,
    by the aggregates that merge its states: its argument's type, read over the FROM clause,
    says which aggregate made them."""
    for i, clause in enumerate(clauses):
        if clause is None:
            continue
        for n in [n for n in clause.walk() if is_combine_aggr(n)]:
            if any(isinstance(p, exp.Query) for p in _parents(n, clause)):
                continue  # (a subquery's own SELECT rewrites it)
            if not n.expressions or len(n.expressions) > 2:
                raise PlanError("COMBINE_AGGR takes a state and an optional repeat count")
            times = _times(tr, n.expressions[1], ctx) if len(n.expressions) == 2 else 1
            new = combine_aggr(n, tr.expr(n.expressions[0], ctx).type, times)
            n.replace(new)
            if n is clause:  # (the clause itself: the caller's list holds the new tree)
                clauses[i] = clause = new


def _parents(n: exp.Expression, top: exp.Expression):
    """The nodes between ``n`` and ``top`` (none when ``n`` is ``top``)."""
    p = n.parent if n is not top else None
    while p is not None and p is not top:
        yield p
        p = p.parent


def _holds_state(t: LType) -> bool:
    return is_state(t) or (t.is_nested and any(
        _holds_state(u) for u in ([a for _, a in t.args] if t.kind == "struct" else t.args)))


def printed(e: Expr) -> Expr:
    """A state as DuckDB prints it: the value of a one-value state, else DuckDB's STRUCT of its
    fields (the tag dropped). Refused where sluice's fields differ from DuckDB's layout."""
    agg = state_agg(e.type)
    if agg in _ONE_VALUE:
        return _field(e, "value")
    if agg == "count":
        return _field(e, "count")
    names = [n for n, _ in e.type.args[1:]]
    if agg == "avg" and e.type.field_type("value").kind == "decimal":
        raise UnsupportedError("printing an AVG state of decimals (DuckDB shows its unscaled internal sum); "
                               "FINALIZE it")
    fields = E.make_func("struct_pack", [_field(e, n) for n in names], (tuple(names),))
    return _case(E.make_func("is_null", [e]), _null(fields.type), fields)  # (a NULL state is NULL)


def printed_states(rel):
    """The query's result with each state column printed as DuckDB prints it (:func:`printed`);
    a state inside a LIST, STRUCT or MAP is refused."""
    schema = rel.plan.schema
    if not any(_holds_state(t) for t in schema.values()):
        return rel
    exprs = []
    for name, t in schema.items():
        if is_state(t):
            exprs.append((name, printed(Col(name, t))))
        elif _holds_state(t):
            raise UnsupportedError("printing an aggregate state inside a LIST, STRUCT or MAP (FINALIZE it)")
        else:
            exprs.append((name, Col(name, t)))
    return Rel(Project(rel.plan, tuple(exprs)), rel.outputs)
