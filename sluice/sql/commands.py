"""Statements about the data rather than queries of it -- ``DESCRIBE t``, ``DESCRIBE SELECT ...``,
``SHOW TABLES``, ``SUMMARIZE t`` -- answered by rewriting them into a query sluice runs (so they
print, save and stream like any result), with DuckDB's column names.

SUMMARIZE gives per column its type, MIN, MAX (as text), APPROX_COUNT_DISTINCT, AVG and STDDEV
(numbers only), COUNT and the NULL percentage; one scan of one column each. (DuckDB also gives
approximate quartiles, which are not comparable across engines; sluice leaves them out.)
"""

from __future__ import annotations

import re

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.types import LType

_NAMES = {"bool": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
          "float32": "FLOAT", "float64": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP",
          "timestamptz": "TIMESTAMP WITH TIME ZONE", "interval": "INTERVAL", "string": "VARCHAR",
          "null": "\"NULL\""}  # (a bare NULL's type: DuckDB quotes it)


def type_name(t: LType, precision: int | None = None) -> str:
    """A type as DuckDB names it (nested: ``BIGINT[]``, ``STRUCT(a INTEGER)``, ``MAP(VARCHAR, BIGINT)``)."""
    if t.kind == "list":
        return type_name(t.element) + "[]"
    if t.kind == "map":
        return f"MAP({type_name(t.args[0])}, {type_name(t.args[1])})"
    if t.kind == "struct":
        return "STRUCT(" + ", ".join(f"{_field_name(n)} {type_name(u)}" for n, u in t.args) + ")"
    if t.kind == "decimal":
        precision = precision or t.precision or None
        return f"DECIMAL({precision or 18},{t.scale})"
    return _NAMES[t.kind]


def _field_name(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def rewrite_command(ast: exp.Expression, con) -> str | None:
    """The query answering a DESCRIBE / SHOW TABLES / SUMMARIZE statement; None for a query."""
    if isinstance(ast, exp.Show):
        if str(ast.this).upper() != "TABLES" or any(v for k, v in ast.args.items() if k != "this"):
            raise UnsupportedError(f"SHOW {ast.this} (only SHOW TABLES)")
        names = con.tables()
        if not names:
            return "select cast(null as varchar) as name where false"
        return "select * from (values " + ", ".join(f"({_quote(n)})" for n in names) + ") t(name) order by name"
    if isinstance(ast, exp.Describe):
        return _describe(ast.this, con)
    if isinstance(ast, exp.Summarize):
        return _summarize(ast.this, con)
    return None


def _columns(target: exp.Expression, con) -> list[tuple[str, str, LType | None]]:
    """(name, DuckDB type name, type) of a table's or a query's columns."""
    if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier) and not target.args.get("alias"):
        info = con.table(target.name)
        out = []
        for f in info.arrow_schema:
            if f.name in info.unsupported:
                out.append((f.name, str(f.type).upper(), None))
                continue
            t = info.types[f.name]
            prec = f.type.precision if t.kind == "decimal" and hasattr(f.type, "precision") else None
            out.append((f.name, type_name(t, prec), t))
        return out
    sql = target.sql(dialect="duckdb") if not isinstance(target, exp.Table) else f"select * from {target.sql('duckdb')}"
    rel = con.sql(sql)
    schema = rel.plan.schema
    return [(u, type_name(schema[n]), schema[n]) for n, u in zip(rel._names, rel.columns)]


def _describe(target: exp.Expression, con) -> str:
    cols = _columns(target, con)
    if not cols:
        raise PlanError("nothing to describe")
    rows = ", ".join(f"({_quote(n)}, {_quote(t)}, 'YES')" for n, t, _ in cols)
    return ("select column_name, column_type, \"null\", cast(null as varchar) as \"key\", "
            "cast(null as varchar) as \"default\", cast(null as varchar) as extra "
            f"from (values {rows}) t(column_name, column_type, \"null\")")


def _summarize(target: exp.Expression, con) -> str:
    if not (isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier)):
        raise UnsupportedError("SUMMARIZE of a query (name a table)")
    name = target.name
    parts = []
    for col, tname, t in _columns(target, con):
        if t is None:
            continue
        c = _ident(col)
        numeric = t.is_numeric
        avg = f"avg({c})" if numeric else "cast(null as double)"
        std = f"stddev_samp({c})" if numeric else "cast(null as double)"
        parts.append(
            f"select {_quote(col)} as column_name, {_quote(tname)} as column_type, cast(min({c}) as varchar) as min, "
            f"cast(max({c}) as varchar) as max, approx_count_distinct({c}) as approx_unique, {avg} as avg, "
            f"{std} as std, count({c}) as count, "
            f"case when count(*) = 0 then 0.0 else round(100.0 * (count(*) - count({c})) / count(*), 2) end "
            f"as null_percentage from {_ident(name)}")
    if not parts:
        raise PlanError(f"table {name!r} has no columns sluice can read")
    return " union all ".join(parts)
