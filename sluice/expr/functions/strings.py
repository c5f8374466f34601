"""String functions. A string column is int32 codes into a dictionary of distinct strings, so
a function of the string alone runs once per dictionary entry with Arrow's vectorised kernels
and the result is gathered by code (booleans, integers) or keeps the codes over a new
dictionary (strings). Only CONCAT of two columns materialises strings per row.

The semantics follow DuckDB's: positions count characters, 1-based; SPLIT_PART out of range is
''; LPAD/RPAD cut strings longer than the width; REGEXP_REPLACE replaces the first match unless
the 'g' option is given; TRIM removes spaces unless told which characters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor, lookup, string_buffers, to_device
from sluice.errors import PlanError, UnsupportedError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.like_patterns import like_pattern
from sluice.expr.functions.paths import path_part
from sluice.expr.functions.registry import register
from sluice.expr.functions.common import and_valid, gather_bool
from sluice.expr.functions.string_limits import (POSITION_MAX, POSITION_MIN, arrow_string_limit,
                                                 check_position, check_repeat)
from sluice.kernels.parallel import map_slices
from sluice.types import BOOL, INT64, STRING
from sluice.expr.nodes import Lit
import regex

LIKE_SEL = 0.1


def _string_arg(what: str | None, result):
    def bind(args, params):
        if args[0].type.kind != "string":
            raise PlanError(f"{(what or params[0]).upper()} needs a string, got {args[0].type}")
        if what in _REGEX_FUNCTIONS:
            _check_regex(what, *params)
        return list(args), result
    return bind


_REGEX_FUNCTIONS = ("regexp_matches", "regexp_replace", "regexp_extract")


def _check_regex(what: str, pattern: str, replacement: str | None = None, *_) -> None:
    """A user's pattern or replacement string that RE2 refuses is a one-line error naming it,
    as in DuckDB -- not an internal error where the pattern first meets a string."""
    try:
        pc.match_substring_regex(pa.array([""]), pattern=pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise PlanError(f"{what.upper()}: invalid regular expression {pattern!r}: "
                        f"{str(e).split(':', 1)[-1].strip()}") from None
    if what == "regexp_replace" and isinstance(replacement, str):
        groups = _named_groups(pattern)[1]
        i = 0
        while i < len(replacement):
            if replacement[i] == "\\":
                if i + 1 == len(replacement):
                    raise PlanError(f"REGEXP_REPLACE: invalid replacement string {replacement!r}: '\\' at its end")
                nxt = replacement[i + 1]
                if nxt.isdigit() and int(nxt) > groups:
                    raise PlanError(f"REGEXP_REPLACE: invalid replacement string {replacement!r}: \\{nxt} "
                                    f"refers to group {nxt}, but the pattern has {groups}")
                i += 2
            else:
                i += 1


def _map_dictionary(a: Column, fn) -> Column:
    new = fn(a.dictionary)
    if new.type != pa.string():
        new = new.cast(pa.string())
    return Column(a.data, a.type, a.valid, new)


def _per_entry_numbers(a: Column, per_entry: pa.Array, t) -> Column:
    """A boolean or integer per row from one per dictionary entry."""
    values = per_entry.to_numpy(zero_copy_only=False)
    per = host_tensor(values.astype(np.bool_ if t == BOOL else np.int64))
    return Column(lookup(to_device(per, a.data.device), a.data), t, a.valid)


# ------------------------------------------------------------------ LIKE patterns as RE2

_RE2_SPECIAL = frozenset("\\.^$|?*+()[]{}")
_ANY, _ONE = ("%",), ("_",)  # the wildcards among a pattern's parts (literal pieces are strings)


def _like_parts(pattern: str) -> list[str] | None:
    """A LIKE pattern in pyarrow's syntax (backslash escapes) as its literal pieces (strings,
    none empty) and wildcards (``_ANY``, ``_ONE``) in order; None if it ends in a lone escape."""
    parts, cur, i = [], [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                return None
            cur.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            parts += ["".join(cur), _ANY if ch == "%" else _ONE]
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return [p for p in parts if p]


def _re2_literal(text: str) -> str:
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in text)


def like_regex(pattern: str, ignore_case: bool = False) -> str | None:
    """An RE2 regex (searched, not anchored where the pattern starts or ends with ``%``)
    matching what the LIKE ``pattern`` (pyarrow's syntax) matches; None for a pattern ending in
    a lone escape. ``.`` matches newlines too, as ``_`` and ``%`` do.

    pyarrow's ``match_like`` is wrong after an escaped backslash: ``a\\\\x%`` (SQL ``LIKE
    'a\\x%'``, backslash ordinary) matched no string starting with ``a\\x``; DuckDB matches them."""
    parts = _like_parts(pattern)
    if parts is None:
        return None
    head = not parts or parts[0] is not _ANY
    tail = not parts or parts[-1] is not _ANY
    while parts and parts[0] is _ANY:
        parts = parts[1:]
    while parts and parts[-1] is _ANY:
        parts = parts[:-1]
    body = "".join(".*" if p is _ANY else "." if p is _ONE else _re2_literal(p) for p in parts)
    return "(?s" + ("i" if ignore_case else "") + ")" + ("^" if head else "") + body + ("$" if tail else "")


def like_search(pattern: str) -> str | None:
    """The regex for a case-sensitive LIKE that pyarrow's ``match_like`` gets wrong or runs
    slower: a pattern with an escape (above), or of the form ``%a%b...%`` with no ``_``, where
    pyarrow searches substrings per string and RE2's unanchored search is 1.2-1.5x faster on one
    core (TPC-H SF 1 o_comment, '%special%requests%': 123 ms against 99; ClickBench URL
    '%google%' 120 against 81). None: pyarrow's own (its prefix, suffix and equality tests are
    fast)."""
    if "\\" in pattern:
        return like_regex(pattern)
    parts = _like_parts(pattern)
    if parts is None or _ONE in parts or len(parts) < 3 or parts[0] is not _ANY or parts[-1] is not _ANY \
            or all(p is _ANY for p in parts):
        return None
    return like_regex(pattern)


# ------------------------------------------------------------------ LIKE


def like_match(d: pa.Array, pattern: str, ignore_case: bool) -> pa.Array:
    """Whether each string of ``d`` matches the LIKE ``pattern`` (pyarrow's syntax)."""
    search = (like_regex(pattern, True) if "\\" in pattern else None) if ignore_case else like_search(pattern)
    if search is not None:
        return map_slices(lambda x: pc.match_substring_regex(x, search), d)
    return map_slices(lambda x: pc.match_like(x, pattern, ignore_case=ignore_case), d)


@register("like", "ilike", bind=_string_arg("LIKE", BOOL), selectivity=lambda e, est: LIKE_SEL)
@register("not_like", "not_ilike", bind=_string_arg("LIKE", BOOL), selectivity=lambda e, est: 0.9)
def like(e, args, chunk) -> Column:
    a, = args
    m = gather_bool(like_match(a.dictionary, e.params[0], e.op.endswith("ilike")), a.data)
    return Column(~m if e.op.startswith("not_") else m, BOOL, a.valid)


#: The most distinct patterns one chunk's LIKE against a pattern column matches with (one
#: Arrow match per distinct pattern); more are refused rather than looped over row by row.
MAX_LIKE_PATTERNS = 1024


def _bind_like_rows(args, params):
    for x in args:
        if x.type.kind != "string":
            raise PlanError(f"LIKE needs strings, got {x.type}")
    return list(args), BOOL


@register("like_rows", "ilike_rows", "not_like_rows", "not_ilike_rows", bind=_bind_like_rows,
          selectivity=lambda e, est: LIKE_SEL)
def like_rows(e, args, chunk) -> Column:
    """``s LIKE p`` where ``p`` is a column (params: the ESCAPE character or None): the rows
    grouped by their distinct pattern, each group's strings matched at once."""
    n = chunk.num_rows
    s, p = (c.expand(n) for c in args)
    valid = and_valid(s.valid, p.valid)
    escape, = e.params
    codes = p.data if valid is None else torch.where(valid, p.data, torch.full_like(p.data, -1))
    used = torch.unique(codes)
    used = used[used >= 0]
    if len(used) > MAX_LIKE_PATTERNS:
        raise UnsupportedError(f"LIKE against more than {MAX_LIKE_PATTERNS} distinct patterns in a chunk")
    strings = s.dictionary.take(pa.array(s.data.cpu().numpy().astype(np.int64)))
    out = np.zeros(n, np.bool_)
    code_rows = codes.cpu().numpy()
    ignore_case = "ilike" in e.op
    for code in used.cpu().tolist():  # distinct patterns, not rows
        rows = np.flatnonzero(code_rows == code)
        pattern = like_pattern(p.dictionary[code].as_py(), escape)
        hit = like_match(strings.take(pa.array(rows)), pattern, ignore_case)
        out[rows] = hit.to_numpy(zero_copy_only=False).astype(np.bool_)
    m = to_device(host_tensor(out), s.data.device)
    return Column(~m if e.op.startswith("not_") else m, BOOL, valid)


# ------------------------------------------------------------------ slicing and case


def substring_slice(start: int, length: int | None) -> tuple[int, int | None]:
    """DuckDB's SUBSTRING(s, start, length) as a Python-style slice ``[begin:stop]``.

    1-based ``start``; a negative start counts from the end; 0 starts one before the first
    character; a negative length takes the characters before ``start``."""
    if start >= 0:  # absolute positions, clamped at 0
        s0 = start - 1
        if length is None:
            return max(s0, 0), None
        if length >= 0:
            return max(s0, 0), max(s0 + length, 0)
        return max(s0 + length, 0), max(s0, 0)
    if length is None:  # counted from the end: Python's negative indices clamp the same way
        return start, None
    if length >= 0:
        return start, (start + length if start + length < 0 else None)
    return start + length, start


@register("substring", bind=_string_arg("SUBSTRING", STRING))
def substring(e, args, chunk) -> Column:
    start, length = e.params
    start = check_position(args[0], chunk.num_rows, start, "offset")
    # No length is DuckDB's 2**32 - 1, not "to the end": from -2**32 it stops before the last character
    length = POSITION_MAX if length is None else check_position(args[0], chunk.num_rows, length, "length")
    begin, stop = substring_slice(start, length)
    if stop is None:
        return _map_dictionary(args[0], lambda d: pc.utf8_slice_codeunits(d, begin))
    return _map_dictionary(args[0], lambda d: pc.utf8_slice_codeunits(d, begin, stop))


@register("upper", bind=_string_arg("UPPER", STRING))
@register("lower", bind=_string_arg("LOWER", STRING))
def upper_lower(e, args, chunk) -> Column:
    return _map_dictionary(args[0], {"upper": pc.utf8_upper, "lower": pc.utf8_lower}[e.op])


@register("trim", bind=_string_arg("TRIM", STRING))
@register("ltrim", bind=_string_arg("LTRIM", STRING))
@register("rtrim", bind=_string_arg("RTRIM", STRING))
def trim(e, args, chunk) -> Column:
    """TRIM / LTRIM / RTRIM of the given characters (spaces by default, as in DuckDB)."""
    fn = {"trim": pc.utf8_trim, "ltrim": pc.utf8_ltrim, "rtrim": pc.utf8_rtrim}[e.op]
    chars = e.params[0]
    return _map_dictionary(args[0], lambda d: fn(d, characters=chars))


@register("length", bind=_string_arg("LENGTH", INT64))
def length(e, args, chunk) -> Column:
    a, = args
    return _per_entry_numbers(a, pc.utf8_length(a.dictionary), INT64)


# ------------------------------------------------------------------ concatenation


def _bind_concat(args, params):
    """||, CONCAT: other types are cast to text, as in DuckDB; a NULL literal is a NULL string."""
    out = []
    for a in args:
        if isinstance(a, Lit) and a.value is None:
            out.append(Lit(None, STRING))
        elif a.type.kind != "string":
            out.append(cast_expr(a, STRING))
        else:
            out.append(a)
    return out, STRING


@register("concat", bind=_bind_concat)
def concat(e, cols, chunk) -> Column:
    for c in cols:
        if c.type.kind != "string":
            raise UnsupportedError(f"concatenation of {c.type} values; CAST them to VARCHAR first")
    n = chunk.num_rows
    valid = and_valid(*[c.valid for c in cols])
    if all(c.is_const for c in cols):
        s = "".join(c.dictionary[0].as_py() for c in cols)
        return Column(torch.zeros((), dtype=torch.int32, device=cols[0].data.device), e.type, valid, pa.array([s]))
    # Materialise the strings of each row (Arrow, vectorised), then re-encode.
    parts = [pa.scalar(c.dictionary[0].as_py()) if c.is_const
             else c.dictionary.take(pa.array(c.data.cpu().numpy())) for c in cols]
    joined = pc.binary_join_element_wise(*parts, "")
    enc = pc.dictionary_encode(joined)
    codes = host_tensor(enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32))
    device = cols[0].data.device if not cols[0].is_const else cols[-1].data.device
    return Column(codes.to(device)[:n], e.type, valid, enc.dictionary)


# ------------------------------------------------------------------ functions of constant parameters


def _char_position(d: pa.Array, needle: str) -> pa.Array:
    """1-based character position of the first ``needle`` in each string, 0 when absent."""
    byte_at = pc.find_substring(d, pattern=needle).to_numpy(zero_copy_only=False).astype(np.int64)
    bufs = string_buffers(d)
    if bufs is None:
        return pa.array(np.zeros(0, np.int64))
    offsets, data = bufs
    # Characters before a byte offset = lead bytes (not 10xxxxxx) before it.
    lead = np.concatenate([[0], np.cumsum((data & 0xC0) != 0x80, dtype=np.int64)])
    start = offsets[:-1]
    found = byte_at >= 0
    pos = np.where(found, lead[np.where(found, start + byte_at, start)] - lead[start] + 1, 0)
    return pa.array(pos, pa.int64())


def _split_part(d: pa.Array, sep: str, index: int) -> pa.Array:
    parts = pc.split_pattern(d, pattern=sep)
    offsets = parts.offsets.to_numpy().astype(np.int64)
    counts = offsets[1:] - offsets[:-1]
    k = np.full(len(d), index - 1 if index > 0 else 0, dtype=np.int64)
    if index < 0:
        k = counts + index
    inside = (k >= 0) & (k < counts)
    flat = parts.flatten()
    picked = flat.take(pa.array(np.where(inside, offsets[:-1] + k, 0))) if len(flat) else \
        pa.array([""] * len(d), pa.string())
    return pc.if_else(pa.array(inside), picked, pa.scalar("", pa.string()))


def _named_groups(pattern: str) -> tuple[str, int]:
    """``pattern`` wrapped as group g0 with its capturing groups named g1, g2, ... in order
    (Arrow's extract_regex reads named groups only), and how many it has."""
    out, k, i, in_class = ["(?P<g0>"], 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(" and not pattern.startswith("?", i + 1):
            k += 1
            out.append(f"(?P<g{k}>")
            i += 1
            continue
        out.append(ch)
        i += 1
    out.append(")")
    return "".join(out), k


def _regexp_extract(d: pa.Array, pattern: str, group: int) -> pa.Array:
    named, groups = _named_groups(pattern)
    if not 0 <= group <= groups:
        raise PlanError(f"REGEXP_EXTRACT group {group}: the pattern has {groups} group(s)")
    return pc.struct_field(pc.extract_regex(d, pattern=named), [group]).fill_null("")


def _pad(pad):
    def fn(d, width, fill):
        if width < 0:  # '' as in DuckDB
            return pc.utf8_slice_codeunits(d, 0, 0)
        return pad(pc.utf8_slice_codeunits(d, 0, width), width=width, padding=fill)
    return fn


def _right(d: pa.Array, n: int) -> pa.Array:
    """The last n characters; a negative n drops the first -n."""
    return pc.utf8_slice_codeunits(d, 0, 0) if n == 0 else pc.utf8_slice_codeunits(d, -n)


#: Code points that join a grapheme cluster to what precedes or follows them: marks, the zero
#: width joiner, variation selectors, emoji modifiers and flags, Hangul jamo (DuckDB keeps CR LF apart).
_CLUSTERING = (r"[\p{M}\x{200D}\x{FE00}-\x{FE0F}\x{1F3FB}-\x{1F3FF}\x{1F1E6}-\x{1F1FF}\x{E0020}-\x{E007F}"
               r"\x{1100}-\x{11FF}\x{A960}-\x{A97F}\x{D7B0}-\x{D7FF}]")


def _reverse_graphemes(d: pa.Array) -> pa.Array:
    """REVERSE by grapheme cluster, as DuckDB: a letter keeps its combining marks, an emoji its
    joiners and modifiers (``'S\u0308a'`` reverses to ``'aS\u0308'``). Strings with none of those
    code points reverse by code point in Arrow; the others by the ``regex`` module's clusters."""
    out = pc.utf8_reverse(d)
    mask = pc.fill_null(pc.match_substring_regex(d, _CLUSTERING), False)
    if not pc.any(mask).as_py():
        return out
    clusters = [None if v is None else "".join(reversed(regex.findall(r"\X", v)))
                for v in d.filter(mask).to_pylist()]
    return pc.replace_with_mask(out, mask, pa.array(clusters, pa.string()))


def _regexp_escape(d: pa.Array) -> pa.Array:
    """REGEXP_ESCAPE as RE2's QuoteMeta (DuckDB's): a backslash before every ASCII byte but
    letters, digits and '_'; bytes of non-ASCII characters kept; NUL as ``\\x00``."""
    out = pc.replace_substring_regex(d, pattern=r"([\x01-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f])",
                                     replacement=r"\\\1")
    return pc.replace_substring(out, pattern="\x00", replacement="\\x00")


#: name -> (result type, per-entry function of the dictionary and the constant parameters).
PER_ENTRY = {
    "starts_with": (BOOL, lambda d, p: pc.starts_with(d, pattern=p)),
    "ends_with": (BOOL, lambda d, p: pc.ends_with(d, pattern=p)),
    "contains": (BOOL, lambda d, p: pc.match_substring(d, pattern=p)),
    "regexp_matches": (BOOL, lambda d, p: pc.match_substring_regex(d, pattern=p)),
    "strpos": (INT64, _char_position),
    "replace": (STRING, lambda d, p, r: pc.replace_substring(d, pattern=p, replacement=r)),
    "regexp_replace": (STRING, lambda d, p, r, every: pc.replace_substring_regex(
        d, pattern=p, replacement=r, max_replacements=None if every else 1)),
    "regexp_extract": (STRING, _regexp_extract),
    "split_part": (STRING, _split_part),
    "lpad": (STRING, _pad(pc.utf8_lpad)),
    "rpad": (STRING, _pad(pc.utf8_rpad)),
    "reverse": (STRING, lambda d: _reverse_graphemes(d)),
    "regexp_escape": (STRING, _regexp_escape),
    "left": (STRING, lambda d, n: pc.utf8_slice_codeunits(d, 0, n)),  # negative n drops from the end
    "right": (STRING, _right),
    "repeat": (STRING, lambda d, n: pc.binary_repeat(d, max(n, 0))),
    "path_part": (STRING, path_part),  # parse_filename / parse_dirname / parse_dirpath
}


def _limited_params(e, a: Column, rows: int) -> tuple:
    """LEFT's and RIGHT's count as DuckDB takes it (LEFT's non-negative one is SUBSTRING's
    length, range-checked; the others clamped, which changes nothing: no string is 2**32
    characters long)."""
    if e.op == "left" and e.params[0] >= 0:
        return (check_position(a, rows, e.params[0], "length"),)
    if e.op in ("left", "right"):
        return (min(max(e.params[0], POSITION_MIN), POSITION_MAX),)
    return e.params


def per_entry_function(e, args, chunk) -> Column:
    a, = args
    t, fn = PER_ENTRY[e.op]
    params = _limited_params(e, a, chunk.num_rows)
    if e.op == "repeat":
        d = check_repeat(a, chunk.num_rows, params[0])
    else:
        d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
    res = arrow_string_limit(lambda: map_slices(lambda s: fn(s, *params), d), e.op.upper())
    if t == STRING:
        return Column(a.data, e.type, a.valid, res.cast(pa.string()))
    return _per_entry_numbers(a, res, t)


for _name, (_t, _) in PER_ENTRY.items():
    register(_name, bind=_string_arg(_name, _t))(per_entry_function)
