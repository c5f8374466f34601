"""sqlglot's DuckDB dialect, less what it loses: its DATE_TRUNC / DATE_DIFF builders turn any
first argument into a unit name, so ``date_trunc(s, d)`` over a column ``s`` read as the unit
``S``. A unit that is not a string constant stays a plain function call here, which the
translator refuses by name instead of answering for the wrong unit."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB


def _constant_unit(name: str, build):
    def builder(args):
        unit = args[0] if args else None
        if unit is not None and not (isinstance(unit, exp.Literal) and unit.is_string or isinstance(unit, exp.Var)):
            return exp.Anonymous(this=name, expressions=args)
        return build(args)
    return builder


class Sluice(DuckDB):
    class Parser(DuckDB.Parser):
        FUNCTIONS = {
            **DuckDB.Parser.FUNCTIONS,
            **{k: _constant_unit(k, DuckDB.Parser.FUNCTIONS[k])
               for k in ("DATE_TRUNC", "DATETRUNC", "DATE_DIFF", "DATEDIFF", "DATE_SUB", "DATESUB")
               if k in DuckDB.Parser.FUNCTIONS},
        }
