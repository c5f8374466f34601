"""SQL text -> sqlglot AST, with one-line syntax errors and a parse cache."""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sluice.errors import PlanError, SqlError, UnsupportedError
from sluice.sql.agg_states import export_state
from sluice.sql.dialect import Sluice, wrong_arguments
from sluice.sql.coverage import KNOWN_CALLS
from sluice.sql.syntax import is_aggregate_call


#: A number with an exponent and its digits, then + or -: sqlglot's tokenizer reads ``1e2+1`` as
#: one number ('1e2+1' -> ValueError) and ``1e2+1e2`` as a number and an alias.
_EXPONENT_THEN_SIGN = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)[eE][+-]?\d+)(?=[+-])")
#: What is not SQL code: strings, quoted names, dollar-quoted strings, comments.
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$|--[^\n]*|/\*.*?\*/", re.S)


def _split_exponent_sums(sql: str) -> str:
    """``1e2+1`` as ``1e2 +1``, outside strings and comments, so that it tokenizes as DuckDB reads it."""
    if "e" not in sql and "E" not in sql:
        return sql
    out, pos = [], 0
    for m in _QUOTED.finditer(sql):
        out.append(_EXPONENT_THEN_SIGN.sub(r"\1 ", sql[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_EXPONENT_THEN_SIGN.sub(r"\1 ", sql[pos:]))
    return "".join(out)


#: sqlglot's own check of a function call's arguments (sum(), lag(1, 2, 3, 4), nth_value(x))
_MISSING_ARGUMENT = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>")
_TOO_MANY_ARGUMENTS = re.compile(r"The number of provided arguments \((\d+)\) is greater than the maximum number "
                                 r"of supported arguments \((\d+)\)")


def _wrong_arguments(er: dict) -> PlanError | UnsupportedError | None:
    """A function called with the wrong number of arguments, as DuckDB's binder reports it (a
    plan error naming the function), not a syntax error quoting sqlglot's class names."""
    description = er.get("description", "")
    many = _TOO_MANY_ARGUMENTS.match(description)
    if many:
        return PlanError(f"a function called with {many.group(1)} arguments takes at most {many.group(2)} "
                         f"(line {er.get('line')}, column {er.get('col')})")
    m = _MISSING_ARGUMENT.match(description)
    cls = getattr(exp, m.group(1), None) if m else None
    if cls is exp.Grouping:
        return UnsupportedError("GROUPING() without arguments")  # (DuckDB: 0)
    if not (isinstance(cls, type) and issubclass(cls, exp.Func)) or issubclass(cls, exp.Cast):
        return None
    return wrong_arguments(cls.sql_names()[0] if cls.sql_names() else m.group(1).upper())


#: Keywords of DuckDB's that sqlglot misreads or fails on, refused by name before parsing:
#: ``agg(x) EXPORT_STATE`` returns the aggregate's state, not its value (``finalize(agg(x)
#: EXPORT_STATE)`` is answered: :func:`_finalized_states`) (sqlglot read the keyword
#: as a column alias: ``first(i) EXPORT_STATE`` answered first(i)).
_REFUSED_KEYWORDS = ((re.compile(r"\bEXPORT_STATE\b", re.I), "EXPORT_STATE (aggregate states)"),)


#: ``finalize(`` opening DuckDB's FINALIZE of an exported aggregate state.
_FINALIZE = re.compile(r"\bfinalize\s*\(", re.I)
_CALL_HEAD = re.compile(r"\s*[A-Za-z_]\w*\s*\(")
_FILTER_HEAD = re.compile(r"\s*FILTER\s*\(", re.I)
_EXPORT_TAIL = re.compile(r"\s+EXPORT_STATE\s*$", re.I)
#: The call FINALIZE(agg EXPORT_STATE) is rewritten to before parsing (then to ``agg`` itself).
_FINALIZED = "__sluice_finalized"
#: The call ``agg EXPORT_STATE`` is rewritten to before parsing (then to the state's tree).
_EXPORTED = "__sluice_export_state"
_EXPORT_STATE = re.compile(r"\bEXPORT_STATE\b", re.I)
_NAME_TAIL = re.compile(r"[A-Za-z_]\w*\s*$")
_FILTER_TAIL = re.compile(r"\bFILTER\s*$", re.I)


def _code_mask(sql: str) -> list[bool]:
    """Per character: True where it is SQL code (not inside a string, quoted name or comment)."""
    mask = [True] * len(sql)
    for m in _QUOTED.finditer(sql):
        mask[m.start():m.end()] = [False] * (m.end() - m.start())
    return mask


def _closing(sql: str, mask: list[bool], open_at: int) -> int | None:
    """The position of the ``)`` matching the ``(`` at ``open_at`` (code only), or None."""
    depth = 0
    for i in range(open_at, len(sql)):
        if not mask[i]:
            continue
        if sql[i] == "(":
            depth += 1
        elif sql[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _one_call(sql: str, mask: list[bool], start: int, end: int) -> bool:
    """Whether ``sql[start:end]`` is one call ``name(...)``, optionally with ``FILTER (...)``."""
    m = _CALL_HEAD.match(sql, start, end)
    if m is None:
        return False
    close = _closing(sql, mask, m.end() - 1)
    if close is None or close >= end:
        return False
    f = _FILTER_HEAD.match(sql, close + 1, end)
    if f is not None:
        close = _closing(sql, mask, f.end() - 1)
        if close is None or close >= end:
            return False
    return not sql[close + 1:end].strip()


def _finalized_states(sql: str) -> str:
    """``finalize(agg(...) EXPORT_STATE)`` -- the exported state of an aggregate finalized at
    once, which is the aggregate's value -- as ``__sluice_finalized(agg(...))``, which
    :func:`_unwrap_finalized` turns into the aggregate (refusing anything else). Other uses of
    EXPORT_STATE (the state itself, COMBINE, TO_AGGREGATE_STATE) stay refused."""
    if "export_state" not in sql.lower():
        return sql
    while True:
        mask = _code_mask(sql)
        for m in _FINALIZE.finditer(sql):
            if not mask[m.start()]:
                continue
            close = _closing(sql, mask, m.end() - 1)
            tail = None if close is None else _EXPORT_TAIL.search(sql, m.end(), close)
            if tail is None or not _one_call(sql, mask, m.end(), tail.start()):
                continue
            sql = f"{sql[:m.start()]}{_FINALIZED}({sql[m.end():tail.start()]}){sql[close + 1:]}"
            break
        else:
            return sql


def _opening(sql: str, mask: list[bool], close_at: int) -> int | None:
    """The position of the ``(`` matching the ``)`` at ``close_at`` (code only), or None."""
    depth = 0
    for i in range(close_at, -1, -1):
        if not mask[i]:
            continue
        if sql[i] == ")":
            depth += 1
        elif sql[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return None


def _call_before(sql: str, mask: list[bool], end: int) -> int | None:
    """Where the call ``name(...)`` (with its ``FILTER (...)``) that ends just before ``end`` starts."""
    close = len(sql[:end].rstrip()) - 1
    if close < 0 or sql[close] != ")" or not mask[close]:
        return None
    open_ = _opening(sql, mask, close)
    if open_ is None:
        return None
    f = _FILTER_TAIL.search(sql, 0, open_)
    if f is not None and mask[f.start()]:
        close = len(sql[:f.start()].rstrip()) - 1
        if close < 0 or sql[close] != ")":
            return None
        open_ = _opening(sql, mask, close)
        if open_ is None:
            return None
    name = _NAME_TAIL.search(sql, 0, open_)
    if name is None or not mask[name.start()] or name.group(0).strip().upper() in ("OVER", "FILTER", "WITHIN"):
        return None  # (a window's EXPORT_STATE stays refused)
    return name.start()


def _exported_states(sql: str) -> str:
    """``agg(...) EXPORT_STATE`` as ``__sluice_export_state(agg(...))``, which :func:`_unwrap_finalized`
    turns into the state's tree (:func:`sluice.sql.agg_states.export_state`). A keyword not after
    a call stays for :func:`_refuse_keywords`."""
    if "export_state" not in sql.lower():
        return sql
    while True:
        mask = _code_mask(sql)
        for m in _EXPORT_STATE.finditer(sql):
            start = _call_before(sql, mask, m.start()) if mask[m.start()] else None
            if start is None:
                continue
            call = sql[start:m.start()].rstrip()
            sql = f"{sql[:start]}{_EXPORTED}({call}){sql[m.end():]}"
            break
        else:
            return sql


def _unwrap_finalized(tree: exp.Expression) -> exp.Expression:

    def unwrap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Anonymous) and str(n.this).lower() == _EXPORTED:
            return export_state(n.expressions[0])
        if isinstance(n, exp.Anonymous) and str(n.this).lower() == _FINALIZED:
            arg = n.expressions[0] if len(n.expressions) == 1 else None
            inner = arg.this if isinstance(arg, exp.Filter) else arg
            if inner is not None and isinstance(inner.args.get("this"), exp.Distinct):
                raise PlanError("EXPORT_STATE is not supported for DISTINCT aggregates (as in DuckDB)")
            if isinstance(arg, exp.AggFunc) or isinstance(arg, exp.Anonymous) and str(arg.this).lower() not in KNOWN_CALLS:
                return arg  # an aggregate, or a call sluice does not know: refused by its name if it must be
            if arg is None or not is_aggregate_call(arg):
                raise UnsupportedError("EXPORT_STATE of something that is not an aggregate call")
            return arg
        return n
    return tree.transform(unwrap, copy=False)


def _upper_slices(tree: exp.Expression) -> exp.Expression:
    """``x[:b]`` and ``x[:b + 1]``: sqlglot reads ``:b`` as a named query parameter, DuckDB (which
    has none of that form) as a slice up to the column ``b``. The parameter at the subscript's
    leftmost position becomes the column, the subscript a slice with no lower bound."""
    for br in list(tree.find_all(exp.Bracket)):
        if len(br.expressions) != 1:
            continue
        sub = br.expressions[0]
        leaf = sub
        while isinstance(leaf, exp.Binary):
            leaf = leaf.this
        if not (isinstance(leaf, exp.Placeholder) and isinstance(leaf.this, str) and leaf.this):
            continue
        column = exp.column(leaf.this)
        if leaf is sub:
            sub = column
        else:
            leaf.replace(column)
        br.set("expressions", [exp.Slice(expression=sub)])
    return tree


def _refuse_keywords(sql: str) -> None:
    """A refused keyword outside strings, quoted names and comments ends the query in one line."""
    found = [(pattern, what) for pattern, what in _REFUSED_KEYWORDS if pattern.search(sql)]
    if not found:
        return
    pos = 0
    for m in [*_QUOTED.finditer(sql), None]:
        code = sql[pos:m.start()] if m else sql[pos:]
        for pattern, what in found:
            if pattern.search(code):
                raise UnsupportedError(what)
        if m:
            pos = m.end()


@functools.lru_cache(maxsize=256)
def _parse_cached(sql: str) -> exp.Expression:
    sql = _exported_states(_finalized_states(sql))
    _refuse_keywords(sql)
    try:
        # (a comment after the last ';' parses as a Semicolon of its own: no statement)
        trees = [t for t in sqlglot.parse(_split_exponent_sums(sql), read=Sluice)
                 if t is not None and not isinstance(t, exp.Semicolon)]
    except ParseError as e:
        errs = getattr(e, "errors", None) or []
        if errs:
            er = errs[0]
            wrong = _wrong_arguments(er)
            if wrong is not None:
                raise wrong from None
            raise SqlError(f"{er.get('description', 'invalid SQL')} at line {er.get('line')}, "
                           f"column {er.get('col')} near {er.get('highlight', '')!r}") from None
        raise SqlError(str(e).splitlines()[0]) from None
    except TokenError as e:
        raise SqlError(str(e).splitlines()[0]) from None
    if not trees:
        raise SqlError("empty query")
    if len(trees) > 1:
        raise UnsupportedError("one statement at a time")
    tree = _unwrap_finalized(trees[0]) if _FINALIZED in sql or _EXPORTED in sql else trees[0]
    if ":" in sql:
        tree = _upper_slices(tree)
    tree.meta["source"] = sql  # refusals quote names as written (sluice.sql.coverage)
    return tree


def parse_sql(sql: str) -> exp.Expression:
    """Parse one statement (DuckDB/PostgreSQL dialect). The cached tree must not be mutated."""
    return _parse_cached(sql.strip().rstrip(";").strip())
