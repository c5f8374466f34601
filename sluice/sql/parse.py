"""SQL text -> sqlglot AST, with one-line syntax errors and a parse cache."""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sluice.errors import PlanError, SqlError, UnsupportedError
from sluice.sql.dialect import Sluice, wrong_arguments


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
#: ``agg(x) EXPORT_STATE`` returns the aggregate's state, not its value (sqlglot read the keyword
#: as a column alias: ``first(i) EXPORT_STATE`` answered first(i)).
_REFUSED_KEYWORDS = ((re.compile(r"\bEXPORT_STATE\b", re.I), "EXPORT_STATE (aggregate states)"),)


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
    trees[0].meta["source"] = sql  # refusals quote names as written (sluice.sql.coverage)
    return trees[0]


def parse_sql(sql: str) -> exp.Expression:
    """Parse one statement (DuckDB/PostgreSQL dialect). The cached tree must not be mutated."""
    return _parse_cached(sql.strip().rstrip(";").strip())
