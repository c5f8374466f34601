"""Translations of scalar calls that are rewritings of others or small families of their own:
OVERLAY (substrings around the new text), DuckDB's path functions (``parse_filename``,
``parse_dirname``, ``parse_dirpath``) and PRINTF's placeholders beyond ``%s`` / ``%d``. Registered by :mod:`sluice.sql.expressions`
(``CLASS_CALLS`` by sqlglot class, ``NAMED_CALLS`` for plain calls by name)."""

from __future__ import annotations

import re
import struct

from sqlglot import exp

from sluice.errors import ExecutionError, PlanError, UnsupportedError
from sluice.sql import agg_states, bit_calls, lambdas
from sluice.expr import build as E
from sluice.expr.functions.bins import equi_width_bins as bin_bounds
from sluice.expr.functions.paths import SEPARATORS
from sluice.expr.nodes import NULL_TYPE, Col, Expr, Lit
from sluice.types import BOOL, DATE, is_bit, DAY_US, FLOAT64, INT32, INT64, INT_KINDS, NUMERIC_KINDS, STRING, LType, list_of


def _const(tr, node, ctx, what: str) -> Lit:
    e = tr.expr(node, ctx)
    if not isinstance(e, Lit):
        raise UnsupportedError(f"{what} that is not a constant")
    return e


def overlay(tr, n: exp.Overlay, ctx) -> Expr:
    """OVERLAY(s PLACING r FROM p [FOR k]): ``s``'s characters before ``p``, then ``r``, then
    those from ``p + k`` on (``k`` defaults to ``r``'s length), as DuckDB: a ``p`` before the
    string puts ``r`` first. Positions and length constants; a negative length is refused
    (DuckDB's reading of it is its own)."""
    s, r = tr.expr(n.this, ctx), tr.expr(n.expression, ctx)
    p = _const(tr, n.args["from_"], ctx, "OVERLAY with a position")
    k = _const(tr, n.args["for_"], ctx, "OVERLAY with a length") if n.args.get("for_") is not None else None
    if k is None:
        if not isinstance(r, Lit):
            raise UnsupportedError("OVERLAY of a text that is not a constant without FOR")
        k = Lit(None if r.value is None else len(r.value), INT64)
    for v in (p, k):
        if v.value is not None and not v.type.is_integer:
            raise PlanError(f"OVERLAY needs integer positions, got {v.type}")
    if p.value is None or k.value is None:
        return Lit(None, STRING)
    start, length = int(p.value), int(k.value)
    if length < 0:
        raise UnsupportedError("OVERLAY with a negative length")
    head = E.make_func("substring", [s], (1, start - 1)) if start > 1 else \
        E.make_func("case", [E.make_func("is_null", [s]), Lit(None, STRING), Lit("", STRING)])
    tail = E.make_func("substring", [s], (max(start + length, 1), None))
    return E.make_func("concat", [E.make_func("concat", [head, r]), tail])


_SPEC = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d*))?([a-zA-Z])")


def printf_spec(fmt: str, i: int) -> str | None:
    """The PRINTF placeholder with flags, width or precision at ``fmt[i]`` (``%-5s``,
    ``%08.3f``, ``%x``), or None (``%s`` / ``%d`` alone, or one sluice does not format)."""
    m = _SPEC.match(fmt, i)
    if m is None or m.group(0) in ("%s", "%d", "%i"):
        return None
    flags, conv = m.group(1), m.group(4)
    if conv not in "sdixXoeEfFgG" or ("#" in flags and conv not in "xX") or (conv == "s" and set(flags) - {"-"}):
        return None
    if m.group(3) is not None and conv in "xXo":
        return None
    if m.group(3) == "" and conv in "di":  # DuckDB's '%.d' is a thousands separator, not C's precision 0
        return None
    return m.group(0)


def formatted_value(a: Expr, spec: str) -> Expr:
    """One PRINTF argument as its text under ``spec`` (``sluice.expr.functions.printf``), its
    type checked as DuckDB's formatter checks it: ``%f`` / ``%e`` / ``%g`` take floats and decimals, the integer
    conversions integers and booleans, ``%s`` text and booleans."""
    conv, t = spec[-1], a.type
    if t.kind == "null":
        return Lit(None, STRING)
    if conv in "eEfFgG":
        if not (t.is_float or t.kind == "decimal"):
            raise PlanError(f"PRINTF: {spec} cannot format a {t} value")
        return E.make_func("printf_spec", [E.make_func("cast", [a], (FLOAT64,))], (spec,))
    if conv in "dixXo":
        if t.kind == "bool":
            a = E.make_func("cast", [a], (INT64,))
        elif not t.is_integer:
            raise PlanError(f"PRINTF: {spec} cannot format a {t} value")
        return E.make_func("printf_spec", [a], (spec.replace("i", "d"),))
    if t.kind == "bool":
        a = E.make_func("cast", [a], (STRING,))
    elif t.kind != "string":
        raise UnsupportedError(f"PRINTF {spec} of a {t} value (its text may differ from DuckDB's)")
    return E.make_func("printf_spec", [a], (spec,))


def _path_part(part: str, name: str):
    def translate(tr, n: exp.Anonymous, ctx) -> Expr:
        args = list(n.expressions)
        if not 1 <= len(args) <= (3 if part == "filename" else 2):
            raise PlanError(f"{name.upper()} takes a path" + (", whether to trim the extension" if part == "filename" else "")
                            + " and a separator")
        path = tr.expr(args[0], ctx)
        trim, sep = False, "default"
        for i, a in enumerate(args[1:], start=1):
            v = _const(tr, a, ctx, f"{name.upper()} with an option")
            # PARSE_FILENAME(p, trim, sep): the middle one is the trim, a string read as a BOOLEAN
            trim_arg = part == "filename" and i == 1 and (len(args) == 3 or v.type.kind == "bool")
            if trim_arg and v.type.kind == "string" and v.value is not None:
                v = E.make_func("cast", [v], (BOOL,))
                if not isinstance(v, Lit):
                    raise PlanError(f"{name.upper()}: could not convert the trim option to BOOLEAN")
            if trim_arg and v.type.kind not in ("bool", "null"):
                raise PlanError(f"{name.upper()}: the trim option must be a BOOLEAN")
            if not trim_arg and v.type.kind not in ("string", "null"):
                raise PlanError(f"{name.upper()}: the separator must be a string")
            if v.value is None:  # a NULL option is its default (DuckDB), not a NULL result
                continue
            if trim_arg:
                trim = bool(v.value)
            else:
                sep = path_separator(v.value)
        return E.make_func("path_part", [path], (part, sep, trim))
    return translate


def path_separator(option: str) -> str:
    """DuckDB's separator option: one of its names, spelled exactly (``'system'``, not
    ``'SYSTEM'``); any other string is the default (both slashes)."""
    return option if option in SEPARATORS else "default"


def parse_path(tr, n: exp.Anonymous, ctx) -> Expr:
    """PARSE_PATH(path [, separator]): the path's parts as a list (``functions/string_lists.py``)."""
    args = list(n.expressions)
    if not 1 <= len(args) <= 2:
        raise PlanError("PARSE_PATH takes a path and a separator")
    path = tr.expr(args[0], ctx)
    sep = "default"
    if len(args) == 2:
        v = _const(tr, args[1], ctx, "PARSE_PATH with a separator")
        if v.value is not None:
            if v.type.kind != "string":
                raise PlanError("PARSE_PATH: the separator must be a string")
            sep = path_separator(v.value)
    if path.type.kind == "null":
        return Lit(None, list_of(STRING))
    return E.make_func("parse_path", [path], (sep,))


def bar(tr, n: exp.Anonymous, ctx) -> Expr:
    """BAR(x, min, max[, width = 80]) over constant bounds and width (``functions/bar.py``)."""
    if len(n.expressions) not in (3, 4):
        raise PlanError("BAR takes x, min, max and an optional width")
    x = tr.expr(n.expressions[0], ctx)
    bounds = [_const(tr, a, ctx, "BAR with a bound or width") for a in n.expressions[1:]] + ([Lit(80, INT64)] if len(n.expressions) == 3 else [])
    if any(b.value is None for b in bounds) or x.type.kind == "null":
        return Lit(None, STRING)
    if not (x.type.is_numeric or x.type.kind == "bool") or not all(b.type.is_numeric for b in bounds):
        raise PlanError("BAR needs numbers")
    lo, hi, width = (float(b.value) / 10 ** b.type.scale if b.type.kind == "decimal" else float(b.value) for b in bounds)
    if width != width or width in (float("inf"), float("-inf")):
        raise PlanError("Max bar width must not be NaN or infinity")
    if not 1 <= width <= 1000:
        raise PlanError(f"Max bar width must be {'>= 1' if width < 1 else '<= 1000'}")
    return E.make_func("bar", [x], (lo, hi, width))


def _bin_value(v: Lit, kind: str):
    """A bound of EQUI_WIDTH_BINS as the overload computes with it."""
    if kind == "timestamp":
        return int(v.value) * DAY_US if v.type.kind == "date" else int(v.value)
    if kind == "integer":
        return int(v.value)
    if v.type.kind == "decimal":  # DuckDB's cast: the scaled integer over the power of ten, in doubles
        return float(v.value) / float(10 ** v.type.scale)
    return float(v.value)


def equi_width_bins(tr, n: exp.Anonymous, ctx) -> Expr:
    """EQUI_WIDTH_BINS(min, max, bin_count, nice_rounding) of constants: the list of bounds
    (``functions/bins.py``), typed as ``max`` is (a DECIMAL's as DOUBLE), as in DuckDB."""
    if len(n.expressions) != 4:
        raise PlanError("EQUI_WIDTH_BINS takes min, max, bin_count and nice_rounding")
    lo, hi, count, nice = (_const(tr, a, ctx, "EQUI_WIDTH_BINS with an argument") for a in n.expressions)
    for v in (lo, hi):
        if v.type.kind == "string":
            raise PlanError('Unsupported type "VARCHAR" for equi_width_bins')
    if not (count.type.is_integer or count.type.kind == "null") or nice.type.kind not in ("bool", "null"):
        raise PlanError("EQUI_WIDTH_BINS needs an integer bin count and a boolean nice_rounding")
    kinds = {lo.type.kind, hi.type.kind} - {"null"}
    if kinds <= {"date", "timestamp"}:
        kind = "timestamp"
    elif all(k in INT_KINDS or k == "bool" for k in kinds):
        kind = "integer"
    elif all(k in NUMERIC_KINDS for k in kinds):
        kind = "double"
    else:
        raise UnsupportedError(f"EQUI_WIDTH_BINS of {lo.type} and {hi.type}")
    if any(v.value is None for v in (lo, hi, count, nice)) or not kinds:
        return Lit(None, NULL_TYPE)
    bounds = bin_bounds(kind, _bin_value(lo, kind), _bin_value(hi, kind), int(count.value), bool(nice.value))
    t = FLOAT64 if hi.type.kind == "decimal" else hi.type
    if t.kind == "date":
        items = [Lit(b // DAY_US, DATE) for b in bounds]
    elif t.is_integer:
        lo_t, hi_t = -2 ** (8 * t.value_bytes - 1), 2 ** (8 * t.value_bytes - 1)
        bad = [b for b in bounds if not lo_t <= b < hi_t]
        if bad:
            raise ExecutionError(f"Type INT64 with value {bad[0]} can't be cast because the value is out of range "
                                 f"for the destination type {t.kind.upper()}")
        items = [Lit(b, t) for b in bounds]
    elif t.kind == "float32":
        items = [Lit(float(struct.unpack("f", struct.pack("f", b))[0]), t) for b in bounds]
    else:
        items = [Lit(b, t) for b in bounds]
    return E.make_func("list_value", items)


#: DuckDB's names of sluice's types (decimals, nested types and NULL are written by :func:`duckdb_type_name`).
TYPE_NAMES = {"bool": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
              "float32": "FLOAT", "float64": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP",
              "timestamptz": "TIMESTAMP WITH TIME ZONE", "interval": "INTERVAL", "string": "VARCHAR", "null": '"NULL"'}
#: Column types that name one Parquet type only: a column read as int16 / int32 / int64 may be an
#: unsigned one widened (DuckDB's UTINYINT / USMALLINT / UINTEGER), a REAL a half float, a
#: TIMESTAMP one in seconds, milliseconds or nanoseconds; TYPEOF of those is refused.
_EXACT_COLUMN_KINDS = frozenset({"bool", "int8", "float64", "date", "string", "decimal", "interval", "null"})


def duckdb_type_name(t: LType) -> str:
    """``t`` as DuckDB's TYPEOF writes it (DECIMAL(18,3), INTEGER[], STRUCT(a INTEGER, "A b" VARCHAR))."""
    if agg_states.is_state(t):
        return "AGGREGATE_STATE"
    if t.kind == "decimal":
        if not t.precision:
            raise UnsupportedError("TYPEOF of a decimal whose precision sluice does not know")
        return f"DECIMAL({t.precision},{t.scale})"
    if t.kind == "list":
        return duckdb_type_name(t.element) + "[]"
    if t.kind == "map":
        return f"MAP({duckdb_type_name(t.args[0])}, {duckdb_type_name(t.args[1])})"
    if t.kind == "struct":
        fields = []
        for name, u in t.args:
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.upper() in _SQL_KEYWORDS:
                raise UnsupportedError(f"TYPEOF of a struct with a field named {name!r} (a keyword)")
            shown = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'
            fields.append(f"{shown} {duckdb_type_name(u)}")
        return "STRUCT(" + ", ".join(fields) + ")"
    return "BIT" if is_bit(t) else TYPE_NAMES[t.kind]


_SQL_KEYWORDS = frozenset(k for k in __import__("sqlglot").tokens.Tokenizer.KEYWORDS if k.isalpha() or "_" in k)


def _column_kinds(t: LType):
    yield t.kind
    if t.kind in ("list", "map"):
        for u in t.args:
            yield from _column_kinds(u)
    elif t.kind == "struct":
        for _, u in t.args:
            yield from _column_kinds(u)


def typeof(tr, n: exp.Typeof, ctx) -> Expr:
    """TYPEOF(x): the name of ``x``'s type as DuckDB writes it, a constant. Refused where the
    name may differ from DuckDB's over the same data: of an aggregate or window result (their
    types are sluice's own: 64-bit decimals), of a column whose Parquet type sluice widens."""
    if n.this.find(exp.AggFunc, exp.Window) is not None:
        if n.this.find(exp.Struct) is not None and agg_states.is_state(tr.expr(n.this, ctx).type):
            return Lit("AGGREGATE_STATE", STRING)  # (an EXPORT_STATE's tree)
        raise UnsupportedError("TYPEOF of an aggregate or window result")
    source = n.root().meta.get("source")
    if isinstance(source, str) and re.search(r"(?<![\w.])\.\d", source) and any(
            not lit.is_string and lit.this.lstrip("-+").startswith("0.") for lit in n.this.find_all(exp.Literal)):
        # sqlglot reads .5 as 0.5: DuckDB types them DECIMAL(1,1) and DECIMAL(2,1)
        raise UnsupportedError("TYPEOF of a decimal constant written without its leading 0")
    e = tr.expr(n.this, ctx)
    if agg_states.is_state(e.type):
        return Lit("AGGREGATE_STATE", STRING)
    for c in (x for x in e.walk() if isinstance(x, Col)):
        kinds = set(_column_kinds(c.type))
        if not kinds <= _EXACT_COLUMN_KINDS:
            raise UnsupportedError(f"TYPEOF of a {c.type} column (its Parquet type may be one DuckDB names otherwise)")
    return Lit(duckdb_type_name(e.type), STRING)


def _format_bytes(multiplier: int):
    def translate(tr, n: exp.Anonymous, ctx) -> Expr:
        """FORMAT_BYTES(n) and its aliases (``functions/byte_sizes.py``)."""
        if len(n.expressions) != 1:
            raise PlanError(f"{str(n.this).upper()} takes one integer")
        return E.make_func("format_bytes", [tr.expr(n.expressions[0], ctx)], (multiplier,))
    return translate


def translate(tr, n: exp.Translate, ctx) -> Expr:
    """TRANSLATE(s, from, to) with constant ``from`` and ``to`` (``functions/translate.py``)."""
    s = tr.expr(n.this, ctx)
    source = _const(tr, n.args["from_"], ctx, "TRANSLATE with characters")
    target = _const(tr, n.args["to"], ctx, "TRANSLATE with characters")
    if source.value is None or target.value is None or (isinstance(s, Lit) and s.value is None):
        return Lit(None, STRING)
    if source.type.kind != "string" or target.type.kind != "string":
        raise PlanError("TRANSLATE needs strings")
    return E.make_func("translate", [s], (source.value, target.value))


def chr_call(tr, n: exp.Chr, ctx) -> Expr:
    """CHR(n): the code point as a string."""
    if len(n.expressions) != 1 or n.args.get("charset"):
        raise PlanError("CHR takes one INTEGER")
    a = tr.expr(n.expressions[0], ctx)
    if a.type.kind == "null":
        return Lit(None, STRING)
    return E.make_func("chr", [a])


def ascii_call(tr, n: exp.Ascii, ctx) -> Expr:
    a = tr.expr(n.this, ctx)
    if a.type.kind == "null":
        return Lit(None, INT32)
    return E.make_func("ascii", [a])


def isfinite_call(tr, n: exp.Anonymous, ctx) -> Expr:
    """ISFINITE(x): of a number (not NaN nor an infinity) or a date / timestamp (not DuckDB's
    'infinity' / '-infinity'); ISINF is sqlglot's own class."""
    if len(n.expressions) != 1:
        raise PlanError("ISFINITE takes one argument")
    a = tr.expr(n.expressions[0], ctx)
    if a.type.kind == "null":
        return Lit(None, BOOL)
    return E.make_func("isfinite", [a])


def _finalize(tr, n: exp.Anonymous, ctx) -> Expr:
    if len(n.expressions) != 1:
        raise PlanError("FINALIZE takes one argument")
    return agg_states.finalize(tr.expr(n.expressions[0], ctx))


def _state_field(tr, n: exp.Anonymous, ctx) -> Expr:
    return agg_states.state_field(tr.expr(n.expressions[0], ctx), n.expressions[1].this)


def _combine(tr, n: exp.Anonymous, ctx) -> Expr:
    if len(n.expressions) != 2:
        raise PlanError("COMBINE takes two arguments")
    return agg_states.combine(tr.expr(n.expressions[0], ctx), tr.expr(n.expressions[1], ctx))


def round_even(tr, n: exp.Anonymous, ctx) -> Expr:
    """ROUND_EVEN / ROUNDBANKERS(x, n): DuckDB takes a constant integer n (no default); a NULL
    x or n gives NULL (of x's type)."""
    if len(n.expressions) != 2:
        raise PlanError(f"{str(n.this).upper()} takes a number and a constant precision")
    x = tr.expr(n.expressions[0], ctx)
    digits = tr.expr(n.expressions[1], ctx)
    if not isinstance(digits, Lit):  # DuckDB's error for a decimal; it takes a column for others
        if x.type.kind == "decimal":
            raise PlanError(f'the "precision" argument of {str(n.this).upper()} must be a constant expression')
        raise UnsupportedError(f"{str(n.this).upper()} with a precision that is not a constant")
    if digits.value is not None and not digits.type.is_integer:
        raise PlanError(f"{str(n.this).upper()} needs an integer precision, got {digits.type}")
    if not (x.type.is_numeric or x.type.kind == "null"):
        raise PlanError(f"{str(n.this).upper()} needs a number, got {x.type}")
    if x.type.kind == "null" or digits.value is None:
        return Lit(None, INT32 if x.type.kind == "null" else x.type)
    return E.make_func("round_even", [x], (int(digits.value),))


def regexp_escape(tr, n: exp.Anonymous, ctx) -> Expr:
    if len(n.expressions) != 1:
        raise PlanError("REGEXP_ESCAPE takes one string")
    a = tr.expr(n.expressions[0], ctx)
    if a.type.kind == "null":
        return Lit(None, STRING)
    return E.make_func("regexp_escape", [a])


def regexp_split_to_array(tr, n: exp.Anonymous, ctx) -> Expr:
    """REGEXP_SPLIT_TO_ARRAY: DuckDB's other name of STRING_SPLIT_REGEX."""
    if not 2 <= len(n.expressions) <= 3:
        raise PlanError("REGEXP_SPLIT_TO_ARRAY takes a string, a pattern and options")
    args = n.expressions
    return tr.expr(exp.RegexpSplit(this=args[0], expression=args[1], limit=args[2] if len(args) > 2 else None), ctx)


def nextafter_call(tr, n: exp.Anonymous, ctx) -> Expr:
    if len(n.expressions) != 2:
        raise PlanError("NEXTAFTER takes two numbers")
    return E.make_func("nextafter", [tr.expr(a, ctx) for a in n.expressions])


CLASS_CALLS = {exp.Overlay: overlay, exp.Typeof: typeof, exp.Translate: translate, exp.Chr: chr_call,
               exp.Ascii: ascii_call, exp.Transform: lambdas.transform_class, exp.ArrayFilter: lambdas.filter_class,
               **bit_calls.CLASS_CALLS}
NAMED_CALLS = {"parse_filename": _path_part("filename", "parse_filename"), "parse_path": parse_path,
               "round_even": round_even, "roundbankers": round_even, "nextafter": nextafter_call,
               "regexp_escape": regexp_escape, "regexp_split_to_array": regexp_split_to_array,
               "parse_dirname": _path_part("dirname", "parse_dirname"),
               "parse_dirpath": _path_part("dirpath", "parse_dirpath"), "bar": bar,
               "equi_width_bins": equi_width_bins, "format_bytes": _format_bytes(1024),
               "pg_size_pretty": _format_bytes(1024), "formatreadablesize": _format_bytes(1024),
               "formatreadabledecimalsize": _format_bytes(1000), "isfinite": isfinite_call,
               "finalize": _finalize, "combine": _combine, agg_states.FIELD: _state_field,
               agg_states.NUMBER: lambda tr, n, ctx: agg_states.state_number(tr.expr(n.expressions[0], ctx),
                                                                             n.expressions[1].this),
               **{name: lambdas.lambda_call for name in lambdas.LAMBDA_CALLS}, **bit_calls.NAMED_CALLS}
