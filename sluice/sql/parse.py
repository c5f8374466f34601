"""SQL text -> sqlglot AST, with one-line syntax errors and a parse cache."""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sluice.errors import SqlError, UnsupportedError
from sluice.sql.dialect import Sluice


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


@functools.lru_cache(maxsize=256)
def _parse_cached(sql: str) -> exp.Expression:
    try:
        trees = [t for t in sqlglot.parse(_split_exponent_sums(sql), read=Sluice) if t is not None]
    except ParseError as e:
        errs = getattr(e, "errors", None) or []
        if errs:
            er = errs[0]
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
