"""Row values against a subquery, as AST rewrites before translation: ``(a, b) IN (SELECT
x, y ...)``, ``(a, b) op ANY / ALL (SELECT x, y ...)`` and ``ROW(a, b)`` (a row value spelled
as a call), each turned into EXISTS subqueries the translator already decorrelates.

DuckDB's answers, which these follow (checked on random rows with NULLs against DuckDB 2.0):

- ``<``, ``<=``, ``>``, ``>=`` compare rows as STRUCTs (:mod:`sluice.sql.row_values`: field by
  field, a NULL field after every value), so one row's comparison is never NULL and ``x < ANY
  (S)`` is ``EXISTS (S where x < s)``, ``x < ALL (S)`` is ``NOT EXISTS (S where NOT x < s)``.
- ``=`` and ``<>`` (IN, NOT IN, ``= ANY``, ``<> ALL``, ``= ALL``, ``<> ANY``) are a mark join's
  three-valued logic per field: one row's ``x = s`` is the AND of ``x_i = s_i`` (NULL where no
  field differs and some field is NULL), ``x <> s`` the OR of ``x_i <> s_i``; ANY is TRUE when
  some row holds, else NULL when some row might (each field's comparison TRUE or NULL), else
  FALSE; ``op ALL`` is ``NOT (negated op ANY)``. In a WHERE conjunct only TRUE keeps a row, so
  there IN is the one EXISTS and NOT IN the NOT EXISTS of the rows that might be equal.
"""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError

_ROW_ALIAS = "row_subquery"


def row_call_to_tuple(n: exp.Expression) -> exp.Tuple | None:
    """``ROW(a, b, ...)`` as the row value ``(a, b, ...)``; None for anything else."""
    if isinstance(n, exp.Anonymous) and str(n.this).lower() == "row" and n.expressions:
        return exp.Tuple(expressions=[a.copy() for a in n.expressions])
    return None


def row_fields(node: exp.Expression) -> list[exp.Expression] | None:
    """The fields of a row value ``(a, b, ...)``, or None when ``node`` is not one."""
    while isinstance(node, exp.Paren):
        node = node.this
    return list(node.expressions) if isinstance(node, exp.Tuple) else None


def row_in(n: exp.In) -> exp.Expression:
    """``(a, b) IN (subquery)`` as EXISTS subqueries (see the module's docstring)."""
    fields = row_fields(n.this)
    body = _body(n.args["query"])
    truth = _truth_context(n)
    if truth == "positive":
        return _exists(body, fields, "=", maybe=False)
    if truth == "negated":  # NOT (x IN S) holds where no row might be equal
        return _exists(body, fields, "=", maybe=True)
    return _three_valued_any(body, fields, "=")


def row_quantified(fields: list[exp.Expression], op: str, is_any: bool, body: exp.Expression) -> exp.Expression:
    """``(a, b) op ANY / ALL (S)`` with ``op`` one of ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``."""
    body = _body(body)
    if op in ("=", "<>"):
        if is_any:
            return _three_valued_any(body, fields, op)
        other = "<>" if op == "=" else "="
        return exp.Not(this=exp.Paren(this=_three_valued_any(body, fields, other)))
    if is_any:
        return exp.Paren(this=_exists(body, fields, op, maybe=False))
    return exp.Not(this=_exists(body, fields, op, maybe=False, negate=True))


def _body(q: exp.Expression) -> exp.Expression:
    return q.this if isinstance(q, exp.Subquery) else q


def _three_valued_any(body, fields, op: str) -> exp.Expression:
    """TRUE where some row holds, NULL where some row might, else FALSE."""
    return exp.Paren(this=exp.Case(ifs=[
        exp.If(this=_exists(body, fields, op, maybe=False), true=exp.true()),
        exp.If(this=_exists(body, fields, op, maybe=True), true=exp.Null())], default=exp.false()))


def _truth_context(n: exp.Expression) -> str | None:
    """"positive" where only ``n`` being TRUE matters (a WHERE conjunct), "negated" where only
    its being FALSE does (``NOT n`` as a WHERE conjunct), else None."""
    node, negated = n, False
    while True:
        parent = node.parent
        if isinstance(parent, (exp.Paren, exp.And)):
            node = parent
        elif isinstance(parent, exp.Not) and not negated:
            negated, node = True, parent
        elif isinstance(parent, exp.Where):
            return "negated" if negated else "positive"
        else:
            return None


def _condition(fields, cols, op: str, maybe: bool, whole: bool = False) -> exp.Expression:
    """One subquery row's test: the whole row compared as a STRUCT (ordered ops, and every op
    where the subquery gives one row value: ``SELECT (x, y)``), or field by field."""
    if len(cols) != len(fields):
        raise PlanError(f"a row value of {len(fields)} fields compared with a subquery of {len(cols)} columns")
    if op not in ("=", "<>") or whole:
        if whole and op == "<>":  # DuckDB answers these with neither rule (NULL where fields are equal)
            raise UnsupportedError("a row value compared with <> ANY / = ALL against a subquery of row values")
        cls = {"=": exp.EQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}[op]
        return cls(this=exp.Tuple(expressions=[f.copy() for f in fields]),
                   expression=exp.Tuple(expressions=[c.copy() for c in cols]))
    cls = exp.EQ if op == "=" else exp.NEQ
    terms = []
    for f, c in zip(fields, cols):
        t: exp.Expression = cls(this=exp.Paren(this=f.copy()), expression=exp.Paren(this=c.copy()))
        if maybe:  # TRUE or unknown
            t = exp.Coalesce(this=t, expressions=[exp.true()])
        terms.append(exp.Paren(this=t))
    joined = terms[0]
    for t in terms[1:]:
        joined = (exp.And if op == "=" else exp.Or)(this=joined, expression=t)
    return exp.Paren(this=joined)


def _exists(body, fields, op: str, maybe: bool, negate: bool = False) -> exp.Exists:
    """EXISTS (a row of the subquery ``body`` whose test holds; ``negate``: fails)."""
    if any(isinstance(n, (exp.AggFunc, exp.Window, exp.Subquery, exp.Exists)) for f in fields for n in f.walk()):
        raise UnsupportedError("a row value with aggregates, windows or subqueries compared with a subquery")
    whole = False
    if isinstance(body, exp.Select) and len(body.expressions) == 1:
        item = body.expressions[0]
        item_fields = row_fields(item.this if isinstance(item, exp.Alias) else item)
        if item_fields is not None:  # SELECT (i, i + 1) FROM ...: one row value, its fields as columns
            whole = True
            body = body.copy()
            body.set("expressions", [f.copy() for f in item_fields])
    if _simple(body) and not _captured(fields, body):
        # S's own SELECT with the test in its WHERE: a correlated S stays correlated
        sub = body.copy()
        cols = [e.this if isinstance(e, exp.Alias) else e for e in sub.expressions]
        cond = _condition(fields, cols, op, maybe, whole)
        sub.set("expressions", [exp.Literal.number(1)])
    else:  # S as a derived table of len(fields) columns (it may not refer to outer columns then)
        names = [f"row_field_{i}" for i in range(len(fields))]
        alias = exp.TableAlias(this=exp.to_identifier(_ROW_ALIAS), columns=[exp.to_identifier(c) for c in names])
        alias.meta["column_count"] = len(fields)  # sources checks S has as many columns
        cond = _condition(fields, [exp.column(c, table=_ROW_ALIAS) for c in names], op, maybe, whole)
        sub = exp.select(exp.Literal.number(1)).from_(exp.Subquery(this=body.copy(), alias=alias))
    if negate:
        cond = exp.Not(this=exp.Paren(this=cond))
    return exp.Exists(this=sub.where(cond, copy=False))


def _captured(fields, body) -> bool:
    """Whether a column of the row value could name a column of S once moved into S's WHERE:
    one not qualified, or qualified with a name S's FROM uses."""
    names = {str(t.alias_or_name).lower() for t in body.find_all(exp.Table, exp.Subquery, exp.TableAlias)}
    return any(not c.table or c.table.lower() in names for f in fields for c in f.find_all(exp.Column))


def _simple(body) -> bool:
    return isinstance(body, exp.Select) and not any(
        body.args.get(k) for k in ("group", "having", "limit", "offset", "distinct", "qualify", "order")) \
        and not any(list(e.find_all(exp.AggFunc, exp.Window)) for e in body.expressions) \
        and not any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                    for e in body.expressions) \
        and not any(isinstance(e, (exp.Subquery, exp.Exists)) for e in body.expressions) \
        and bool(body.expressions)

