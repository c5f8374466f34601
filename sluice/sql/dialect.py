"""sqlglot's DuckDB dialect, less two ways it misreads DuckDB:

- its DATE_TRUNC / DATE_DIFF builders turn any first argument into a unit name, so
  ``date_trunc(s, d)`` over a column ``s`` read as the unit ``S``. A unit that is not a string
  constant stays a plain function call here, which the translator refuses by name;
- a typed literal followed by ``::`` (``DATE '2020-01-01'::VARCHAR``) cast the string first and
  gave a DATE; DuckDB casts the DATE, giving a VARCHAR;
- ARG_MIN / ARG_MAX / QUANTILE* and ANY_VALUE are built without counting their arguments
  (``argmin()`` had no value, ``arg_max(x)`` no key: internal errors; ``any_value(x, y)``
  dropped ``y``): a wrong number of arguments is a one-line error here, as in DuckDB;
- ARG_MIN_NULL / ARG_MAX_NULL are ARG_MIN / ARG_MAX that keep rows whose value is NULL
  (:class:`ArgMinNull`, read by the aggregation translator);
- PRODUCT and DECIMAL_AVERAGE are aggregates (:class:`Product`, :class:`DecimalAverage`), not
  unknown functions;
- VARCHAR's parameters were dropped unchecked (``varchar(1.5)`` read as VARCHAR).
- ``WITH RECURSIVE t USING KEY (k, min(v) AS v)`` took column names only (an aggregate, with or
  without an alias, was a syntax error): the key list is read as expressions here, and the
  translator (:mod:`sluice.sql.recursive_key`) checks them as DuckDB's binder does;
- JARO_WINKLER_SIMILARITY's third argument is DuckDB's score cutoff, not a case-insensitive
  flag (whose SQL compares the UPPER of both strings): the call stays a plain function call,
  read by name (``sluice.sql.coverage.KNOWN_CALLS``).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.tokens import TokenType

from sluice.errors import PlanError
from sqlglot.parser import TIME_ZONE_RE


def wrong_arguments(name: str) -> PlanError:
    """DuckDB's binder error for a function called with the wrong number of arguments."""
    return PlanError(f"no function {name} with these arguments (wrong number of arguments)")


def _any_value(args):
    if len(args) != 1:
        raise wrong_arguments("ANY_VALUE")
    return exp.IgnoreNulls(this=exp.AnyValue(this=args[0]))


class ArgMinNull(exp.ArgMin):
    """ARG_MIN_NULL(x, key): ARG_MIN whose rows with a NULL ``x`` count (DuckDB's; only a NULL key is skipped)."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["ARG_MIN_NULL"]


class ArgMaxNull(exp.ArgMax):
    """ARG_MAX_NULL(x, key): ARG_MAX whose rows with a NULL ``x`` count."""

    arg_types = {"this": True, "expression": True}
    _sql_names = ["ARG_MAX_NULL"]


class Product(exp.Expression, exp.AggFunc):
    """PRODUCT(x): the product of a group's non-NULL values, as a DOUBLE (DuckDB's)."""

    arg_types = {"this": True}
    _sql_names = ["PRODUCT"]


class DecimalAverage(exp.Expression, exp.AggFunc):
    """DECIMAL_AVERAGE(x): the average of a group's DECIMAL values in their own type, halves
    to even (DuckDB's)."""

    arg_types = {"this": True}
    _sql_names = ["DECIMAL_AVERAGE"]


def _decimal_average(args):
    if len(args) != 1:
        raise wrong_arguments("DECIMAL_AVERAGE")
    return DecimalAverage(this=args[0])


def _product(args):
    if len(args) != 1:
        raise wrong_arguments("PRODUCT")
    return Product(this=args[0])


def _two_arguments(cls, name: str):
    def build(args):
        if len(args) != 2:
            raise wrong_arguments(name)
        return cls(this=args[0], expression=args[1])
    return build


def _text_type(dtype: exp.DataType) -> exp.DataType:
    """VARCHAR(n): DuckDB ignores one integer ``n`` and refuses anything else (sqlglot dropped
    every parameter: varchar(1.5) and varchar(3, 4) were read as VARCHAR)."""
    params = dtype.expressions
    if len(params) > 1 or any(not (isinstance(p.this if isinstance(p, exp.DataTypeParam) else p, exp.Literal)
                                   and str((p.this if isinstance(p, exp.DataTypeParam) else p).this).isdigit())
                              for p in params):
        written = ", ".join(p.sql(dialect="duckdb") for p in params)
        raise PlanError(f"type VARCHAR does not accept the type parameters ({written})")
    dtype.set("expressions", None)
    return dtype


class _CountedArguments:
    """Stands for an expression class in sqlglot's ``_parse_distinct_arg_function``, which
    builds it from its argument list unchecked: the list is checked as sqlglot checks others."""

    def __init__(self, func: type[exp.Func]) -> None:
        self.func = func

    def from_arg_list(self, args: list) -> exp.Func:
        node = self.func.from_arg_list(args)
        if node.error_messages(args):
            raise wrong_arguments(self.func.sql_names()[0])
        return node


def _constant_unit(name: str, build):
    def builder(args):
        unit = args[0] if args else None
        if unit is not None and not (isinstance(unit, exp.Literal) and unit.is_string or isinstance(unit, exp.Var)):
            return exp.Anonymous(this=name, expressions=args)
        return build(args)
    return builder


class Sluice(DuckDB):
    #: Subscripts as written (``l[1]`` is 1, ``l[-1]`` is -1): sqlglot shifts them to 0-based
    #: otherwise (``l[-1]`` read as -2); the translator applies DuckDB's 1-based rules.
    INDEX_OFFSET = 0

    class Parser(DuckDB.Parser):
        FUNCTIONS = {
            **DuckDB.Parser.FUNCTIONS,
            **{k: _constant_unit(k, DuckDB.Parser.FUNCTIONS[k])
               for k in ("DATE_TRUNC", "DATETRUNC", "DATE_DIFF", "DATEDIFF", "DATE_SUB", "DATESUB")
               if k in DuckDB.Parser.FUNCTIONS},
            "ANY_VALUE": _any_value,
            "ARG_MIN_NULL": _two_arguments(ArgMinNull, "ARG_MIN_NULL"),
            "PRODUCT": _product,
            "DECIMAL_AVERAGE": _decimal_average,
            "ARG_MAX_NULL": _two_arguments(ArgMaxNull, "ARG_MAX_NULL"),
            "JARO_WINKLER_SIMILARITY": lambda args: exp.Anonymous(this="jaro_winkler_similarity", expressions=args),
            # DuckDB's REDUCE(list, lambda[, initial]) (sqlglot's Reduce needs other arguments)
            "REDUCE": lambda args: exp.Anonymous(this="reduce", expressions=args),
        }

        TYPE_CONVERTERS = {**DuckDB.Parser.TYPE_CONVERTERS, exp.DataType.Type.TEXT: _text_type}

        def _parse_cte(self):
            # sqlglot's, with USING KEY's list read as expressions (aggregates, aliases)
            index = self._index
            alias = self._parse_table_alias(self.ID_VAR_TOKENS)
            if not alias or not alias.this:
                self.raise_error("Expected CTE to have alias")
            keys = self._parse_wrapped_csv(self._parse_expression) if self._match_text_seq("USING", "KEY") else None
            if not self._match(TokenType.ALIAS) and not self.OPTIONAL_ALIAS_TOKEN_CTE:
                self._retreat(index)
                return None
            comments = self._prev_comments
            if self._match_text_seq("NOT", "MATERIALIZED"):
                materialized = False
            elif self._match_text_seq("MATERIALIZED"):
                materialized = True
            else:
                materialized = None
            cte = self.expression(exp.CTE(this=self._parse_wrapped(self._parse_statement), alias=alias,
                                          materialized=materialized, key_expressions=keys), comments=comments)
            if isinstance(cte.this, exp.Values):
                cte.set("this", self._values_to_select(cte.this))
            return cte

        def _parse_distinct_arg_function(self, func, distinct_index: int = 0):
            return super()._parse_distinct_arg_function(_CountedArguments(func), distinct_index)

        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False):
            # TYPE 'text' [:: ...]: the typed literal first, then what follows applies to it.
            cur, nxt = self._curr, self._next
            if cur is not None and nxt is not None and cur.text.upper() == "ROW" and nxt.token_type == TokenType.L_PAREN:
                # ROW(a, b) in an expression is a row value, not the type ROW(...) (which would
                # read ``ROW(0, 0) < (1, 2)`` as ``ROW(...)<...>`` and fail)
                self._advance()
                args = self._parse_wrapped_csv(self._parse_expression)
                return self._parse_column_ops(exp.Anonymous(this="ROW", expressions=args))
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
    return bool(TIME_ZONE_RE.search(text))
