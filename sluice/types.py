"""Logical types and their tensor / Arrow representations (docs/design.md §1).

decimal(p, s) is an int64 scaled by 10**s; date is int32 days since 1970-01-01;
timestamp is int64 microseconds; string is int32 codes into a host-side dictionary.
list / struct / map (the nested kinds) are int64 codes into the column's nested values
(:class:`sluice.chunk.NestedValues`: offsets and child columns as tensors); ``args`` holds
their element, field or key / value types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from sluice.errors import PlanError, UnsupportedError


@dataclass(frozen=True, slots=True)
class LType:
    """A logical type. ``kind`` is one of KINDS; ``scale`` only matters for decimals.
    ``precision`` is a decimal's declared digits where known (0: not known), carried for how
    DuckDB prints it (a DECIMAL(3,3) prints ``.500``); it takes no part in type equality."""

    kind: str
    scale: int = 0
    precision: int = field(default=0, compare=False)
    #: list: (element type,); map: (key type, value type); struct: ((name, type), ...). Out of the
    #: repr (plan printouts of flat types stay as they were); ``str`` shows it.
    args: tuple = field(default=(), repr=False)

    def __str__(self) -> str:
        if self.kind == "list":
            return f"{self.args[0]}[]"
        if self.kind == "map":
            return f"map({self.args[0]}, {self.args[1]})"
        if self.kind == "struct":
            return "struct(" + ", ".join(f"{n} {t}" for n, t in self.args) + ")"
        if self.kind == "string" and self.args == ("bit",):
            return "bit"
        return f"decimal(s={self.scale})" if self.kind == "decimal" else self.kind

    @property
    def is_nested(self) -> bool:
        """A LIST, STRUCT or MAP: codes into nested values, never comparable by its ``data``."""
        return self.kind in NESTED_KINDS

    @property
    def element(self) -> "LType":
        """A list's element type."""
        return self.args[0]

    def field_type(self, name: str) -> "LType | None":
        """A struct's field of that (case-insensitive) name, or None."""
        for n, t in self.args:
            if n.lower() == name.lower():
                return t
        return None

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS

    @property
    def is_integer(self) -> bool:
        return self.kind in INT_KINDS

    @property
    def is_float(self) -> bool:
        return self.kind in ("float32", "float64")

    @property
    def is_timestamp(self) -> bool:
        """TIMESTAMP or TIMESTAMP WITH TIME ZONE: both int64 microseconds since the epoch (the
        latter an instant in UTC, sluice's session time zone)."""
        return self.kind in ("timestamp", "timestamptz")

    @property
    def is_temporal(self) -> bool:
        return self.kind == "date" or self.is_timestamp

    @property
    def value_bytes(self) -> int:
        """Bytes of one value's tensor element: the one width table (a string: its int32 code,
        a nested value: its int64 code, a decimal: int64)."""
        return _DTYPE_BYTES[_TORCH_DTYPES[self.kind]]

    @property
    def estimated_bytes(self) -> int:
        """Bytes a value is estimated to hold in memory (plans' memory and broadcast
        estimates): its element, and for a string a short string (:data:`STRING_VALUE_BYTES`)."""
        return self.value_bytes + (STRING_VALUE_BYTES if self.kind == "string" else 0)

    @property
    def torch_dtype(self):
        """The tensor dtype of this type's values (torch is imported here, not with the module,
        so what reads only footers -- ``sluice doctor``, ``inspect`` -- starts without it)."""
        import torch  # deferred: keeps doctor and inspect (which read types from footers) free of torch
        return getattr(torch, _TORCH_DTYPES[self.kind])


INT_KINDS = ("int8", "int16", "int32", "int64")
NESTED_KINDS = ("list", "struct", "map")
NUMERIC_KINDS = INT_KINDS + ("float32", "float64", "decimal")
_TORCH_DTYPES = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "float32": "float32", "float64": "float64", "decimal": "int64", "date": "int32", "timestamp": "int64",
    "timestamptz": "int64", "interval": "int64",
    "string": "int32", "list": "int64", "struct": "int64", "map": "int64",
    "null": "int32",
}
_DTYPE_BYTES = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float32": 4, "float64": 8}
#: The bytes of a string's value in memory estimates, beyond its code (a short string).
STRING_VALUE_BYTES = 24

BOOL = LType("bool")
INT32 = LType("int32")
INT64 = LType("int64")
FLOAT64 = LType("float64")
DATE = LType("date")
TIMESTAMP = LType("timestamp")
TIMESTAMPTZ = LType("timestamptz")
#: A day-time INTERVAL as a timestamp difference gives it: int64 microseconds, shown as DuckDB
#: shows ``ts - ts`` (whole days, then the time of day; no months).
INTERVAL = LType("interval")
STRING = LType("string")
#: DuckDB's BIT: a string column of the bits' '0' / '1' text (why: :mod:`sluice.kernels.bits`),
#: told apart from VARCHAR by its ``args``.
BIT = LType("string", args=("bit",))


def is_bit(t: LType) -> bool:
    """A BIT (a string column of '0' / '1' text)."""
    return t.kind == "string" and t.args == ("bit",)
#: The type of a bare ``NULL`` (DuckDB's NULL type): it takes the type of what it meets -- an
#: operand's, a function's parameter's, a CASE's other branches' -- and stays itself only
#: where nothing types it (``SELECT NULL``), its values then int32 zeros, all invalid, shown
#: as Arrow's null type.
NULL = LType("null")


#: Microseconds in a day.
DAY_US = 86_400_000_000


def split_interval(us):
    """(whole days, the rest in microseconds) of day-time intervals, both carrying the
    interval's sign, as DuckDB splits a timestamp difference (-49 hours is -2 days -01:00:00).
    For NumPy arrays and torch tensors of int64 microseconds alike."""
    rest = us % DAY_US
    rest = rest - DAY_US * ((us < 0) & (rest != 0))
    return (us - rest) // DAY_US, rest


def decimal(scale: int, precision: int = 0) -> LType:
    return LType("decimal", scale, precision)


def list_of(element: LType) -> LType:
    return LType("list", args=(element,))


def struct_of(fields) -> LType:
    return LType("struct", args=tuple((n, t) for n, t in fields))


#: The first field name of an aggregate state's STRUCT, then the aggregate's name
#: (:mod:`sluice.sql.agg_states`): a state is no user STRUCT and is not cast as one.
STATE_TAG = "__sluice_state_"


def is_aggregate_state(t: LType) -> bool:
    """Whether ``t`` is an aggregate state (``agg(x) EXPORT_STATE``)."""
    return t.kind == "struct" and bool(t.args) and t.args[0][0].startswith(STATE_TAG)


def check_state_cast(src: LType, t: LType) -> None:
    """A cast from an aggregate state to anything but a state of the same aggregate is refused:
    the STRUCT's fields are sluice's layout, not the state's value (an explicit CAST of a state
    casts its value: :func:`sluice.sql.agg_states.printed`)."""
    if is_aggregate_state(src) and not (is_aggregate_state(t) and t.args[0][0] == src.args[0][0]):
        raise UnsupportedError(f"an aggregate state where a {t} is expected (FINALIZE it, or CAST it)")


def map_of(key: LType, value: LType) -> LType:
    return LType("map", args=(key, value))


#: The decimal digits of each integer type, as DuckDB widens an integer meeting a decimal.
INT_DIGITS = {"bool": 1, "int8": 3, "int16": 5, "int32": 10, "int64": 19}


def digits(t: LType) -> tuple[int, int] | None:
    """(integer digits, scale) of a decimal of known precision or an integer; else None."""
    if t.kind == "decimal":
        return (t.precision - t.scale, t.scale) if t.precision else None
    if t.kind in INT_DIGITS:
        return INT_DIGITS[t.kind], 0
    return None


def from_arrow(t: pa.DataType) -> LType:
    """Map an Arrow type of a Parquet column to a logical type."""
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type)
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_null(t):  # the elements of [] (DuckDB's "NULL"[]), spilled and read back
        return NULL
    for k in INT_KINDS:
        if t == getattr(pa, k)():
            return LType(k)
    if pa.types.is_unsigned_integer(t):
        if t.bit_width >= 64:
            raise UnsupportedError(f"column type {t} (unsigned 64-bit) is not supported")
        return LType({8: "int16", 16: "int32", 32: "int64"}[t.bit_width])
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return LType("float32")
    if pa.types.is_float64(t):
        return FLOAT64
    if pa.types.is_decimal(t):
        if t.precision > 18:
            # Values up to 18 digits fit int64; wider declared columns are accepted and
            # checked per chunk when read (reader raises if a value does not fit).
            pass
        return decimal(t.scale, t.precision)
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz is not None else TIMESTAMP
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if pa.types.is_map(t):
        return map_of(from_arrow(t.key_type), from_arrow(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return list_of(from_arrow(t.value_type))
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            raise UnsupportedError("a struct column with no fields")
        return struct_of((t.field(i).name, from_arrow(t.field(i).type)) for i in range(t.num_fields))
    raise UnsupportedError(f"column type {t} is not supported")


def to_arrow(t: LType) -> pa.DataType:
    if t.kind == "null":
        return pa.null()
    if t.kind == "list":
        return pa.list_(to_arrow(t.element))
    if t.kind == "map":
        return pa.map_(to_arrow(t.args[0]), to_arrow(t.args[1]))
    if t.kind == "struct":
        return pa.struct([pa.field(n, to_arrow(u)) for n, u in t.args])
    if t.kind == "decimal":
        return pa.decimal128(38, t.scale)
    if t.kind == "date":
        return pa.date32()
    if t.kind == "timestamp":
        return pa.timestamp("us")
    if t.kind == "timestamptz":
        return pa.timestamp("us", tz="UTC")
    if t.kind == "interval":
        return pa.month_day_nano_interval()
    if t.kind == "string":
        return pa.string()
    return getattr(pa, t.kind)() if t.kind != "bool" else pa.bool_()


_RANK = {"bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "decimal": 5,
         "float32": 6, "float64": 7}


def common_numeric(a: LType, b: LType) -> LType:
    """The type both operands are converted to for arithmetic or comparison, as DuckDB picks
    it: the wider integer; a decimal with the larger scale; a float whenever one side is one
    (REAL with a decimal stays REAL: ``2.2 = 2.2::REAL`` is true in DuckDB)."""
    if not (a.is_numeric or a.kind == "bool") or not (b.is_numeric or b.kind == "bool"):
        raise PlanError(f"cannot combine {a} and {b}")
    if a.kind == "decimal" or b.kind == "decimal":
        if a.is_float or b.is_float:
            return a if a.is_float else b
        da, db = digits(a), digits(b)
        whole = max(da[0], db[0]) if da and db else 0
        s = max(a.scale, b.scale)
        return decimal(s, whole + s if whole + s <= 38 and da and db else 0)
    return a if _RANK[a.kind] >= _RANK[b.kind] else b


def supertype(types: list[LType], what: str, strings_win: bool = False) -> LType:
    """The one type values of ``types`` meet at (DuckDB's rules for CASE, COALESCE, VALUES
    and set operations): numbers at :func:`common_numeric`, a date with a timestamp at the
    timestamp, TIMESTAMP with TIMESTAMPTZ at TIMESTAMPTZ. ``strings_win`` (UNION, INTERSECT,
    EXCEPT): a string with anything is a string, as DuckDB casts the other side to VARCHAR;
    elsewhere strings mix only with strings. ``what`` names the construct in the error."""
    typed = [u for u in types if u.kind != "null"]
    if not typed:
        return types[0]
    t = typed[0]
    for u in typed[1:]:
        if u == t:
            if t.kind == "decimal" and u.precision != t.precision:  # the wider (DuckDB's): it prints and TYPEOFs so
                t = decimal(t.scale, max(t.precision, u.precision) if t.precision and u.precision else 0)
            continue
        if t.is_nested or u.is_nested:
            t = _nested_supertype(t, u, what)
            continue
        kinds = {t.kind, u.kind}
        if "string" in kinds:
            if not strings_win:
                raise PlanError(f"{what} mixes {t} and {u}")
            t = STRING
        elif (t.is_numeric or t.kind == "bool") and (u.is_numeric or u.kind == "bool"):
            t = common_numeric(t, u)
        elif t.is_temporal and u.is_temporal:
            t = TIMESTAMPTZ if "timestamptz" in kinds else TIMESTAMP
        else:
            raise PlanError(f"{what} mixes {t} and {u}")
    return t


def has_null_leaf(t: LType) -> bool:
    """Whether a nested type holds the NULL type somewhere (``[]`` is a ``"NULL"[]``, as
    DuckDB's): such a value takes the type of what it meets."""
    if t.kind == "null":
        return True
    if not t.is_nested:
        return False
    kids = [u for _, u in t.args] if t.kind == "struct" else [t.element] if t.kind == "list" else list(t.args)
    return any(has_null_leaf(u) for u in kids)


def _nested_supertype(t: LType, u: LType, what: str) -> LType:
    """Two nested types of one shape meet element by element (``BIGINT[]`` and ``INTEGER[]`` at
    ``BIGINT[]``; a STRUCT's fields by the same names, in order), as DuckDB's do; values are
    then cast (:mod:`sluice.expr.functions.cast_nested`). Strings mix only with strings there."""
    refused = UnsupportedError(f"{what} mixes {t} and {u} (casts between nested types of other shapes, "
                               "field names or element types are not supported)")
    if t.kind != u.kind or (t.kind == "struct" and [n for n, _ in t.args] != [n for n, _ in u.args]):
        raise refused
    pairs = list(zip([a for _, a in t.args], [b for _, b in u.args])) if t.kind == "struct" else list(zip(t.args, u.args))
    try:
        kids = [supertype([a, b], what) for a, b in pairs]
    except PlanError:
        raise refused from None
    if t.kind == "struct":
        return struct_of(zip([n for n, _ in t.args], kids))
    return list_of(kids[0]) if t.kind == "list" else map_of(kids[0], kids[1])


def statistics_in_sql_order(arrow_type: pa.DataType, t: LType, *, strings: bool = False) -> bool:
    """Whether a Parquet column's min / max statistics, as the catalog keeps them, order as SQL
    orders the column's values of type ``t``: signed integers, 32-bit dates and decimals of up
    to 18 digits (sluice's 64-bit form); strings (byte order) only where a bound is enough
    (``strings``: writers may truncate them, so never as exact values). Not floats (NaN), not
    unsigned integers (old writers ordered them as signed), not timestamps (their units). The
    one rule for statistics aggregates, MIN / MAX bounds and anything else that trusts them."""
    if t.kind == "string":
        return strings
    if t.kind == "decimal":
        return pa.types.is_decimal(arrow_type) and arrow_type.precision <= 18
    if t.kind == "date":
        return pa.types.is_date32(arrow_type)
    return t.is_integer and pa.types.is_signed_integer(arrow_type)
