"""SQL text -> sqlglot AST, with one-line syntax errors and a parse cache."""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sluice.errors import SqlError, UnsupportedError
from sluice.sql.dialect import Sluice


@functools.lru_cache(maxsize=256)
def _parse_cached(sql: str) -> exp.Expression:
    try:
        trees = [t for t in sqlglot.parse(sql, read=Sluice) if t is not None]
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
