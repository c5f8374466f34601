"""Which sqlglot nodes and arguments sluice translates; everything else is refused.

The translator reads some arguments of some node types. Anything else the parser may put in a
tree -- a node type the translator has no rule for, or an argument of a known node that it
does not read (a QUALIFY on a SELECT, an EXCLUDE on a ``*``, a percent on a LIMIT, a join
method, an ESCAPE...) -- would otherwise be dropped silently and change the answer. So before
translation, :func:`check_supported` walks the whole tree against :data:`SUPPORTED`, a
whitelist that decides *every* argument of every node type it lists:

- ``READ``: the translator reads it (its values are checked there);
- ``SAME``: it cannot change the result (a spelling variant, such as ``NVL`` for ``COALESCE``);
- ``refuse(name)``: refused with ``unsupported: <name>`` whenever present;
- ``only(test, name)``: read for values that pass ``test``, refused otherwise.

A node type not listed is refused by name; an argument not listed for a listed type (a new
sqlglot release adding one) is refused too. ``tests/sql/test_coverage.py`` proves the table
decides every argument of every listed class and that each undecided argument is refused.
Refusals name the construct as a user writes it (``QUALIFY``, ``function STRPOS``,
``aggregate MEDIAN``, :mod:`sluice.sql.construct_names`), never a sqlglot class name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from sluice.sql.syntax import AGG_FUNCS, is_named_holistic
from sluice.sql.series import is_series
from sluice.sql.dialect import ArgMaxNull, ArgMinNull, DecimalAverage, Product

from sluice.errors import UnsupportedError
from sluice.sql.construct_names import construct_name


@dataclass(frozen=True)
class Rule:
    """How one argument of one node type is treated (see the module docstring)."""

    kind: str                                   # "read" | "same" | "refuse" | "only"
    name: str | Callable[[Any], str] = ""       # construct named in the refusal
    test: Callable[[Any], bool] | None = None   # for "only": values that are read

    def refusal(self, value: Any) -> str | None:
        if self.kind in ("read", "same"):
            return None
        if self.kind == "only" and self.test is not None and self.test(value):
            return None
        return self.name(value) if callable(self.name) else self.name


READ = Rule("read")
SAME = Rule("same")


def refuse(name: str | Callable[[Any], str]) -> Rule:
    return Rule("refuse", name)


def only(test: Callable[[Any], bool], name: str | Callable[[Any], str]) -> Rule:
    return Rule("only", name, test)


def _text(v: Any) -> str:
    return (v.name if isinstance(v, exp.Expression) else str(v)).upper()


# Modifiers a SELECT, a parenthesised query and a set operation may carry, none of which
# sluice implements (the ones it does implement are overridden per node below).
_QUERY_MODIFIERS: dict[str, Rule] = {
    "with_": READ,
    "match": refuse("MATCH_RECOGNIZE"),
    "laterals": refuse("LATERAL"),
    "joins": refuse("joins on a parenthesised query"),
    "connect": refuse("CONNECT BY"),
    "pivots": refuse("PIVOT / UNPIVOT"),
    "prewhere": refuse("PREWHERE"),
    "where": refuse("WHERE on a parenthesised query"),
    "group": refuse("GROUP BY on a parenthesised query"),
    "having": refuse("HAVING on a parenthesised query"),
    "qualify": READ,
    "windows": refuse("WINDOW clause"),
    "distribute": refuse("DISTRIBUTE BY"),
    "sort": refuse("SORT BY"),
    "cluster": refuse("CLUSTER BY"),
    "order": refuse("ORDER BY on a parenthesised query"),
    "limit": refuse("LIMIT on a parenthesised query"),
    "offset": refuse("OFFSET on a parenthesised query"),
    "locks": refuse("FOR UPDATE / FOR SHARE"),
    "sample": refuse("USING SAMPLE / TABLESAMPLE"),
    "settings": refuse("SETTINGS"),
    "format": refuse("FORMAT"),
    "options": refuse("OPTION (...)"),
    "for_": refuse("FOR XML / FOR JSON"),
}

_SELECT = {
    **_QUERY_MODIFIERS,
    "expressions": READ, "from_": READ, "joins": READ, "where": READ, "group": READ, "having": READ,
    "order": READ, "limit": READ, "offset": READ, "distinct": READ,
    "kind": refuse(lambda v: f"SELECT AS {_text(v)}"),
    "hint": refuse("query hints"),
    "into": refuse("SELECT INTO"),
    "exclude": refuse("SELECT ... EXCLUDE"),
    "operation_modifiers": refuse("SELECT modifiers"),
}

def _set_operation(kind: str) -> dict[str, Rule]:
    return {
        **_QUERY_MODIFIERS,
        "this": READ, "expression": READ, "distinct": READ, "order": READ, "limit": READ, "offset": READ,
        "by_name": READ if kind == "UNION" else refuse(f"{kind} BY NAME"),
        "side": refuse(lambda v: f"{_text(v)} {kind}"),
        "kind": refuse(lambda v: f"{_text(v)} {kind}"),
        "on": refuse(f"{kind} ... ON"),
    }

#: Plain calls (``exp.Anonymous``) the translator implements, by lower-case name
#: (``sluice.sql.expressions._x_anonymous``); any other is refused by name.
#: Plain calls over nested values (``sluice.sql.nested``), by lower-case name -> the plan function.
NESTED_CALLS = {"list_sum": "list_sum", "list_min": "list_min", "list_max": "list_max", "list_avg": "list_avg",
                "list_has": "list_contains", "list_extract": "list_extract", "list_element": "list_extract",
                "array_extract": "list_extract", "element_at": "map_extract", "map_extract": "map_extract",
                "map_extract_value": "map_extract_value", "map_values": "map_values", "cardinality": "list_len",
                "len": "list_len", "list_concat": "list_concat", "list_cat": "list_concat",
                "array_concat": "list_concat", "list_sort": "list_sort", "list_distinct": "list_distinct",
                "list_slice": "list_slice", "map_entries": "map_entries", "list_has_all": "list_has_all",
                "array_has_any": "list_has_any", "list_has_any": "list_has_any", "array_has_all": "list_has_all"}

#: Lambda functions over lists (``sluice.sql.lambdas``), by lower-case name -> what they do.
LAMBDA_CALLS = {"list_transform": "transform", "array_transform": "transform", "list_apply": "transform",
                "array_apply": "transform", "list_filter": "filter", "array_filter": "filter", "filter": "filter",
                "list_reduce": "reduce", "array_reduce": "reduce", "reduce": "reduce"}

KNOWN_CALLS = frozenset({"damerau_levenshtein", "hamming", "mismatches", "jaro_similarity",
                         "jaro_winkler_similarity", "jaccard", "parse_filename", "parse_dirname", "parse_dirpath", "parse_path",
                         "bar", "equi_width_bins", "format_bytes", "pg_size_pretty", "formatreadablesize",
                         "formatreadabledecimalsize", "isfinite", "bit_count", "octet_length", "set_bit",
                         "bit_position", "bitstring", "finalize", "combine", "combine_aggr",
                         "__sluice_state_field", "__sluice_state_number", "round_even", "roundbankers",
                         "nextafter", "regexp_escape", "regexp_split_to_array"}) | frozenset(NESTED_CALLS) | frozenset(LAMBDA_CALLS)

_JOIN_KINDS = {"INNER", "OUTER", "CROSS", "SEMI", "ANTI"}
_JOIN_SIDES = {"LEFT", "RIGHT", "FULL"}

_BINARY = {"this": READ, "expression": READ}
_UNARY = {"this": READ}

SUPPORTED: dict[type, dict[str, Rule]] = {
    # ---- queries
    exp.Select: _SELECT,
    exp.Subquery: {**_QUERY_MODIFIERS, "this": READ, "alias": READ},
    exp.Lateral: {"this": READ, "alias": READ, "view": refuse("LATERAL VIEW"), "outer": refuse("OUTER APPLY"),
                  "cross_apply": refuse("CROSS APPLY"), "ordinality": refuse("WITH ORDINALITY")},
    exp.Union: _set_operation("UNION"),
    exp.Intersect: _set_operation("INTERSECT"),
    exp.Except: _set_operation("EXCEPT"),
    exp.With: {"expressions": READ, "recursive": READ, "search": refuse("SEARCH clause"),
               "cycle": refuse("CYCLE clause"), "udfs": refuse("functions defined in WITH")},
    exp.CTE: {"this": READ, "alias": READ, "materialized": SAME, "scalar": refuse("scalar WITH expressions"),
              "key_expressions": READ},
    exp.From: {"this": READ},
    exp.Join: {
        "this": READ, "on": READ,
        "side": only(lambda v: _text(v) in _JOIN_SIDES, lambda v: f"{_text(v)} JOIN"),
        "kind": only(lambda v: _text(v) in _JOIN_KINDS, lambda v: f"{_text(v)} JOIN"),
        "using": READ,
        # POSITIONAL pairs rows by their place in each side's stream; sluice's rows carry none
        # (row groups pruned, split across ranks, decoded in parallel): refused with a way round
        "method": only(lambda v: _text(v) in ("NATURAL", "ASOF"), lambda v: _POSITIONAL if _text(v) == "POSITIONAL"
                       else f"{_text(v)} JOIN"),
        "global_": refuse("GLOBAL JOIN"), "hint": refuse("join hints"),
        "match_condition": refuse("ASOF JOIN"), "nearest": refuse("ASOF JOIN"),
        "directed": refuse("DIRECTED JOIN"), "expressions": refuse("JOIN ... USING"),
        "pivots": refuse("PIVOT / UNPIVOT"),
    },
    exp.Table: {
        "this": READ, "alias": READ,
        "db": READ, "catalog": READ,  # the translator refuses schema-qualified names itself
        "laterals": refuse("LATERAL"), "joins": refuse("joins inside a table reference"),
        "pivots": refuse("PIVOT / UNPIVOT"), "hints": refuse("table hints"),
        "system_time": refuse("FOR SYSTEM_TIME"), "version": refuse("time travel (AT / VERSION)"),
        "format": refuse("table FORMAT"), "pattern": refuse("table PATTERN"),
        "ordinality": refuse("WITH ORDINALITY"), "when": refuse("table WHEN"), "only": refuse("ONLY"),
        "partition": refuse("PARTITION selection"), "changes": refuse("CHANGES"),
        "rows_from": refuse("ROWS FROM"), "sample": refuse("USING SAMPLE / TABLESAMPLE"),
        "indexed": refuse("INDEXED BY"),
    },
    exp.TableAlias: {"this": READ, "columns": READ},
    exp.Where: _UNARY,
    exp.Having: _UNARY,
    exp.Rollup: {"expressions": READ},
    exp.Cube: {"expressions": READ},
    exp.GroupingSets: {"expressions": READ},
    # A list is read only as read_parquet's argument; anywhere else the translator refuses it.
    exp.Array: {"expressions": READ, "bracket_notation": SAME, "value_constructor": SAME,
                "struct_name_inheritance": SAME},
    exp.ReadParquet: {"expressions": READ},
    exp.ReadCSV: {"this": READ, "expressions": READ},
    exp.Values: {"expressions": READ, "alias": READ, "order": refuse("VALUES ... ORDER BY"),
                 "limit": refuse("VALUES ... LIMIT"), "offset": refuse("VALUES ... OFFSET"),
                 "pivots": refuse("PIVOT")},
    # A row value is read only as a grouping set; anywhere else the translator refuses it.
    exp.Tuple: {"expressions": READ},
    exp.Grouping: {"expressions": READ},
    exp.Group: {"expressions": READ, "all": READ, "rollup": refuse("ROLLUP"),
                "cube": refuse("CUBE"), "grouping_sets": refuse("GROUPING SETS"), "totals": refuse("WITH TOTALS")},
    # ``f(x ORDER BY y)`` puts an Order holding x in f's argument: read for the aggregates
    # (sluice.sql.aggregation: the order-sensitive ones follow it, the others drop it as DuckDB)
    # and for the aggregates over a window that drop it.
    exp.Order: {"expressions": READ,
                "this": only(lambda v: isinstance(v.parent, exp.Order) and _ordered_call(v.parent),
                             "ORDER BY inside this function's arguments"),
                "siblings": refuse("ORDER SIBLINGS BY")},
    exp.Ordered: {"this": READ, "desc": READ, "nulls_first": READ, "with_fill": refuse("WITH FILL")},
    exp.Limit: {"expression": READ, "this": refuse("LIMIT on this expression"), "offset": refuse("LIMIT ... OFFSET form"),
                "limit_options": READ, "expressions": refuse("LIMIT BY")},
    exp.LimitOptions: {"percent": refuse("LIMIT ... PERCENT"), "rows": SAME, "with_ties": refuse("WITH TIES")},
    exp.Offset: {"expression": READ, "this": refuse("OFFSET on this expression"), "expressions": refuse("OFFSET BY")},
    exp.Distinct: {"expressions": READ, "on": READ},
    # COLUMNS(*), COLUMNS('regex'), COLUMNS(['a', 'b']): expanded to the columns it names as a
    # select-list item or a DISTINCT ON key (sluice.sql.select_list); inside an expression refused.
    exp.Columns: {"this": only(lambda v: _expanded_columns(v.parent), "COLUMNS(...) inside an expression or aliased"),
                  "unpack": refuse("*COLUMNS(...) unpacked")},
    exp.Star: {"except_": READ, "replace": READ, "rename": refuse("SELECT * RENAME"), "ilike": refuse("SELECT * ILIKE")},
    # ---- names and constants
    exp.Alias: {"this": READ, "alias": READ},
    exp.Identifier: {"this": READ, "quoted": SAME, "global_": refuse("GLOBAL names"), "temporary": refuse("temporary names")},
    exp.Column: {"this": READ, "table": READ, "db": READ,  # s.a.b (a struct's fields) only; else refused there
                 "catalog": refuse("catalog-qualified column names"), "join_mark": refuse("(+) outer join marks"),
                 "shadow": refuse("shadowed column references")},
    exp.Literal: {"this": READ, "is_string": READ},
    exp.Null: {},
    exp.RawString: {"this": READ},
    exp.Overlay: {"this": READ, "expression": READ, "from_": READ, "for_": READ},
    exp.Typeof: {"this": READ},
    exp.Translate: {"this": READ, "from_": READ, "to": READ},
    exp.Ascii: {"this": READ},
    exp.SimilarTo: _BINARY,
    **{c: {**_BINARY, "padside": refuse("bitwise operators with padding")}
       for c in (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)},
    **{c: {**_BINARY, "requires_int128": refuse("128-bit shifts")} for c in (exp.BitwiseLeftShift, exp.BitwiseRightShift)},
    exp.Getbit: {"this": READ, "expression": READ,
                 "zero_is_msb": only(lambda v: _text(v).lower() == "true", lambda v: "GET_BIT from the least significant bit")},
    exp.BitwiseNot: {"this": READ}, exp.BitLength: {"this": READ},
    exp.RegexpFullMatch: {"this": READ, "expression": READ, "options": READ},
    exp.Chr: {"expressions": READ, "charset": refuse("CHR ... USING a character set")},  # a dollar-quoted string: $$text$$, $tag$text$tag$
    exp.Boolean: {"this": READ},
    exp.Var: {"this": READ},  # an INTERVAL unit or an EXTRACT field; elsewhere the translator refuses it
    exp.Interval: {"this": READ, "unit": READ, "fraction_in_string": READ},
    # LIST (INT[]), STRUCT(a INT) / ROW(...) and MAP(K, V) types too: sql_type reads them
    exp.DataType: {"this": READ, "expressions": READ, "nested": READ,
                   "values": refuse("typed constructors or fixed-size ARRAY types"), "kind": refuse("type kinds"),
                   "nullable": refuse("NULL / NOT NULL type modifiers"), "collate": refuse("COLLATE")},
    exp.DataTypeParam: {"this": READ, "expression": refuse("type parameters with options")},
    # a STRUCT type's field: its name and type (read by sql_type)
    exp.ColumnDef: {"this": READ, "kind": READ, "constraints": refuse("constraints on a STRUCT field"),
                    "exists": refuse("IF NOT EXISTS on a STRUCT field"), "position": refuse("field positions"),
                    "default": refuse("a STRUCT field's DEFAULT"), "output": refuse("OUTPUT fields")},
    exp.Paren: _UNARY,
    # ---- operators
    **{c: _BINARY for c in (exp.Add, exp.Sub, exp.Mul, exp.EQ, exp.NEQ, exp.LT, exp.LTE,
                            exp.GT, exp.GTE, exp.And, exp.Or)},
    # sqlglot >= 30.31 marks a dialect whose % by zero is NULL (MySQL, Spark) with ``safe``; sluice
    # parses DuckDB's SQL, where it is False, and its % by zero is an error like DuckDB's.
    exp.Mod: {"this": READ, "expression": READ, "safe": refuse("safe modulo of a dialect's %")},
    exp.Div: {"this": READ, "expression": READ, "typed": refuse("integer division of a dialect's /"),
              "safe": refuse("safe division of a dialect's /")},
    exp.DPipe: {"this": READ, "expression": READ, "safe": SAME},  # || is NULL if an operand is
    exp.Neg: _UNARY,
    exp.Not: _UNARY,
    exp.Between: {"this": READ, "low": READ, "high": READ, "symmetric": refuse("BETWEEN SYMMETRIC")},
    exp.Is: {"this": READ, "expression": READ, "negate": refuse("IS NOT with this operand")},
    exp.In: {"this": READ, "expressions": READ, "query": READ, "unnest": refuse("IN UNNEST"),
             "field": refuse("IN with a field"), "is_global": refuse("GLOBAL IN")},
    exp.Like: {"this": READ, "expression": READ, "negate": READ},
    exp.ILike: {"this": READ, "expression": READ, "negate": READ},
    exp.Escape: _BINARY,  # LIKE ... ESCAPE: read with the LIKE it wraps
    exp.Exists: {"this": READ, "expression": refuse("EXISTS with options")},
    # ---- functions
    exp.Case: {"this": READ, "ifs": READ, "default": READ},
    exp.If: {"this": READ, "true": READ, "false": READ},
    exp.StartsWith: _BINARY,
    exp.EndsWith: _BINARY,
    exp.Contains: {"this": READ, "expression": READ, "json_scope": refuse("CONTAINS on JSON")},
    exp.StrPosition: {"this": READ, "substr": READ, "position": refuse("STRPOS from a position"),
                      "occurrence": refuse("STRPOS of a later occurrence"), "clamp_position": SAME},
    exp.Replace: {"this": READ, "expression": READ, "replacement": READ},
    exp.SplitPart: {"this": READ, "delimiter": READ, "part_index": READ,
                    "part_index_zero_as_one": refuse("SPLIT_PART counting 0 as 1"),
                    "empty_delimiter_returns_whole": refuse("SPLIT_PART with a dialect's empty-separator rule")},
    exp.Pad: {"this": READ, "expression": READ, "fill_pattern": READ, "is_left": READ},
    exp.RegexpLike: {"this": READ, "expression": READ, "flag": READ,  # 'c' / 'i' (sql/string_calls.py)
                     "full_match": refuse("full-match regular expressions")},
    exp.RegexpReplace: {"this": READ, "expression": READ, "replacement": READ, "modifiers": READ,
                        "position": refuse("REGEXP_REPLACE from a position"),
                        "occurrence": refuse("REGEXP_REPLACE of a later occurrence"), "single_replace": SAME},
    exp.Reverse: _UNARY,
    exp.Levenshtein: {"this": READ, "expression": READ, "ins_cost": refuse("LEVENSHTEIN with costs"),
                      "del_cost": refuse("LEVENSHTEIN with costs"), "sub_cost": refuse("LEVENSHTEIN with costs"),
                      "max_dist": refuse("LEVENSHTEIN with a maximum distance")},
    # a plain call f(...) sqlglot has no class for: read by name where the translator knows it
    exp.Anonymous: {"this": only(lambda v: str(v).lower() in KNOWN_CALLS, lambda v: f"function {str(v).upper()}"),
                    "expressions": READ},
    # ---- nested values (sluice.sql.nested)
    exp.Dot: _BINARY,
    exp.StructExtract: _BINARY,
    exp.Struct: {"expressions": READ},
    exp.PropertyEQ: {"this": READ, "expression": READ},  # only in a struct constant (the translator)
    exp.Array: {"expressions": READ, "value_constructor": SAME, "bracket_notation": SAME,
                "struct_name_inheritance": refuse("lists of structs named by their first")},
    exp.Bracket: {"this": READ, "expressions": READ, "safe": refuse("safe subscripts"),
                  "offset": refuse("subscripts of another dialect"),
                  "returns_list_for_maps": refuse("map subscripts that return lists"),
                  "json_access": refuse("JSON subscripts")},
    exp.Slice: {"this": READ, "expression": READ, "step": refuse("list slices with a step")},
    exp.ArraySize: {"this": READ, "expression": refuse("ARRAY_LENGTH of a dimension")},
    exp.ArrayContains: {"this": READ, "expression": READ, "ensure_variant": refuse("LIST_CONTAINS of variants"),
                        "check_null": refuse("ARRAY_CONTAINS of a dialect's NULL rule")},
    exp.ArrayOverlaps: {"this": READ, "expression": READ, "null_safe": refuse("a dialect's NULL-safe ARRAY_OVERLAPS")},
    exp.ArrayContainsAll: _BINARY,
    exp.ArrayContainedBy: _BINARY,
    exp.ArrayConcat: {"this": READ, "expressions": READ, "null_propagation": only(lambda v: not v, "LIST_CONCAT "
                                                                                   "that is NULL with a NULL list")},
    exp.ArraySort: {"this": READ, "expression": refuse("LIST_SORT with a comparator"), "asc": READ, "nulls_first": READ},
    exp.ArrayDistinct: {"this": READ, "check_null": only(lambda v: not v or (isinstance(v, exp.Boolean) and not v.this), "ARRAY_DISTINCT of a dialect")},
    exp.MapKeys: _UNARY,
    exp.Map: {"keys": READ, "values": READ},  # MAP(keys, values); MAP() is refused by the translator
    exp.ToMap: _UNARY,  # MAP {'k': v, ...}
    exp.MapFromEntries: _UNARY,
    # lambda functions and list comprehensions (sluice.sql.lambdas)
    exp.Lambda: {"this": READ, "expressions": READ},
    exp.Transform: _BINARY,
    exp.ArrayFilter: _BINARY,
    exp.Comprehension: {"this": READ, "expression": READ, "position": READ, "iterator": READ, "condition": READ},
    # FROM t, UNNEST(t.l) AS u(x) (sluice.sql.nested.UnnestSources); SELECT UNNEST(l) is rewritten so
    exp.Unnest: {"expressions": READ, "alias": READ, "offset": READ,
                 "explode_array": refuse("UNNEST of arrays of structs")},
    exp.ArrayMin: _UNARY,
    exp.ArrayMax: _UNARY,
    exp.Left: {"this": READ, "expression": READ, "negative_length_returns_empty": refuse("LEFT of a dialect")},
    exp.Right: {"this": READ, "expression": READ, "negative_length_returns_empty": refuse("RIGHT of a dialect")},
    exp.TimestampTrunc: {"this": READ, "unit": READ, "zone": refuse("DATE_TRUNC in a time zone"),
                         "input_type_preserved": SAME},
    exp.DateTrunc: {"this": READ, "unit": READ, "zone": refuse("DATE_TRUNC in a time zone"),
                    "input_type_preserved": SAME},
    exp.DateDiff: {"this": READ, "expression": READ, "unit": READ, "zone": refuse("DATE_DIFF in a time zone"),
                   "big_int": SAME, "date_part_boundary": only(lambda v: v is True, "DATE_DIFF counting whole units")},
    exp.TimeToStr: {"this": READ, "format": READ, "culture": refuse("STRFTIME with a culture"),
                    "zone": refuse("STRFTIME in a time zone")},
    exp.Greatest: {"this": READ, "expressions": READ,
                   "ignore_nulls": only(lambda v: v is True, "GREATEST that is NULL when any argument is")},
    exp.Least: {"this": READ, "expressions": READ,
                "ignore_nulls": only(lambda v: v is True, "LEAST that is NULL when any argument is")},
    exp.Nullif: {"this": READ, "expression": READ},
    exp.Try: {"this": READ},
    exp.Coalesce: {"this": READ, "expressions": READ, "is_nvl": SAME, "is_null": SAME},
    exp.Cast: {"this": READ, "to": READ, "format": refuse("CAST ... FORMAT"), "safe": refuse("TRY_CAST"),
               "action": refuse("CAST with an action"), "default": refuse("CAST ... DEFAULT ON CONVERSION ERROR")},
    exp.TryCast: {"this": READ, "to": READ, "safe": SAME, "format": refuse("TRY_CAST ... FORMAT"),
                  "action": refuse("TRY_CAST with an action"), "default": refuse("TRY_CAST ... DEFAULT"),
                  "requires_string": refuse("TRY_CAST of a dialect that wants strings"),
                  "null_on_text_overflow": refuse("TRY_CAST of a dialect's text overflow"),
                  "probe_date_format": refuse("TRY_CAST probing date formats")},
    exp.Extract: {"this": READ, "expression": READ},
    exp.Year: _UNARY,
    exp.Hour: _UNARY,
    exp.Minute: _UNARY,
    exp.Second: _UNARY,
    exp.DayOfWeek: _UNARY,
    exp.DayOfYear: _UNARY,
    exp.TimeToUnix: _UNARY,
    exp.RegexpExtractAll: {"this": READ, "expression": READ, "group": READ,
                           "parameters": READ,  # 'c' / 'i' (sql/nested.py)
                           "position": refuse("REGEXP_EXTRACT_ALL with a position"),
                           "occurrence": refuse("REGEXP_EXTRACT_ALL with an occurrence")},
    exp.DateBin: {"this": READ, "expression": READ, "unit": READ, "zone": READ, "origin": READ},
    exp.RegexpSplit: {"this": READ, "expression": READ, "limit": READ, "mode": refuse("STRING_SPLIT_REGEX with a mode")},
    exp.Split: {"this": READ, "expression": READ, "limit": refuse("STRING_SPLIT with a limit"),
                "null_returns_null": refuse("SPLIT returning NULL for a NULL separator"),
                "empty_delimiter_returns_whole": refuse("SPLIT of an empty separator as the whole string")},
    exp.ArraySlice: {"this": READ, "start": READ, "end": READ, "step": refuse("ARRAY_SLICE with a step"),
                     "is_length": refuse("ARRAY_SLICE by length"), "zero_based": refuse("zero-based ARRAY_SLICE")},
    exp.RegexpExtract: {"this": READ, "expression": READ, "group": READ,
                        "position": refuse("REGEXP_EXTRACT with a position"),
                        "occurrence": refuse("REGEXP_EXTRACT with an occurrence"),
                        "parameters": refuse("REGEXP_EXTRACT options"),
                        "null_if_pos_overflow": SAME, "null_if_no_match": refuse("REGEXP_EXTRACT returning NULL"),
                        "empty_if_group_missing": SAME},
    exp.Month: _UNARY,
    exp.Day: _UNARY,
    exp.Substring: {"this": READ, "start": READ, "length": READ, "zero_start": refuse("0-based SUBSTRING")},
    exp.Concat: {"expressions": READ, "safe": SAME, "coalesce": READ},
    exp.Upper: _UNARY,
    exp.Lower: _UNARY,
    exp.Trim: {"this": READ, "expression": READ, "position": READ, "collation": refuse("TRIM ... COLLATE")},
    exp.Length: {"this": READ, "binary": refuse("LENGTH of bytes"), "encoding": refuse("LENGTH with an encoding")},
    exp.Abs: _UNARY,
    exp.Floor: {"this": READ, "decimals": refuse("FLOOR to a number of digits"), "to": refuse("FLOOR to a unit")},
    exp.Ceil: {"this": READ, "decimals": refuse("CEIL to a number of digits"), "to": refuse("CEIL to a unit")},
    exp.Trunc: {"this": READ, "decimals": READ, "fractions_supported": SAME},
    exp.Format: {"this": READ, "expressions": READ},
    exp.StrToTime: {"this": READ, "format": READ, "safe": READ, "zone": refuse("STRPTIME with a time zone"),
                    "target_type": refuse("STRPTIME to this type"), "default_year": refuse("STRPTIME with a default year"),
                    "nlsparam": refuse("STRPTIME with NLS parameters")},
    exp.Sqrt: _UNARY,
    exp.Cbrt: _UNARY,
    exp.Ln: _UNARY,
    exp.Log: {"this": READ, "expression": READ},
    exp.Exp: _UNARY,
    exp.Pow: _BINARY,
    exp.Sign: _UNARY,
    exp.IntDiv: _BINARY,
    exp.IsNan: _UNARY,
    exp.IsInf: _UNARY,
    exp.NullSafeEQ: _BINARY,
    exp.NullSafeNEQ: _BINARY,
    exp.Quarter: _UNARY,
    exp.Week: {"this": READ, "mode": refuse("WEEK with a mode")},
    exp.DayOfWeekIso: _UNARY,
    exp.LastDay: {"this": READ, "unit": refuse("LAST_DAY of a unit")},
    exp.DateFromParts: {"year": READ, "month": READ, "day": READ,
                        "allow_overflow": only(lambda v: not v, "MAKE_DATE that rolls over")},
    exp.Repeat: {"this": READ, "times": READ},
    exp.Dayname: {"this": READ, "abbreviated": refuse("abbreviated DAYNAME")},
    exp.Monthname: {"this": READ, "abbreviated": refuse("abbreviated MONTHNAME")},
    exp.DayOfMonth: _UNARY,
    # FIRST_VALUE / LAST_VALUE / LAG / LEAD (x IGNORE NULLS) over a window (read with the window)
    exp.IgnoreNulls: {"this": only(lambda v: isinstance(v, (exp.FirstValue, exp.LastValue, exp.Lag, exp.Lead))
                                   and isinstance(v.parent, exp.IgnoreNulls) and isinstance(v.parent.parent, exp.Window),
                                   "IGNORE NULLS")},
    exp.CurrentDate: {"this": refuse("CURRENT_DATE in a time zone")},
    exp.CurrentTimestamp: {"this": refuse("CURRENT_TIMESTAMP with a precision"), "sysdate": SAME},
    exp.ConcatWs: {"expressions": READ, "safe": SAME, "coalesce": SAME,
                   "flatten": only(lambda v: not v, "CONCAT_WS over lists")},
    exp.Round: {"this": READ, "decimals": READ, "truncate": refuse("ROUND with truncation"),
                "casts_non_integer_decimals": refuse("ROUND with a dialect's casting")},
    # ---- aggregates
    exp.Sum: _UNARY,
    exp.Avg: _UNARY,
    exp.Min: {"this": READ, "expressions": refuse("MIN with several arguments"), "count": refuse("MIN(x, n)")},
    exp.Max: {"this": READ, "expressions": refuse("MAX with several arguments"), "count": refuse("MAX(x, n)")},
    exp.Count: {"this": READ, "big_int": SAME, "expressions": refuse("COUNT with several arguments")},
    exp.Filter: {"this": READ, "expression": READ},
    exp.Stddev: _UNARY,
    exp.StddevSamp: _UNARY,
    exp.StddevPop: _UNARY,
    exp.Variance: _UNARY,
    exp.VariancePop: _UNARY,
    exp.Skewness: _UNARY,
    exp.BitwiseAndAgg: _UNARY,
    exp.BitwiseOrAgg: _UNARY,
    exp.BitwiseXorAgg: _UNARY,
    exp.Median: _UNARY,
    exp.PercentileCont: {"this": READ, "expression": READ},
    exp.PercentileDisc: {"this": READ, "expression": READ},
    exp.Quantile: {"this": READ, "quantile": READ},
    exp.LogicalAnd: _UNARY,
    exp.LogicalOr: _UNARY,
    exp.WithinGroup: {"this": READ, "expression": READ},
    exp.ArgMin: {"this": READ, "expression": READ, "count": refuse("ARG_MIN(x, y, n)")},
    exp.ArgMax: {"this": READ, "expression": READ, "count": refuse("ARG_MAX(x, y, n)")},
    exp.ArrayAgg: {"this": READ, "nulls_excluded": refuse("LIST / ARRAY_AGG ... IGNORE NULLS")},
    ArgMinNull: _BINARY, ArgMaxNull: _BINARY, Product: _UNARY, DecimalAverage: _UNARY,
    exp.GroupConcat: {"this": READ, "separator": READ, "on_overflow": refuse("LISTAGG ... ON OVERFLOW")},
    exp.Mode: {"this": READ, "deterministic": refuse("MODE(x, deterministic)")},
    exp.First: {"this": READ, "expression": refuse("FIRST with several arguments")},
    exp.Last: {"this": READ, "expression": refuse("LAST with several arguments")},
    exp.ApproxDistinct: {"this": READ, "accuracy": refuse("APPROX_COUNT_DISTINCT with an accuracy")},
    # ---- windows
    exp.Qualify: _UNARY,
    exp.Window: {"this": READ, "partition_by": READ, "order": READ, "spec": READ, "over": SAME,
                 "alias": refuse("named windows (OVER w, WINDOW w AS ...)"), "first": refuse("FIRST in OVER")},
    exp.WindowSpec: {"kind": only(lambda v: _text(v) in ("ROWS", "RANGE", "GROUPS"), lambda v: f"{_text(v)} window frames"),
                     "start": READ, "start_side": READ, "end": READ, "end_side": READ,
                     "exclude": READ},  # EXCLUDE CURRENT ROW / GROUP / TIES / NO OTHERS (sql/windows.py)
    exp.RowNumber: {"this": refuse("ROW_NUMBER with an argument")},
    exp.Rank: {"expressions": refuse("RANK with arguments (hypothetical-set)")},
    exp.DenseRank: {"expressions": refuse("DENSE_RANK with arguments (hypothetical-set)")},
    exp.PercentRank: {"expressions": refuse("PERCENT_RANK with arguments (hypothetical-set)")},
    exp.CumeDist: {"expressions": refuse("CUME_DIST with arguments (hypothetical-set)")},
    exp.Ntile: _UNARY,
    exp.Lag: {"this": READ, "offset": READ, "default": READ},
    exp.Lead: {"this": READ, "offset": READ, "default": READ},
    exp.FirstValue: _UNARY,
    exp.LastValue: _UNARY,
    exp.NthValue: {"this": READ, "offset": READ, "from_first": refuse("NTH_VALUE ... FROM FIRST/LAST")},
}

#: Aggregates whose call may hold an ORDER BY (``agg(x ORDER BY k)``): the order-sensitive
#: ones follow it; the others answer the same in any order and drop it, as DuckDB does.
_ORDERED_AGGREGATES = (exp.GroupConcat, exp.First, exp.Last, exp.ArrayAgg, exp.Mode, exp.ArgMin, exp.ArgMax,
                       ArgMinNull, ArgMaxNull, exp.Median, exp.Quantile, exp.PercentileCont,
                       exp.PercentileDisc)
#: Of those, the aggregates over a window that drop it (order-insensitive: sluice.sql.windows).
_ORDER_FREE_WINDOW_AGGREGATES = (exp.Sum, exp.Avg, exp.Count, exp.Min, exp.Max, exp.Stddev, exp.StddevSamp,
                                 exp.StddevPop, exp.Variance, exp.VariancePop)


def _ordered_call(order: exp.Order) -> bool:
    """Whether ``f(x ORDER BY ...)`` is read: an aggregate's call (its argument; ARG_MIN /
    ARG_MAX: its key), not over a window -- there only the order-free aggregates, and
    FIRST_VALUE / LAST_VALUE / NTH_VALUE over a window with no ORDER BY or frame of its own."""
    f = order.parent
    if isinstance(f, exp.Window) or f is None:
        return False
    win = f.parent.parent if isinstance(f.parent, exp.IgnoreNulls) else f.parent
    if isinstance(f, (exp.FirstValue, exp.LastValue, exp.NthValue)) and isinstance(win, exp.Window):
        # FIRST_VALUE(x ORDER BY k) OVER (PARTITION BY p): over the whole partition only
        return win.args.get("order") is None and win.args.get("spec") is None
    if isinstance(f.parent, exp.Window) or (isinstance(f.parent, exp.Filter) and isinstance(f.parent.parent, exp.Window)):
        return isinstance(f, _ORDER_FREE_WINDOW_AGGREGATES)
    return isinstance(f, _ORDERED_AGGREGATES + tuple(AGG_FUNCS)) or is_named_holistic(f)


_POSITIONAL = ("POSITIONAL JOIN (sluice's rows carry no place in their file to pair by; "
               "join each side's row_number() OVER (ORDER BY a key) instead)")


def _expanded_columns(node: exp.Columns) -> bool:
    """Whether ``COLUMNS(...)`` stands where it is expanded: a select-list item of its own or a
    DISTINCT ON key."""
    p = node.parent
    if isinstance(p, exp.Select):
        return node.arg_key == "expressions"
    if isinstance(p, exp.Tuple):
        p = p.parent
    return isinstance(p, exp.Distinct) and node.arg_key in ("on", "expressions")


def _present(v: Any) -> bool:
    return v is not None and v is not False and not (isinstance(v, (list, str)) and len(v) == 0)


def check_supported(tree: exp.Expression) -> None:
    """Raise :class:`UnsupportedError` for the first construct in ``tree`` that sluice would
    not translate in full."""
    for node in tree.walk():
        if is_named_holistic(node):  # MAD(x), HISTOGRAM(x): aggregates sqlglot does not know
            continue
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == "histogram" and len(node.expressions) == 2:
            continue  # HISTOGRAM(x, bins): sluice.sql.binned_histogram
        if is_series(node):  # FROM range(...): its arguments are checked by sluice.sql.series
            continue
        if isinstance(node, exp.Anonymous) and node.args.get("this") is not None \
                and str(node.this).lower() not in KNOWN_CALLS:
            raise UnsupportedError(construct_name(node))
        rules = SUPPORTED.get(type(node))
        if rules is None:
            raise UnsupportedError(construct_name(node))
        for arg, value in node.args.items():
            if not _present(value):
                continue
            rule = rules.get(arg)
            if rule is None:
                raise UnsupportedError(f"{construct_name(node)} with {arg.rstrip('_').upper()}")
            why = rule.refusal(value)
            if why is not None:
                raise UnsupportedError(why)
