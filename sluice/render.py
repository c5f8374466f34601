"""Results as text: an aligned table fitted to the terminal (DuckDB's shell layout: middle
columns elided to fit the width, the first and last rows of a long result with the row count),
and every row as csv, json lines, markdown or ``column = value`` lines."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.kernels.bits import blob_to_bits
from sluice.types import DAY_US, split_interval

MODES = ("table", "csv", "json", "markdown", "line")
_ELLIPSIS = "…"


def interval_text(us: np.ndarray) -> pa.Array:
    """Day-time intervals as DuckDB prints a timestamp difference: ``2 days 01:00:00``,
    ``-1 day -00:00:01.5``, ``00:30:00``, ``60 days`` (vectorised over distinct values)."""
    days, rest = split_interval(us.astype(np.int64))
    a = np.abs(rest)
    hh, mm, ss, frac = a // 3_600_000_000, a // 60_000_000 % 60, a // 1_000_000 % 60, a % 1_000_000
    day_txt = np.char.add(days.astype(str), np.where(np.abs(days) == 1, " day", " days"))
    clock = np.char.add(np.char.add(np.char.add(np.char.zfill(hh.astype(str), 2), ":"),
                                    np.char.add(np.char.zfill(mm.astype(str), 2), ":")), np.char.zfill(ss.astype(str), 2))
    fraction = np.char.rstrip(np.char.zfill(frac.astype(str), 6), "0")
    clock = np.where(frac > 0, np.char.add(np.char.add(clock, "."), fraction), clock)
    clock = np.where(rest < 0, np.char.add("-", clock), clock)
    has_days, has_time = days != 0, (rest != 0) | (days == 0)
    out = np.where(has_days & has_time, np.char.add(np.char.add(day_txt, " "), clock),
                   np.where(has_days, day_txt, clock))
    return pa.array(out.tolist(), pa.string())


def _interval_micros(values) -> np.ndarray:
    """Microseconds of month_day_nano intervals without months (sluice's timestamp differences),
    read from the Arrow buffer."""
    mdn = np.frombuffer(values.buffers()[1], dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
    mdn = mdn[values.offset: values.offset + len(values)]
    return mdn["days"].astype(np.int64) * DAY_US + mdn["nanos"] // 1000


def _float32_text(v: np.float32) -> str:
    """A REAL as DuckDB prints it: its shortest digits, laid out as Python's ``repr`` lays out
    a double (positional from 1e-4 to 1e16: ``3000000000.0``, not numpy's ``3e+09``)."""
    if not np.isfinite(v):
        return str(float(v))
    sci = np.format_float_scientific(v, unique=True, trim="-", exp_digits=2)
    mantissa, exp = sci.split("e")
    if -4 <= int(exp) < 16:
        pos = np.format_float_positional(v, unique=True, trim="-")
        return pos if "." in pos else pos + ".0"
    return f"{mantissa}e{exp}"


def float_text(x: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Floats as DuckDB prints them (``1.0``, ``1e-07``, ``1000000000000000.0``, ``1e+16``):
    Python's ``repr`` layout with each type's own shortest digits; the text of each distinct
    value, and each value's index into it."""
    bits = x.view(np.int64 if x.dtype == np.float64 else np.int32)  # keeps -0.0 apart from 0.0
    ubits, inverse = np.unique(bits, return_inverse=True)
    uniq = ubits.view(x.dtype)
    if x.dtype == np.float64:
        return pa.array([repr(v) for v in uniq.tolist()], pa.string()), inverse
    return pa.array([_float32_text(v) for v in uniq], pa.string()), inverse


#: A string inside a nested value is quoted (as DuckDB's VARCHAR of a LIST / STRUCT / MAP)
#: when empty, edged by spaces, ``null`` in any case, or holding one of these characters.
_NEEDS_QUOTES = r"""^$|^\s|\s$|^[nN][uU][lL][lL]$|[,'"\[\]{}:=\\()]"""


def _nested_leaf(values: pa.Array, inner: bool) -> pa.Array:
    """One level's values as DuckDB writes them inside a nested value (NULL as ``NULL``)."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        esc = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), "'", "\\'")
        quoted = pc.binary_join_element_wise("'", esc, "'", "")
        text = pc.if_else(pc.match_substring_regex(values, _NEEDS_QUOTES), quoted, values)
    elif pa.types.is_floating(values.type):
        x = np.ascontiguousarray(values.fill_null(0).to_numpy(zero_copy_only=False))
        uniq, inverse = float_text(x.astype(np.float32 if pa.types.is_float32(values.type) else np.float64))
        text = pc.if_else(values.is_valid(), uniq.take(pa.array(inverse.reshape(-1), pa.int64())),
                          pa.scalar(None, pa.string()))
    else:
        text = _as_text(values)
        if text is None:
            text = values.cast(pa.string())
    return text.fill_null("NULL") if inner else text


def nested_text(values: pa.Array, inner: bool = False) -> pa.Array:
    """A LIST, STRUCT or MAP array as DuckDB's VARCHAR of it (``[1, NULL]``, ``{'a': x}``,
    ``{k=1}``), column-wise with Arrow kernels, level by level; NULL stays NULL at the top."""
    t = values.type
    if pa.types.is_map(t):
        entries = values.values
        keys = nested_text(entries.field(0), True)
        vals = nested_text(entries.field(1), True)
        pairs = pc.binary_join_element_wise(keys, vals, "=")
        lists = pa.ListArray.from_arrays(values.offsets, pairs, mask=values.is_null())
        text = pc.binary_join_element_wise("{", pc.binary_join(lists, ", "), "}", "")
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        kids = nested_text(values.values, True)
        lists = type(values).from_arrays(values.offsets, kids, mask=values.is_null())
        text = pc.binary_join_element_wise("[", pc.binary_join(lists, ", "), "]", "")
    elif pa.types.is_struct(t):
        parts = []
        for i in range(t.num_fields):
            name = t.field(i).name.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(pc.binary_join_element_wise(f"'{name}': ", nested_text(values.field(i), True), ""))
        body = pc.binary_join_element_wise(*parts, ", ") if len(parts) > 1 else parts[0]
        text = pc.if_else(values.is_null(), pa.scalar(None, pa.string()),
                          pc.binary_join_element_wise("{", body, "}", ""))
    else:
        return _nested_leaf(values, inner)
    return text.fill_null("NULL") if inner else text


def _as_text(values) -> pa.Array | None:
    """Columns Arrow cannot print as DuckDB does (intervals, nested values), as text; None for
    the others."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_nested(values.type):
        return nested_text(values)
    if pa.types.is_interval(values.type):
        text = interval_text(_interval_micros(values))
        return pc.if_else(values.is_null(), pa.scalar(None, pa.string()), text)
    if pa.types.is_date32(values.type) or pa.types.is_timestamp(values.type):
        return _infinite_text(values)
    return None


def _infinite_text(values: pa.Array) -> pa.Array | None:
    """Dates and timestamps holding DuckDB's 'infinity' / '-infinity' (the extremes of their
    integers, :mod:`sluice.kernels.infinite`) as text, the others as Python prints them; None
    (printed as usual) when there is none."""
    is_date = pa.types.is_date32(values.type)
    big = (2 ** 31 - 1) if is_date else (2 ** 63 - 1)
    ints = values.cast(pa.int32() if is_date else pa.int64())
    pos, neg = pc.equal(ints, big), pc.equal(ints, -big)
    if not (pc.any(pos).as_py() or pc.any(neg).as_py()):
        return None
    finite = pc.if_else(pc.or_(pos, neg), pa.scalar(None, values.type), values)
    text = pa.array([None if v is None else str(v) for v in finite.to_pylist()], pa.string())
    return pc.if_else(pos, pa.scalar("infinity"), pc.if_else(neg, pa.scalar("-infinity"), text))


def _bits_shown(table: pa.Table) -> pa.Table:
    """BIT columns (DuckDB's binary form in results, :func:`sluice.arrow.result_field`) as their
    text of 0s and 1s."""
    for i, f in enumerate(table.schema):
        if f.metadata and f.metadata.get(b"sluice.type") == b"bit":
            col = table.column(i).combine_chunks()
            table = table.set_column(i, f.name, blob_to_bits(col))
    return table


def _cells(table: pa.Table) -> list[list[str]]:
    table = _bits_shown(table)
    if not table.num_columns:
        return []
    texts = [_as_text(c) for c in table.columns]
    cols = [(c if t is None else t).to_pylist() for c, t in zip(table.columns, texts)]
    return [["NULL" if v is None else str(v) for v in row] for row in zip(*cols)]


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + _ELLIPSIS


def format_table(table: pa.Table, width: int | None = None, max_rows: int = 40, *, tail: bool = True,
                 max_cell: int = 40, hint: str | None = None) -> str:
    """An aligned table with a name and type line per column (numbers right-aligned).

    More than ``max_rows`` rows: the first and last ``max_rows // 2`` with an elided row between
    (``tail=False``: only the first ``max_rows``). Wider than ``width`` characters: the middle
    columns give way to one ``…`` column; cells longer than ``max_cell`` are cut. ``hint`` ends
    the row count's note when something is not shown."""
    n = table.num_rows
    if n > max_rows and tail:
        head_n = max_rows - max_rows // 2
        shown = pa.concat_tables([table.slice(0, head_n), table.slice(n - max_rows // 2)])
        gap_at = head_n
    else:
        shown = table.slice(0, max_rows)
        gap_at = None
    header = list(table.column_names)
    types = [str(t) for t in table.schema.types]
    rows = _cells(shown)
    right = [t.startswith(("int", "uint", "float", "double", "decimal")) for t in types]
    widths = [min(max([len(h), len(t)] + [len(r[i]) for r in rows]), max_cell)
              for i, (h, t) in enumerate(zip(header, types))]
    cols = list(range(len(header)))
    if width is not None and cols:
        cols = _columns_that_fit(widths, width)
    gap = [i for i in range(1, len(cols)) if cols[i] != cols[i - 1] + 1]

    def line(cells, fill=" "):
        out = []
        for k, i in enumerate(cols):
            if gap and k == gap[0]:
                out.append(_ELLIPSIS if fill == " " else fill)
            c = _fit(cells[i], widths[i])
            out.append(c.rjust(widths[i]) if right[i] else c.ljust(widths[i]))
        return "│ " + " │ ".join(out) + " │"
    total = sum(widths[i] for i in cols) + 3 * len(cols) - 1 + (4 if gap else 0)
    bar = "─" * max(total, 0)
    out = ["┌" + bar + "┐", line(header), line(types), "├" + bar + "┤"]
    for k, r in enumerate(rows):
        if gap_at is not None and k == gap_at:
            out.append(line([_ELLIPSIS] * len(header)))
        out.append(line(r))
    out.append("└" + bar + "┘")
    summary = f"{n} row{'s' if n != 1 else ''}"
    hidden = []
    if n > shown.num_rows:
        hidden.append(f"{shown.num_rows} shown")
    if len(cols) < len(header):
        hidden.append(f"{len(cols)} of {len(header)} columns")
    if hidden and hint:
        hidden.append(hint)
    out.append(summary + (f" ({', '.join(hidden)})" if hidden else ""))
    return "\n".join(out)


def _columns_that_fit(widths: list[int], width: int) -> list[int]:
    """Indexes of the columns to show: all if they fit in ``width``, else as many from both
    ends as fit beside an elision column (at least the first)."""
    def cost(idx, gap):
        return sum(widths[i] for i in idx) + 3 * len(idx) + 1 + (4 if gap else 0)
    every = list(range(len(widths)))
    if cost(every, False) <= width:
        return every
    left, right = [0], []
    lo, hi = 1, len(widths) - 1
    turn_right = True
    while lo <= hi:
        i = hi if turn_right else lo
        trial = left + ([i] if not turn_right else []) + ([i] if turn_right else []) + right
        if cost(sorted(trial), True) > width:
            break
        if turn_right:
            right.insert(0, i)
            hi -= 1
        else:
            left.append(i)
            lo += 1
        turn_right = not turn_right
    return left + right


def _csv_field(values: pa.Array) -> pa.Array:
    """Values as CSV fields, quoted only where needed (as DuckDB writes them); NULL is empty."""
    if values.type != pa.string():
        text = _as_text(values)
        values = text if text is not None else values.cast(pa.string())
    needs = pc.match_substring_regex(values, '[",\r\n]')
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(values, '"', '""'), '"', "")
    return pc.if_else(needs, quoted, values).fill_null("")


def _csv(table: pa.Table) -> str:
    """The table as CSV with a header, built column-wise with Arrow kernels."""
    table = _bits_shown(table)
    names = table.column_names
    head = ",".join(_csv_field(pa.array(names, pa.string())).to_pylist())
    if not table.num_rows or not names:
        return head
    fields = [_csv_field(c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c) for c in table.columns]
    lines = pc.binary_join_element_wise(*fields, ",") if len(fields) > 1 else fields[0]
    return head + "\n" + "\n".join(lines.to_pylist())


def format_rows(table: pa.Table, mode: str) -> str:
    """Every row: ``csv`` (with a header), ``json`` (one object a line), ``markdown``, or
    ``line`` (``column = value``, a blank line between rows)."""
    if mode == "csv":
        return _csv(table)
    table = _bits_shown(table)
    names = table.column_names
    texts = [_infinite_text(c.combine_chunks()) if pa.types.is_date32(c.type) or pa.types.is_timestamp(c.type)
             else None for c in table.columns]
    cols = [(c if t is None else t).to_pylist() for c, t in zip(table.columns, texts)]
    rows = [dict(zip(names, r)) for r in zip(*cols)] if table.num_columns else []
    if mode == "json":
        return "\n".join(json.dumps(r, default=str) for r in rows)
    if mode == "line":
        w = max((len(c) for c in names), default=0)
        return "\n\n".join("\n".join(f"{c.rjust(w)} = {'NULL' if r[c] is None else r[c]}" for c in names)
                           for r in rows)
    if mode == "markdown":
        def cell(v):
            return "NULL" if v is None else str(v).replace("|", "\\|")
        out = ["| " + " | ".join(names) + " |", "|" + "|".join("---" for _ in names) + "|"]
        out += ["| " + " | ".join(cell(r[n]) for n in names) + " |" for r in rows]
        return "\n".join(out)
    raise ValueError(mode)
