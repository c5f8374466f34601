"""AST rewrites that run before translation, each turning a spelling into the form the
translator reads (so the translator has one rule per construct, not one per spelling).

- ``FROM l JOIN r ON ...`` (DuckDB's FROM-first query) and ``FROM (l JOIN r ON ...) JOIN s``: the
  joins the parser hangs on the first table are the SELECT's own, first (:func:`_flatten_leading_joins`).
- ``read_csv_auto(...)`` is ``read_csv(...)`` (sluice always infers the CSV schema).
- ``DATE_PART('field', x)`` / ``DATEPART`` is ``EXTRACT(field FROM x)``.
- COUNT_IF, ANY_VALUE / ARBITRARY, NOW(), PREFIX / SUFFIX, GLOB (as a regular expression),
  TRY_STRPTIME (STRPTIME, safe), PRINTF (FORMAT with %-placeholders) and
  FILTER in a window aggregate (:func:`_respelled`).
- ``x op ANY / SOME / ALL (subquery)``: ``= ANY`` is IN, ``<> ALL`` NOT IN, the others a CASE
  over scalar aggregate subqueries (:func:`_quantified`); for a row value ``(a, b)`` (``ROW(a,
  b)`` too) these and IN (subquery) are EXISTS subqueries (:mod:`sluice.sql.row_subqueries`).
- ``SELECT ..., UNNEST(l) ...`` is a lateral ``FROM ..., UNNEST(l)`` (:func:`sluice.sql.nested.select_unnest`).
- Named windows: ``OVER w`` / ``OVER (w ORDER BY ...)`` with ``WINDOW w AS (...)`` become the
  inline window they name, as the standard composes them: the reference may add an ORDER BY
  when the definition has none, and a frame; it may not repeat PARTITION BY.

Works on a copy: the parser caches trees.
"""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError
from sluice.sql.nested import select_unnest
from sluice.sql.row_subqueries import row_call_to_tuple, row_fields, row_in, row_quantified
import re


def normalize(tree: exp.Expression) -> exp.Expression:
    if not any((isinstance(n, exp.Select) and n.args.get("windows")) or _is_csv_auto(n) or _is_date_part(n)
               or (isinstance(n, (exp.Table, exp.Subquery)) and n.args.get("joins"))
               or _respelled(n) is not None or isinstance(n, (exp.Any, exp.All, exp.Explode))
               or row_call_to_tuple(n) is not None or _row_in(n) for n in tree.walk()):
        return tree
    tree = tree.copy()
    for n in reversed(list(tree.walk())):  # ROW(a, b) is the row value (a, b); inner ones first
        new = row_call_to_tuple(n)
        if new is not None:
            n.replace(new)
            if n is tree:
                tree = new
    for sel in list(tree.find_all(exp.Select)):
        _flatten_leading_joins(sel)
        for j in sel.args.get("joins") or []:
            _mark_join_group(j)
    for n in reversed(list(tree.walk())):  # SELECT UNNEST(l) FROM t: FROM t, UNNEST(l)
        if isinstance(n, exp.Select):
            new = select_unnest(n)
            if new is not None:
                n.replace(new)
                if n is tree:
                    tree = new
    for n in reversed(list(tree.walk())):  # inner ones first: a subquery may hold another
        if isinstance(n, (exp.Any, exp.All)) and isinstance(n.parent, _QUANTIFIED_OPS) \
                and n.arg_key == "expression":
            n.parent.replace(_quantified(n.parent, n))
    for n in list(tree.walk()):  # (a, b) IN (SELECT x, y ...)
        if _row_in(n):
            n.replace(row_in(n))
    for n in list(tree.walk()):
        new = _respelled(n)
        if new is not None:
            n.replace(new)
    for n in list(tree.walk()):
        if _is_date_part(n):
            field, arg = n.expressions
            n.replace(exp.Extract(this=exp.var(field.this), expression=arg))
    for n in list(tree.walk()):
        if _is_csv_auto(n) and n.expressions:
            args = list(n.expressions)
            n.replace(exp.ReadCSV(this=args[0], expressions=args[1:]))
    for sel in list(tree.find_all(exp.Select)):
        if sel.args.get("windows"):
            _inline_windows(sel)
    return tree


def _row_in(n: exp.Expression) -> bool:
    return isinstance(n, exp.In) and n.args.get("query") is not None and row_fields(n.this) is not None


def _flatten_leading_joins(sel: exp.Select) -> None:
    """Joins inside the first FROM item (a table, or unaliased parentheses around joins, at any
    depth) become the SELECT's first joins: ``((l J1 r) J2 s) J3 t`` is ``l J1 r J2 s J3 t``
    read left to right, the same joins in the same order. Joins inside a later item, or an
    aliased group, stay (and are refused): there, flattening would change what joins what."""
    f = sel.args.get("from_")
    if f is None:
        return
    levels = [f.this]
    while isinstance(levels[-1], exp.Subquery) and not levels[-1].args.get("alias") \
            and isinstance(levels[-1].this, (exp.Table, exp.Subquery)):
        levels.append(levels[-1].this)
    joins = []
    for node in reversed(levels):  # the innermost group's joins come first
        joins += list(node.args.get("joins") or [])
        node.set("joins", None)
    if not joins:
        return
    if f.this is not levels[-1]:
        f.set("this", levels[-1])
    sel.set("joins", joins + list(sel.args.get("joins") or []))


#: ``meta`` key of a SELECT that stands for a parenthesised group of joins (``JOIN_GROUP``).
JOIN_GROUP = "join_group"


def _mark_join_group(j: exp.Join) -> None:
    """``... JOIN (r JOIN r2 ON c) ON ...``: the unaliased group becomes ``(SELECT * FROM r JOIN
    r2 ON c)`` marked as a group -- joined as one item, its tables visible by their own names
    (``FromClause.join_group``)."""
    if not isinstance(j.this, exp.Subquery) or j.this.args.get("alias"):
        return
    sel = exp.Select(expressions=[exp.Star()])
    sel.set("from_", exp.From(this=j.this.copy()))
    _flatten_leading_joins(sel)
    if not sel.args.get("joins"):
        return
    for inner in sel.args.get("joins") or []:
        _mark_join_group(inner)
    sel.meta[JOIN_GROUP] = True
    j.set("this", exp.Subquery(this=sel))


def _any_value(x: exp.Expression) -> exp.Min:
    """MIN(x) standing for ANY_VALUE(x), marked so: where the value kept depends on the order
    rows come (a USING KEY aggregate keeps its first value across iterations) it is refused."""
    node = exp.Min(this=x.copy())
    node.meta["any_value"] = True
    return node


def _ordered_any_value(order: exp.Order, skip_nulls: bool) -> exp.First:
    """ANY_VALUE(x ORDER BY k) / ARBITRARY(x ORDER BY k) as FIRST(x ORDER BY ...): DuckDB's
    ARBITRARY is FIRST (the first row's value, NULL too); its ANY_VALUE the first non-NULL
    value in that order, so ``x IS NULL`` leads the keys (a group of NULLs still gives NULL)."""
    keys = [o.copy() for o in order.expressions]
    if skip_nulls:
        keys.insert(0, exp.Ordered(this=exp.Is(this=exp.Paren(this=order.this.copy()), expression=exp.Null()),
                                   nulls_first=False))
    return exp.First(this=exp.Order(this=order.this.copy(), expressions=keys))


def _respelled(n: exp.Expression) -> exp.Expression | None:
    """The form the translator reads of a spelling it does not, or None:

    - ``COUNT_IF(c)`` is ``SUM(CASE WHEN c THEN 1 WHEN NOT c THEN 0 END)`` (as DuckDB: NULL
      over no row whose condition is TRUE or FALSE);
    - ``ANY_VALUE(x)`` / ``ARBITRARY(x)`` is ``MIN(x)`` (any non-NULL value of the group is a
      right answer; MIN is one); with an ORDER BY in the call it is a FIRST (``_ordered_any_value``);
    - ``NOW()`` / ``GET_CURRENT_TIMESTAMP()`` is ``CURRENT_TIMESTAMP``;
    - ``f(x RESPECT NULLS)`` / ``f(x) RESPECT NULLS`` is ``f(x)`` (RESPECT NULLS is the default);
    - ``agg(x) FILTER (WHERE c) OVER (...)`` is ``agg(CASE WHEN c THEN x END) OVER (...)``
      (``COUNT(*)``: of ``CASE WHEN c THEN 1 END``) for COUNT, SUM, AVG, MIN and MAX."""
    if isinstance(n, exp.CountIf):  # DuckDB's is a SUM: NULL when no row's condition is known
        c = n.this
        return exp.Sum(this=exp.Case(ifs=[exp.If(this=c.copy(), true=exp.Literal.number(1)),
                                          exp.If(this=exp.Not(this=exp.Paren(this=c.copy())),
                                                 true=exp.Literal.number(0))]))
    if isinstance(n, exp.RespectNulls):  # the default of every function that takes it
        return n.this.copy()
    if isinstance(n, exp.IgnoreNulls) and isinstance(n.this, exp.AnyValue):
        n = n.this
    if isinstance(n, exp.AnyValue):
        if isinstance(n.this, exp.Order) and n.this.this is not None:
            return _ordered_any_value(n.this, skip_nulls=True)
        return _any_value(n.this)
    if isinstance(n, exp.Anonymous) and len(n.expressions) == 1 and str(n.this).lower() == "arbitrary":
        if isinstance(n.expressions[0], exp.Order) and n.expressions[0].this is not None:
            return _ordered_any_value(n.expressions[0], skip_nulls=False)
        return _any_value(n.expressions[0])
    if isinstance(n, exp.Anonymous) and not n.expressions and str(n.this).lower() in ("now", "get_current_timestamp"):
        return exp.CurrentTimestamp()
    if isinstance(n, exp.Anonymous) and len(n.expressions) == 2 and str(n.this).lower() in ("prefix", "suffix"):
        cls = exp.StartsWith if str(n.this).lower() == "prefix" else exp.EndsWith
        return cls(this=n.expressions[0].copy(), expression=n.expressions[1].copy())
    if isinstance(n, exp.Anonymous) and len(n.expressions) == 2 and str(n.this).lower() == "try_strptime":
        return exp.StrToTime(this=n.expressions[0].copy(), format=n.expressions[1].copy(), safe=exp.true())
    if isinstance(n, exp.Anonymous) and n.expressions and str(n.this).lower() == "printf":
        node = exp.Format(this=n.expressions[0].copy(), expressions=[a.copy() for a in n.expressions[1:]])
        node.meta["printf"] = True  # %s / %d placeholders (sluice.sql.expressions._formatted)
        return node
    if isinstance(n, exp.Glob) and isinstance(n.expression, exp.Literal) and n.expression.is_string:
        return exp.RegexpLike(this=n.this.copy(), expression=exp.Literal.string(_glob_regex(n.expression.this)))
    if isinstance(n, exp.Window) and isinstance(n.this, exp.Filter) \
            and isinstance(n.this.this, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)):
        agg, cond = n.this.this, n.this.expression.this
        arg = agg.this
        if isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
            arg = exp.Literal.number(1)
        if isinstance(arg, exp.Distinct):
            return None
        new_agg = agg.copy()
        new_agg.set("this", exp.Case(ifs=[exp.If(this=cond.copy(), true=arg.copy())]))
        out = n.copy()
        out.set("this", new_agg)
        return out
    return None


_QUANTIFIED_OPS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_OP_TEXT = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def _quantified(cmp: exp.Expression, q: exp.Any | exp.All) -> exp.Expression:
    """``x op ANY (S)`` / ``x op ALL (S)`` with SQL's three-valued answer, from the aggregates
    of S's one column ``e``: ``= ANY`` is ``x IN (S)`` and ``<> ALL`` is ``x NOT IN (S)``; the
    others are a CASE over ``count(*)``, ``count(e)`` and ``min(e)`` / ``max(e)``, each a scalar
    aggregate subquery over S (correlated as S is). ANY holds when x compares so with the
    extreme value that is easiest; ALL fails when it does not with the hardest. Neither
    decided: NULL where x or some e is NULL, else ALL is true and ANY false (and over no rows
    ALL is true, ANY false)."""
    x = cmp.this
    op = type(cmp)
    body = q.this.this if isinstance(q.this, exp.Subquery) else q.this
    is_any = isinstance(q, exp.Any)
    if op is exp.EQ and is_any and row_fields(x) is None:
        return exp.In(this=x.copy(), query=exp.Subquery(this=body.copy()))
    if op is exp.NEQ and not is_any and row_fields(x) is None:
        return exp.Not(this=exp.In(this=x.copy(), query=exp.Subquery(this=body.copy())))
    if row_fields(x) is not None:
        return row_quantified(row_fields(x), _OP_TEXT[op], is_any, body)

    def over(agg) -> exp.Expression:  # (SELECT agg(e) FROM ...) of S
        if isinstance(body, exp.Select) and len(body.expressions) == 1 and not any(
                body.args.get(k) for k in ("group", "having", "limit", "offset", "distinct", "qualify", "order")) \
                and not list(body.expressions[0].find_all(exp.AggFunc, exp.Window)) \
                and not _is_star(body.expressions[0]):
            sub = body.copy()
            e = sub.expressions[0]
            e = e.this if isinstance(e, exp.Alias) else e
            sub.set("expressions", [agg(e.copy())])
        else:  # S as a derived table (it may not refer to outer columns then)
            alias = exp.TableAlias(this=exp.to_identifier("quantified"), columns=[exp.to_identifier("quantified_value")])
            alias.meta["one_column"] = True  # sources checks S has one column (SELECT * may hide two)
            sub = exp.select(agg(exp.column("quantified_value"))).from_(exp.Subquery(this=body.copy(), alias=alias))
        return exp.Subquery(this=sub)

    count_all = over(lambda e: exp.Count(this=exp.Star()))
    unknown = exp.or_(exp.Is(this=x.copy(), expression=exp.Null()),
                      exp.GT(this=count_all.copy(), expression=over(lambda e: exp.Count(this=e))))
    none = exp.EQ(this=count_all.copy(), expression=exp.Literal.number(0))
    if op in (exp.EQ, exp.NEQ):  # = ALL / <> ANY: against both extremes
        differs = exp.or_(exp.NEQ(this=x.copy(), expression=over(lambda e: exp.Min(this=e))),
                          exp.NEQ(this=x.copy(), expression=over(lambda e: exp.Max(this=e))))
        ifs = [(none, not is_any), (differs, is_any), (unknown, None)]
    else:
        low = op in (exp.GT, exp.GTE)  # x > ANY: the least value; x > ALL: the greatest
        pick = (exp.Min if low else exp.Max) if is_any else (exp.Max if low else exp.Min)
        holds = op(this=x.copy(), expression=over(lambda e: pick(this=e)))
        ifs = [(holds, True), (none, False), (unknown, None)] if is_any else \
            [(none, True), (exp.Not(this=exp.Paren(this=holds)), False), (unknown, None)]
    lit = {True: exp.true(), False: exp.false(), None: exp.Null()}
    return exp.Paren(this=exp.Case(ifs=[exp.If(this=c, true=lit[v]) for c, v in ifs], default=lit[not is_any]))


def _is_star(e: exp.Expression) -> bool:
    """``*`` or ``t.*``: columns the tree does not name (the derived-table form counts them)."""
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))


def _glob_regex(pattern: str) -> str:
    """A GLOB pattern as an RE2 regular expression over the whole string: ``*`` any text,
    ``?`` one character, ``[...]`` / ``[!...]`` a class, ``\\x`` and everything else itself."""
    out, i = ["(?s)^"], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):  # an escaped character is itself
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in pattern[i + 2:] + pattern[i + 1:i + 2]:
            j = pattern.index("]", i + 2 if pattern[i + 1:i + 2] in ("]", "!") else i + 1)
            body = pattern[i + 1:j]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = j
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out) + "$"


def _is_date_part(n: exp.Expression) -> bool:
    return isinstance(n, exp.Anonymous) and str(n.this).lower() in ("date_part", "datepart") \
        and len(n.expressions) == 2 and isinstance(n.expressions[0], exp.Literal) and n.expressions[0].is_string


def _is_csv_auto(n: exp.Expression) -> bool:
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "read_csv_auto" and isinstance(n.parent, exp.Table)


def _inline_windows(sel: exp.Select) -> None:
    defs: dict[str, exp.Window] = {}
    for w in sel.args["windows"]:
        name = w.this.name.lower()
        if name in defs:
            raise PlanError(f"window {name!r} is defined twice")
        defs[name] = _compose(w, defs, f"window {name!r}")
    for node in list(sel.walk()):
        if isinstance(node, exp.Window) and node.args.get("alias") is not None and _owner(node) is sel:
            node.replace(_compose(node, defs, "OVER"))
    sel.set("windows", None)


def _compose(w: exp.Window, defs: dict[str, exp.Window], where: str) -> exp.Window:
    """``w`` with the window it refers to (its ``alias`` in a reference, its ``this`` naming
    an earlier window in a definition such as ``WINDOW b AS (a ORDER BY x)``) filled in."""
    ref = w.args.get("alias")
    is_def = not isinstance(w.this, exp.Expression) or isinstance(w.this, exp.Identifier)
    if is_def:
        # A definition: WINDOW name AS ([base] ...); sqlglot keeps a base name in "alias".
        ref = w.args.get("alias")
    if ref is None:
        return w
    name = ref.name.lower()
    base = defs.get(name)
    if base is None:
        raise PlanError(f"{where}: window {name!r} is not defined")
    out = w.copy()
    out.set("alias", None)
    if w.args.get("partition_by"):
        raise PlanError(f"{where}: cannot override PARTITION BY of window {name!r}")
    if base.args.get("partition_by"):
        out.set("partition_by", [p.copy() for p in base.args["partition_by"]])
    if base.args.get("order") is not None:
        if w.args.get("order") is not None:
            raise PlanError(f"{where}: cannot override ORDER BY of window {name!r}")
        out.set("order", base.args["order"].copy())
    if base.args.get("spec") is not None:
        if w.args.get("spec") is not None:
            raise PlanError(f"{where}: cannot override the frame of window {name!r}")
        out.set("spec", base.args["spec"].copy())
    return out


def _owner(node: exp.Expression) -> exp.Select | None:
    p = node.parent
    while p is not None and not isinstance(p, exp.Select):
        p = p.parent
    return p
