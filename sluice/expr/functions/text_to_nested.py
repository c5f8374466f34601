"""CAST of text to LIST, STRUCT and MAP, reading the text as DuckDB does: ``'[1, 2]'``,
``'{a: 1, b: x}'`` / ``'(1, x)'``, ``'{k=v, ...}'``, nested to any depth.

DuckDB reads one level at a time: the text is split into its parts (the elements, the fields,
the keys and values) as text, and each part is then cast to its type -- again by splitting,
when that type is nested. This module does the same, level by level over all the texts of a
level at once: a level's parts of every text end to end are the next level's texts, and the
leaves go to the ordinary string casts (``leaf_cast``) in one call per leaf column.

A text runs once per *distinct* text, never per row: a constant is one text, and a column's
texts are its string dictionary's entries in use, deduplicated (:func:`cast_texts_column`), so
the result's codes are the string's codes remapped. A plain list -- no quotes, backslashes or
brackets inside (``'[1, 2, NULL]'``, ``'[red, blue]'``) -- is split by Arrow's string kernels,
all of a level's at once; any other text is read by a scanner in Python over its characters,
and a chunk with more such texts than :data:`MAX_SCANNED_TEXTS` is refused, which bounds the
Python work per chunk.

DuckDB's rules, as its tests pin them down (``test/sql/cast/string_to_*``):

- Blanks around the text and around each part are dropped; a part of ``null`` in any case,
  unquoted, is NULL; an empty part (``[1, , 2]``) is the empty string.
- Quotes (``'`` or ``"``) group a part's text (``[']', x]`` has two elements) and are removed
  at the part's own level, as is a backslash before a quote (or any backslash inside quotes);
  a backslash elsewhere is kept. Brackets ``[]``, ``{}``, ``()`` group an inner part, whose
  quotes are kept for the inner level to read.
- A malformed text (unbalanced brackets or quotes, text after the closing bracket, a struct
  field that the type does not have or given twice, a NULL or missing struct key, a NULL map
  key) is an error, and NULL under TRY_CAST; a part that does not cast is an error, and a NULL
  part under TRY_CAST. Map keys must be unique (an error even under TRY_CAST); a map with a
  key that TRY_CAST made NULL is NULL.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.arrow import column_to_arrow
from sluice.chunk import Column, NestedValues, host_tensor
from sluice.errors import ExecutionError, UnsupportedError
from sluice.kernels.nested_keys import key_column, order_key_type_ok
from sluice.types import LType

#: The most distinct texts of one chunk (at all levels) that a CAST of a string column to a
#: nested type reads with the scanner; beyond it the cast is refused, so the Python work per
#: chunk stays bounded: about 0.1 ms per text of 30 characters (4,096 lists of up to 8 numbers:
#: 0.5 s on the 2-core CI machine, loaded). Plain lists ('[1, 2]') are not counted: Arrow's
#: string kernels split them whole-column.
MAX_SCANNED_TEXTS = 4096

#: DuckDB's blanks (StringUtil::CharacterIsSpace).
_SPACE = frozenset(" \t\n\v\f\r")
_QUOTES = frozenset("'\"")
_CLOSE = {"[": "]", "{": "}", "(": ")"}

LeafCast = Callable[[pa.Array, LType, bool], Column]


class _Malformed(Exception):
    """The text is not a value of the type (DuckDB: "can't be cast to the destination type")."""


class _Scanner:
    """One text, a position in it and whether the character before was an escaping backslash."""

    __slots__ = ("s", "pos", "escaped")

    def __init__(self, s: str) -> None:
        self.s, self.pos, self.escaped = s, 0, False

    def at_end(self) -> bool:
        return self.pos >= len(self.s)

    def char(self) -> str:
        if self.pos >= len(self.s):
            raise _Malformed
        return self.s[self.pos]

    def skip_blanks(self) -> None:
        s = self.s
        while self.pos < len(s) and s[self.pos] in _SPACE:
            self.pos += 1
            self.escaped = False

    def expect_end(self) -> None:
        """After a closing bracket: only blanks may follow."""
        self.pos += 1
        self.skip_blanks()
        if self.pos != len(self.s):
            raise _Malformed

    def to_close_quote(self) -> None:
        """From an opening quote to its closing one (a backslash escapes one character)."""
        s = self.s
        quote = s[self.pos]
        self.pos += 1
        while self.pos < len(s):
            c = s[self.pos]
            backslash = c == "\\" and not self.escaped
            if c == quote and not self.escaped and c != "\\":
                return
            self.escaped = backslash
            self.pos += 1
        raise _Malformed

    def to_close_bracket(self) -> None:
        """From an opening bracket to the one that closes it (quotes inside skipped whole)."""
        s = self.s
        pending: list[str] = []
        while self.pos < len(s):
            c = s[self.pos]
            backslash = False
            if c in _QUOTES:
                if not self.escaped:
                    self.to_close_quote()
            elif c in _CLOSE:
                pending.append(_CLOSE[c])
            elif pending and c == pending[-1]:
                pending.pop()
                if not pending:
                    return
            elif c == "\\":
                backslash = True
            self.escaped = backslash
            self.pos += 1
        raise _Malformed

    def part(self, stops: str) -> tuple[int, int] | None:
        """The next part up to one of ``stops`` (left at it): its first and one-past-last
        non-blank positions, or None when it is blank."""
        s = self.s
        start = end = -1
        while self.pos < len(s) and s[self.pos] not in stops:
            c = s[self.pos]
            backslash = False
            if c in _QUOTES or c in _CLOSE or c == "\\" or c not in _SPACE:
                if start < 0:
                    start = self.pos
                if c in _QUOTES:
                    if not self.escaped:
                        self.to_close_quote()
                elif c in _CLOSE:
                    self.to_close_bracket()
                elif c == "\\":
                    backslash = True
                end = self.pos
            self.escaped = backslash
            self.pos += 1
        if self.pos >= len(s):
            raise _Malformed
        return None if start < 0 else (start, end + 1)

    def struct_key(self) -> tuple[int, int]:
        """A struct field's name up to ``:`` (an escaped character counts as text)."""
        s = self.s
        start = end = -1
        while self.pos < len(s) and s[self.pos] != ":":
            c = s[self.pos]
            backslash = False
            if self.escaped or c not in _SPACE:
                if start < 0:
                    start = self.pos
                if not self.escaped and c in _QUOTES:
                    self.to_close_quote()
                elif not self.escaped and c == "\\":
                    backslash = True
                end = self.pos
            self.escaped = backslash
            self.pos += 1
        if self.pos >= len(s) or start < 0:
            raise _Malformed
        return start, end + 1


def _is_null(s: str, span: tuple[int, int] | None) -> bool:
    return span is not None and span[1] - span[0] == 4 and s[span[0]:span[1]].lower() == "null"


def _unquote(s: str, span: tuple[int, int] | None, scopes: bool = True) -> str:
    """A part's text: its own level's quotes and escaping backslashes removed; inside brackets
    (``scopes``) everything is kept for the inner level."""
    if span is None:
        return ""
    lo, hi = span
    out: list[str] = []
    escaped = quoted = False
    quote = inner = ""  # inner: the quote open inside brackets (its text kept whole, brackets in it too)
    raw_escaped = False
    pending: list[str] = []
    for i in range(lo, hi):
        c = s[i]
        if escaped:
            out.append(c)
            escaped = False
            continue
        if pending and not quoted:
            if inner:
                if c == "\\":
                    escaped = True
                elif c == inner:
                    inner = ""
                out.append(c)
                continue
            if c in _QUOTES and not raw_escaped:
                inner = c
                out.append(c)
                continue
            raw_escaped = c == "\\"  # (before a quote: no quoted text opens; brackets count as ever)
        if not pending and c == "\\" and (quoted or (i + 1 < hi and s[i + 1] in _QUOTES)):
            escaped = True
            continue
        if not pending and c in _QUOTES:
            if quoted and c == quote:
                quoted = False
                continue
            if not quoted:
                quoted, quote = True, c
                continue
        if not quoted:
            if pending and c == pending[-1]:
                pending.pop()
            if c in _CLOSE and scopes:
                pending.append(_CLOSE[c])
        out.append(c)
    return "".join(out)


def _value(s: str, span: tuple[int, int] | None) -> str | None:
    return None if _is_null(s, span) else _unquote(s, span)


def split_list(text: str) -> list[str | None]:
    """``[a, b, ...]``: its elements' texts (None: NULL)."""
    sc = _Scanner(text)
    sc.skip_blanks()
    if sc.char() != "[":
        raise _Malformed
    sc.pos += 1
    sc.skip_blanks()
    out: list[str | None] = []
    while True:
        span = sc.part(",]")
        if sc.char() != "]" or span is not None or out:
            out.append(_value(text, span))
        if sc.char() == "]":
            break
        sc.pos += 1
        sc.skip_blanks()
        if sc.at_end():
            raise _Malformed
    sc.expect_end()
    return out


def split_map(text: str) -> list[tuple[str, str | None]]:
    """``{k=v, ...}``: its entries' texts (a value None: NULL; a NULL key is malformed)."""
    sc = _Scanner(text)
    sc.skip_blanks()
    if sc.char() != "{":
        raise _Malformed
    sc.pos += 1
    sc.skip_blanks()
    if sc.char() == "}":
        sc.expect_end()
        return []
    out: list[tuple[str, str | None]] = []
    while True:
        key = sc.part("=")
        if _is_null(text, key):
            raise _Malformed
        k = _unquote(text, key)
        sc.pos += 1
        sc.skip_blanks()
        out.append((k, _value(text, sc.part(",}"))))
        if sc.char() == "}":
            break
        sc.pos += 1
        sc.skip_blanks()
        if sc.at_end():
            raise _Malformed
    sc.expect_end()
    return out


def split_struct(text: str, names: list[str]) -> list[str | None]:
    """``{name: v, ...}`` (fields by name, exactly as the type writes them) or ``(v, ...)``
    (by position): each field's text, None where NULL or not given."""
    sc = _Scanner(text)
    sc.skip_blanks()
    opening = sc.char()
    if opening not in "{(":
        raise _Malformed
    closing = _CLOSE[opening]
    sc.pos += 1
    sc.skip_blanks()
    out: list[str | None] = [None] * len(names)
    if sc.char() == closing:
        sc.expect_end()
        return out
    seen: set[int] = set()
    i = 0
    while True:
        if opening == "{":
            key = sc.struct_key()
            if _is_null(text, key):
                raise _Malformed
            name = _unquote(text, key, scopes=False)
            if name not in names:
                raise _Malformed
            i = names.index(name)
            if i in seen:  # DuckDB 2.0: a field given twice is malformed
                raise _Malformed
            seen.add(i)
            sc.pos += 1
            sc.skip_blanks()
        span = sc.part("," + closing)
        if opening == "(" and span is None and sc.char() == closing:
            break  # (DuckDB 2.0: a blank last value is no value: '(x,)' leaves the next field NULL)
        if i == len(names):
            raise _Malformed
        out[i] = _value(text, span)
        if sc.char() == closing:
            break
        i += 1
        sc.pos += 1
        sc.skip_blanks()
        if sc.at_end():
            raise _Malformed
    sc.expect_end()
    return out


# ---------------------------------------------------------------- texts to columns


def _refuse_malformed(text: str, t: LType) -> None:
    raise ExecutionError(f"a string {_shown(text)} cannot be cast to {t} (not a value of that type)")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _mask(ok: np.ndarray) -> torch.Tensor | None:
    return None if ok.all() else host_tensor(ok.copy())


class _Budget:
    """Texts left for the scanner in one cast of a chunk (:data:`MAX_SCANNED_TEXTS`)."""

    __slots__ = ("left", "t")

    def __init__(self, t: LType, left: int) -> None:
        self.t, self.left = t, left

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise UnsupportedError(
                f"CAST of a string column with more than {MAX_SCANNED_TEXTS} distinct texts in a chunk to "
                f"{self.t.kind.upper()} that hold quotes, escapes, brackets inside or a STRUCT / MAP (each such "
                "text is read by a scanner in Python; plain lists such as '[1, 2]' are read whole-column)")


#: A plain list: no quotes, backslashes or brackets between its own ``[`` and ``]`` (after
#: the blanks around it are dropped): its elements are the texts between commas, trimmed.
_PLAIN_LIST = r"^\[[^\[\]{}()'\"\\]*\]$"
_BLANKS = " \t\n\v\f\r"


def _plain_lists(texts: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Which texts are plain lists; for those (in order) their element texts end to end (NULL
    for ``null``) and each one's number of elements -- with Arrow's string kernels, no scanner."""
    trimmed = pc.utf8_trim(texts, characters=_BLANKS)
    plain = np.asarray(pc.fill_null(pc.match_substring_regex(trimmed, _PLAIN_LIST), False)
                       .to_numpy(zero_copy_only=False), dtype=np.bool_)
    if not plain.any():
        return plain, pa.array([], pa.string()), np.zeros(0, dtype=np.int64)
    body = pc.utf8_slice_codeunits(trimmed.filter(pa.array(plain)), 1, -1)
    blank = np.asarray(pc.match_substring_regex(body, f"^[{_BLANKS}]*$").to_numpy(zero_copy_only=False), dtype=np.bool_)
    pieces = pc.split_pattern(body.filter(pa.array(~blank)), ",")
    sizes = np.zeros(len(body), dtype=np.int64)
    sizes[~blank] = np.asarray(pc.list_value_length(pieces).to_numpy(zero_copy_only=False), dtype=np.int64)
    values = pc.utf8_trim(pieces.flatten(), characters=_BLANKS)
    null = pc.equal(pc.utf8_lower(values), "null")  # (only a part of exactly four letters is NULL)
    values = pc.if_else(null, pa.scalar(None, pa.string()), values)
    return plain, values, sizes


def cast_texts(texts: pa.Array, t: LType, lenient: bool, leaf_cast: LeafCast, budget: _Budget) -> Column:
    """``texts`` (a string array; NULL: NULL) cast to ``t``, one row each (host tensors);
    ``lenient``: TRY_CAST. Plain lists are split by Arrow's kernels; every other text goes
    through the scanner, counted against ``budget``."""
    if not t.is_nested:
        return leaf_cast(texts, t, lenient)
    n = len(texts)
    ok = np.asarray(pc.is_valid(texts).to_numpy(zero_copy_only=False), dtype=np.bool_)
    plain, plain_values, plain_sizes = _plain_lists(texts) if t.kind == "list" else (np.zeros(n, np.bool_), None, None)
    slow = np.flatnonzero(ok & ~plain)
    budget.spend(len(slow))
    slow_texts = texts.take(pa.array(slow, pa.int64())).to_pylist()
    if t.kind == "struct":
        names = [name for name, _ in t.args]
        fields: list[list[str | None]] = [[None] * n for _ in names]
        for r, s in zip(slow.tolist(), slow_texts):
            try:
                parts = split_struct(s, names)
            except _Malformed:
                if not lenient:
                    _refuse_malformed(s, t)
                ok[r] = False
                continue
            for f, v in zip(fields, parts):
                f[r] = v
        kids = tuple(cast_texts(pa.array(f, pa.string()), u, lenient, leaf_cast, budget)
                     for f, (_, u) in zip(fields, t.args))
        return Column(torch.arange(n, dtype=torch.int64), t, _mask(ok), NestedValues(kids, None, n))
    sizes = np.zeros(n, dtype=np.int64)
    keys: list[str | None] = []
    values: list[str | None] = []
    for r, s in zip(slow.tolist(), slow_texts):
        try:
            if t.kind == "list":
                got = split_list(s)
                values.extend(got)
            else:
                entries = split_map(s)
                keys.extend(k for k, _ in entries)
                values.extend(v for _, v in entries)
                got = entries
        except _Malformed:
            if not lenient:
                _refuse_malformed(s, t)
            ok[r] = False
            continue
        sizes[r] = len(got)
    offsets = np.zeros(n + 1, dtype=np.int64)
    if t.kind == "list":
        sizes[plain] = plain_sizes
        np.cumsum(sizes, out=offsets[1:])
        kids = (cast_texts(_in_row_order(plain, plain_values, plain_sizes, values, sizes, offsets), t.element,
                           lenient, leaf_cast, budget),)
    else:
        np.cumsum(sizes, out=offsets[1:])
        kids = (cast_texts(pa.array(keys, pa.string()), t.args[0], lenient, leaf_cast, budget),
                cast_texts(pa.array(values, pa.string()), t.args[1], lenient, leaf_cast, budget))
        _check_map_keys(kids[0], offsets, ok, lenient)
    return Column(torch.arange(n, dtype=torch.int64), t, _mask(ok), NestedValues(kids, host_tensor(offsets), n))


def _in_row_order(plain: np.ndarray, plain_values: pa.Array, plain_sizes: np.ndarray, slow_values: list,
                  sizes: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """The elements of plain lists (split whole-column) and of scanned lists, in row order."""
    if not plain.any():
        return pa.array(slow_values, pa.string())
    both = pa.concat_arrays([plain_values, pa.array(slow_values, pa.string())])
    if not slow_values:
        return both
    starts = np.zeros(len(sizes), dtype=np.int64)  # each row's first element in ``both``
    starts[plain] = np.cumsum(plain_sizes) - plain_sizes
    slow_sizes = np.where(plain, 0, sizes)
    starts[~plain] = len(plain_values) + (np.cumsum(slow_sizes) - slow_sizes)[~plain]
    idx = np.repeat(starts - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
    return both.take(pa.array(idx, pa.int64()))


def _check_map_keys(keys: Column, offsets: np.ndarray, ok: np.ndarray, lenient: bool) -> None:
    """DuckDB's rules for a map's keys: unique within a map (else an error; under TRY_CAST the
    map is NULL), and a map whose key TRY_CAST made NULL is NULL (``ok`` cleared)."""
    if len(keys) == 0:
        return
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    if keys.valid is not None:
        for r in np.unique(rows[~keys.valid.numpy()]):
            ok[int(r)] = False
    if keys.type.is_nested:  # compared by their order keys: equal exactly where the values are
        bad = order_key_type_ok(keys.type)
        if bad is not None:
            raise UnsupportedError(f"CAST from a string to a MAP with {keys.type} keys")
        keys = key_column(keys)
    k = column_to_arrow(keys)
    table = pa.table({"r": pa.array(rows), "k": k}).filter(pc.is_valid(k))
    counts = table.group_by(["r", "k"]).aggregate([("r", "count")])
    if counts.num_rows == table.num_rows:
        return
    if not lenient:
        raise ExecutionError("map keys must be unique (a string cast to a MAP names a key twice)")
    twice = counts.filter(pc.greater(counts["r_count"], 1))["r"]
    for r in pc.unique(twice).to_pylist():  # (TRY_CAST: such a map is NULL; one step per such map)
        ok[r] = False


def cast_texts_column(a: Column, t: LType, lenient: bool, leaf_cast: LeafCast) -> Column:
    """A string column cast to the nested type ``t``: each distinct text in use parsed once,
    the result's codes the string's codes remapped onto them."""
    codes = a.data.long()
    dev = codes.device
    flat = codes.reshape(-1)
    in_use = flat if a.valid is None else flat[a.valid.reshape(-1).expand(flat.shape)]
    used = torch.unique(in_use).cpu()
    entries = a.dictionary.take(pa.array(used.numpy())) if len(used) else pa.array([], pa.string())
    enc = pc.dictionary_encode(entries)
    distinct = enc.dictionary
    out = cast_texts(distinct, t, lenient, leaf_cast, _Budget(t, MAX_SCANNED_TEXTS))
    remap = torch.zeros(len(a.dictionary), dtype=torch.int64)
    if len(used):
        remap[used] = torch.from_numpy(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64))
    new_codes = remap.to(dev)[codes]
    valid = a.valid
    if out.valid is not None and len(distinct):
        entry_ok = out.valid.to(dev)[new_codes]
        valid = entry_ok if valid is None else valid & entry_ok
    values = out.dictionary
    if len(distinct) == 0:  # no text in use: every row is NULL; one entry of values behind them
        values = cast_texts(pa.nulls(1, pa.string()), t, lenient, leaf_cast, _Budget(t, 0)).dictionary
        valid = torch.zeros(codes.shape, dtype=torch.bool, device=dev)
    return Column(new_codes, t, valid, values.to(dev) if dev.type != "cpu" else values)
