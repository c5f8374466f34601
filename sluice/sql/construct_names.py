"""Constructs named as a user writes them in SQL (``QUALIFY``, ``function STRPOS``, ``aggregate
MEDIAN``), never as a sqlglot class: every refusal (:mod:`sluice.sql.coverage`, the translator)
quotes these names, and a function refused on purpose carries its reason (:data:`WHY_NOT`).
"""

from __future__ import annotations

from sqlglot import exp

#: Functions refused because answering them as DuckDB does needs what sluice lacks: the reason.
WHY_NOT = {"parse_formatted_bytes": "its result is a UBIGINT, up to 2^64 - 1; sluice's integers are signed "
                                    "64-bit, and a BIGINT result would type and overflow unlike DuckDB's",
           "decimal_division": "its result's scale is max(6, s1 + p2 + 1) and its errors follow the widths: both "
                               "read the operands' precisions, which sluice's DECIMAL type does not carry; "
                               "CAST(a AS DOUBLE) / b divides approximately",
           "approx_quantile": "DuckDB answers from its T-Digest sketch, approximately, and sluice would not give "
                              "the same numbers; QUANTILE_CONT / QUANTILE_DISC answer exactly",
           "approx_top_k": "DuckDB answers from a sketch, approximately; GROUP BY x ORDER BY count(*) DESC "
                           "LIMIT k answers exactly",
           "reservoir_quantile": "DuckDB answers from a random sample; QUANTILE_DISC answers exactly",
           "nextval": "sequences come from CREATE SEQUENCE; sluice runs SELECT queries over files "
                      "(row_number() OVER () numbers rows)",
           "currval": "sequences come from CREATE SEQUENCE; sluice runs SELECT queries over files"}


# Constructs that are not functions, named as written in SQL (for refused node types).
_NAMES: dict[type, str] = {
    exp.TableSample: "USING SAMPLE / TABLESAMPLE",
    exp.RespectNulls: "RESPECT NULLS",
    exp.Pivot: "PIVOT / UNPIVOT",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
    exp.Filter: "aggregate FILTER (WHERE ...)",
    exp.Tuple: "row values (a, b, ...)",
    exp.Struct: "structs",
    exp.Bracket: "subscripts [...]",
    exp.Dot: "field access (a.b.c)",
    exp.Placeholder: "query parameters",
    exp.Parameter: "query parameters",
    exp.Unnest: "UNNEST",
    exp.SimilarTo: "SIMILAR TO",
    exp.Any: "ANY (subquery)",
    exp.All: "ALL (subquery)",
    exp.Collate: "COLLATE",
    exp.Pow: "the power operator",
    exp.Glob: "GLOB",
    exp.RegexpLike: "function REGEXP_MATCHES",
    exp.Distance: "distance operators",
    exp.Kwarg: "named arguments",
    exp.PropertyEQ: "named arguments",
    exp.Slice: "slices",
    exp.Describe: "DESCRIBE",
    exp.Command: "this statement",
    exp.AtTimeZone: "AT TIME ZONE (sluice's session time zone is UTC)",
    exp.Set: "SET (settings are --set KEY=VALUE or connect(..., key=value); the time zone is UTC)",
}


#: Functions whose first argument names a unit; a column there is refused (sluice.sql.dialect).
_UNIT_FIRST = {"DATE_TRUNC", "DATETRUNC", "DATE_DIFF", "DATEDIFF", "DATE_SUB", "DATESUB"}


def construct_name(node: exp.Expression) -> str:
    """The construct ``node`` stands for, named as a user writes it in SQL."""
    for cls in type(node).__mro__:
        if cls in _NAMES:
            return _NAMES[cls]
    if isinstance(node, exp.Func):
        name = _function_name(node)
        if isinstance(node.parent, exp.Table) and node.arg_key == "this":
            return f"table function {name}"
        if isinstance(node, exp.Anonymous) and name in _UNIT_FIRST:  # see sluice.sql.dialect
            return f"{name} with a unit that is not a string constant"
        kind = "aggregate" if isinstance(node, exp.AggFunc) else "function"
        if name.lower() in WHY_NOT:
            return f"{kind} {name} ({WHY_NOT[name.lower()]})"
        return f"{kind} {name}"
    if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Merge)):
        return f"{node.key.upper()} statements (only SELECT queries run)"
    return node.key.upper().replace("_", " ")


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.args.get("this") or "").upper() or "an unknown function"
    # The name as written: the parser records where the function's name token was.
    source = node.root().meta.get("source")
    start, end = node.meta.get("start"), node.meta.get("end")
    if isinstance(source, str) and isinstance(start, int) and isinstance(end, int):
        written = source[start:end + 1]
        if written.replace("_", "").isalnum():
            return written.upper()
    try:
        text = node.sql(dialect="duckdb")
    except Exception:  # noqa: BLE001 - a generator gap must not hide the refusal
        text = ""
    head = text.split("(", 1)[0].strip()
    if head and "(" in text and head.replace("_", "").isalnum():
        return head.upper()
    return node.sql_name()
