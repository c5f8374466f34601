"""sqlglot's DuckDB dialect, less two ways it misreads DuckDB:

- its DATE_TRUNC / DATE_DIFF builders turn any first argument into a unit name, so
  ``date_trunc(s, d)`` over a column ``s`` read as the unit ``S``. A unit that is not a string
  constant stays a plain function call here, which the translator refuses by name;
- a typed literal followed by ``::`` (``DATE '2020-01-01'::VARCHAR``) cast the string first and
  gave a DATE; DuckDB casts the DATE, giving a VARCHAR;
- JARO_WINKLER_SIMILARITY's third argument is DuckDB's score cutoff, not a case-insensitive
  flag (whose SQL compares the UPPER of both strings): the call stays a plain function call,
  read by name (``sluice.sql.coverage.KNOWN_CALLS``).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.tokens import TokenType


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
            "JARO_WINKLER_SIMILARITY": lambda args: exp.Anonymous(this="jaro_winkler_similarity", expressions=args),
        }

        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False):
            # TYPE 'text' [:: ...]: the typed literal first, then what follows applies to it.
            cur, nxt = self._curr, self._next
            if fallback_to_identifier or cur is None or nxt is None or nxt.token_type != TokenType.STRING \
                    or cur.token_type not in self.TYPE_TOKENS or cur.token_type == TokenType.INTERVAL:
                return super()._parse_type(parse_interval, fallback_to_identifier)
            index = self._index
            data_type = self._parse_types(check_func=True, allow_identifiers=False)
            literal = self._parse_primary() if isinstance(data_type, exp.DataType) else None
            if not isinstance(literal, exp.Literal):
                self._retreat(index)
                return super()._parse_type(parse_interval, fallback_to_identifier)
            if data_type.is_type(exp.DataType.Type.TIMESTAMP) and self.ZONE_AWARE_TIMESTAMP_CONSTRUCTOR \
                    and _has_zone(literal.name):
                data_type = exp.DataType.build("TIMESTAMPTZ")
            parser = self.TYPE_LITERAL_PARSERS.get(data_type.this)
            typed = parser(self, literal, data_type) if parser else exp.Cast(this=literal, to=data_type)
            return self._parse_column_ops(typed)


def _has_zone(text: str) -> bool:
    from sqlglot.parser import TIME_ZONE_RE
    return bool(TIME_ZONE_RE.search(text))
