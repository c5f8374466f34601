"""String functions that return lists: STRING_SPLIT / STR_SPLIT and REGEXP_EXTRACT_ALL, with
DuckDB's semantics (a constant separator or pattern).

A string column is codes into a dictionary, so the lists are made once per dictionary entry
(pyarrow's split and regex kernels over the entries, never a loop over rows) and the result
is a LIST column whose codes are the string's own codes: its nested values have one entry per
dictionary entry, the pieces of all entries end to end as one string child."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, NestedValues, host_tensor, to_device
from sluice.kernels.buffers import lookup
from sluice.kernels.checks import fail_if
from sluice.errors import PlanError, UnsupportedError
from sluice.expr.functions.registry import register
from sluice.expr.functions.paths import path_parts
from sluice.expr.functions.strings import _named_groups
from sluice.expr.nodes import Lit
from sluice.types import STRING, list_of, struct_of

#: Markers around each match in REGEXP_EXTRACT_ALL's rewrite (a string holding one is refused).
_OPEN, _CLOSE = "\x01", "\x02"


def _bind_string(name: str):
    def bind(args, params):
        a, = args
        if a.type.kind == "null":  # NULL: a NULL list
            a = Lit(None, STRING)
        if a.type.kind != "string":
            raise PlanError(f"{name.upper()} needs a string, got {a.type}")
        return [a], list_of(STRING)
    return bind


def _list_per_entry(a: Column, lists: pa.ListArray, out_type) -> Column:
    """A LIST column over ``a``'s codes whose entry i is ``lists[i]`` (for dictionary entry i)."""
    lists = lists.fill_null([]) if lists.null_count else lists
    offs = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    return _list_of_children(a, offs - offs[0], _string_child(lists.flatten(), a.data.device), out_type)


def _string_child(pieces: pa.Array, dev) -> Column:
    """A string Column of ``pieces`` in order (its own dictionary), NULL where a piece is."""
    pieces = pieces.cast(pa.string()) if pieces.type != pa.string() else pieces
    valid = None
    if pieces.null_count:  # (REGEXP_EXTRACT_ALL's groups that took no part): NULL elements
        valid = to_device(host_tensor(np.asarray(pc.is_valid(pieces).to_numpy(zero_copy_only=False))), dev)
        pieces = pieces.fill_null("")
    return Column(torch.arange(len(pieces), dtype=torch.int32, device=dev), STRING, valid, pieces)


def _list_of_children(a: Column, offs: np.ndarray, child: Column, out_type) -> Column:
    """A LIST column over ``a``'s codes: entry i is ``child[offs[i]:offs[i + 1]]``."""
    dev = a.data.device
    values = NestedValues((child,), to_device(host_tensor(offs.astype(np.int64)), dev), len(offs) - 1)
    return Column(a.data.to(torch.int64), out_type, a.valid, values)


def _entries(a: Column) -> pa.Array:
    d = a.dictionary
    return d if d.type == pa.string() else d.cast(pa.string())


@register("parse_path", bind=_bind_string("parse_path"))
def parse_path(e, args, chunk) -> Column:
    """PARSE_PATH(path [, separator]): the path's parts (``functions/paths.py``); NULL for NULL."""
    a, = args
    sep, = e.params
    return _list_per_entry(a, path_parts(_entries(a).fill_null(""), sep), e.type)


@register("string_split", bind=_bind_string("string_split"))
def string_split(e, args, chunk) -> Column:
    """STRING_SPLIT(s, sep): the pieces between each ``sep`` (a NULL one: ``[s]``, as DuckDB;
    the translator refuses an empty one); NULL for a NULL string."""
    a, = args
    sep, = e.params
    d = _entries(a)
    if sep is None:
        lists = pa.ListArray.from_arrays(pa.array(np.arange(len(d) + 1, dtype=np.int32)), d.fill_null(""))
    else:
        lists = pc.split_pattern(d.fill_null(""), pattern=sep)
    return _list_per_entry(a, lists, e.type)


@register("string_split_regex", bind=_bind_string("string_split_regex"))
def string_split_regex(e, args, chunk) -> Column:
    """STRING_SPLIT_REGEX(s, pattern): DuckDB's splitter, which matches the pattern again in what
    is left after each piece (so ``^`` anchors there too): a piece before each match; an empty
    match at the start of what is left takes its first character as a piece instead (none left
    after it: what is left is the last piece); the rest is the last piece. Run for every
    dictionary entry at once, one round per piece (the first match of all remainders, marked
    by RE2's replace), never a loop over rows. An empty pattern splits into characters ('' into
    none). NULL for a NULL string; the translator refuses assertions that look behind the
    remainder's start (``^``, ``\\b``), which DuckDB matches in the whole string."""
    a, = args
    pattern, = e.params
    d = _entries(a).fill_null("")
    if pc.any(pc.match_substring_regex(d, f"[{_OPEN}{_CLOSE}]")).as_py():
        raise UnsupportedError("STRING_SPLIT_REGEX of strings holding the bytes \\x01 or \\x02")
    n = len(d)
    rows, pieces = [], []  # (entry, round) of each piece, and its text
    live = np.arange(n)
    rest = d
    while True:
        if len(live):
            going = np.asarray(pc.greater(pc.binary_length(rest), 0).to_numpy(zero_copy_only=False), dtype=bool)
        if not len(live) or not going.any():
            rows.append(live)
            pieces.append(rest)
            break
        done = ~going
        rows.append(live[done])  # nothing left: the remainder ('') is the last piece
        pieces.append(rest.filter(pa.array(done)))
        live, rest = live[going], rest.filter(pa.array(going))
        try:
            marked = pc.replace_substring_regex(rest, pattern=pattern, replacement=f"{_OPEN}\\0{_CLOSE}",
                                                max_replacements=1)
        except pa.ArrowInvalid as err:  # (RE2's replace refusing a match it found)
            raise UnsupportedError(f"STRING_SPLIT_REGEX with the pattern {pattern!r}: {err}") from None
        head = pc.split_pattern(marked, pattern=_OPEN, max_splits=1)
        found = np.asarray(pc.equal(pc.list_value_length(head), 2).to_numpy(zero_copy_only=False), dtype=bool)
        before = pc.list_element(head, 0)
        tail = pc.split_pattern(pc.list_element(head.filter(pa.array(found)), 1), pattern=_CLOSE, max_splits=1)
        pre_f = before.filter(pa.array(found))
        match_len = np.asarray(pc.binary_length(pc.list_element(tail, 0)).to_numpy(zero_copy_only=False))
        after = pc.list_element(tail, 1)
        pre_len = np.asarray(pc.binary_length(pre_f).to_numpy(zero_copy_only=False))
        rest_f = rest.filter(pa.array(found))
        # an empty match where the remainder starts: its first character is the piece
        step = (match_len == 0) & (pre_len == 0)
        first_char = pc.utf8_slice_codeunits(rest_f, 0, 1)
        after_char = pc.utf8_slice_codeunits(rest_f, 1)
        stepped_out = step & np.asarray(pc.equal(pc.binary_length(after_char), 0).to_numpy(zero_copy_only=False), dtype=bool)
        step_mask, last_mask = pa.array(step & ~stepped_out), pa.array(stepped_out)
        piece = pc.if_else(step_mask, first_char, pre_f)
        nxt = pc.if_else(step_mask, after_char, after)
        # no match, or one character left after an empty match: the remainder is the last piece
        ends = ~found
        rows.append(live[ends])
        pieces.append(rest.filter(pa.array(ends)))
        f_live = live[found]
        rows.append(f_live[stepped_out])
        pieces.append(rest_f.filter(last_mask))
        keep = ~stepped_out
        rows.append(f_live[keep])
        pieces.append(piece.filter(pa.array(keep)))
        live, rest = f_live[keep], nxt.filter(pa.array(keep))
    # pieces in entry order, each entry's in the order made (a stable sort by entry)
    entry = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows])
    text = pa.concat_arrays([p.cast(pa.string()) for p in pieces])
    if pattern == "":  # DuckDB splits '' by characters: '' has none, so no piece
        empty = np.asarray(pc.equal(pc.binary_length(d), 0).to_numpy(zero_copy_only=False), dtype=bool)
        keep = ~empty[entry]
        entry, text = entry[keep], text.filter(pa.array(keep))
    order = np.argsort(entry, kind="stable")
    counts = np.bincount(entry, minlength=n)
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offs[1:])
    return _list_of_children(a, offs, _string_child(text.take(pa.array(order)), a.data.device), e.type)


def _bind_extract_all(args, params):
    args, _ = _bind_string("regexp_extract_all")(args, params)
    names = params[2]
    if names is None:
        return args, list_of(STRING)
    return args, list_of(struct_of((m, STRING) for m in names))


@register("regexp_extract_all", bind=_bind_extract_all)
def regexp_extract_all(e, args, chunk) -> Column:
    """REGEXP_EXTRACT_ALL(s, pattern [, group | names]): the group's text (0: the whole match)
    of every non-overlapping match, left to right -- with names, a struct per match whose
    field i is group i; NULL for a NULL string. Each match is rewritten to itself between two
    marker bytes (RE2's global replace: DuckDB's matches but one), then split out. The one:
    after a non-empty match DuckDB also takes an empty match where it ended, which RE2 skips;
    for a pattern that matches empty text (no anchors: anywhere) one is added after each
    non-empty match not directly followed by another."""
    a, = args
    pattern, group, names = e.params
    d = _entries(a).fill_null("")
    if pc.any(pc.match_substring_regex(d, f"[{_OPEN}{_CLOSE}]")).as_py():
        raise UnsupportedError("REGEXP_EXTRACT_ALL of strings holding the bytes \\x01 or \\x02")
    marked = pc.replace_substring_regex(d, pattern=pattern, replacement=f"{_OPEN}\\0{_CLOSE}")
    parts = pc.split_pattern(marked, pattern=_OPEN)  # [before the first match, match+rest, ...]
    offs = np.asarray(parts.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    offs = offs - offs[0]
    flat = parts.flatten()
    keep = np.ones(len(flat), dtype=bool)
    keep[offs[:-1]] = False  # the text before each string's first match
    matches = pc.split_pattern(flat.filter(pa.array(keep)), pattern=_CLOSE, max_splits=1)
    found = pc.list_element(matches, 0)
    counts = np.diff(offs) - 1
    if matches_empty(pattern) and len(found):
        found, counts = _add_empty_matches(found, pc.list_element(matches, 1), counts)
    dev = a.data.device
    groups = _named_groups(pattern)[1]
    if names is None and not 0 <= group <= groups:  # DuckDB: [] where nothing matches, else an error
        if group > 0:
            fail_if(lookup(to_device(host_tensor(counts > 0), dev), a.data),
                    f"Pattern has {groups} groups. Cannot access group {group}", a.valid)
        counts = np.zeros_like(counts)  # (a negative group: [] whatever matched)
        found = found.slice(0, 0)
        group = 0
    new_offs = np.zeros(len(d) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offs[1:])
    if names is None:
        child = _string_child(_group_of(found, pattern, group) if group else found, dev)
    else:
        fields = tuple(_string_child(_group_of(found, pattern, i + 1), dev) for i in range(len(names)))
        child = Column(torch.arange(len(found), dtype=torch.int64, device=dev), e.type.args[0],
                       None, NestedValues(fields, None, len(found)))
    return _list_of_children(a, new_offs, child, e.type)


def _add_empty_matches(found: pa.Array, rest: pa.Array, counts: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """``found`` (each string's matches, ``counts`` of them, end to end) with an empty match
    after each non-empty one that the next does not directly follow (``rest``: the text up
    to the next match; the last match of a string is followed by its end)."""
    n = len(found)
    last = np.zeros(n, dtype=bool)
    ends = np.cumsum(counts)
    last[ends[counts > 0] - 1] = True
    nonempty = np.asarray(pc.greater(pc.binary_length(found), 0).to_numpy(zero_copy_only=False))
    gap = np.asarray(pc.greater(pc.binary_length(rest.fill_null("")), 0).to_numpy(zero_copy_only=False))
    extra = nonempty & (gap | last)
    idx = np.repeat(np.arange(n), 1 + extra)
    is_extra = np.zeros(len(idx), dtype=bool)
    is_extra[np.cumsum(1 + extra)[extra] - 1] = True
    out = pc.if_else(pa.array(is_extra), pa.scalar("", pa.string()), found.take(pa.array(idx)))
    starts = np.concatenate([[0], ends[:-1]]) if len(counts) else ends
    per_string = np.add.reduceat(extra.astype(np.int64), starts[counts > 0]) if n else np.zeros(0, np.int64)
    new_counts = counts.copy()
    new_counts[counts > 0] += per_string
    return out, new_counts


def matches_empty(pattern: str) -> bool:
    """Whether ``pattern`` matches the empty text."""
    return bool(pc.match_substring_regex(pa.array([""]), pattern=pattern)[0].as_py())


def _group_of(found: pa.Array, pattern: str, group: int) -> pa.Array:
    """Group ``group`` of each whole match, NULL where the group took no part (DuckDB). The
    match alone, anchored, parses as it did in its string (leftmost-first: the best parse that
    ends where it ended), which needs a pattern free of context assertions (checked)."""
    named, _ = _named_groups(pattern)
    anchored = f"^(?:{named})$"
    text = pc.struct_field(pc.extract_regex(found, pattern=anchored), [group])
    took_part = pc.is_valid(pc.struct_field(pc.extract_regex_span(found, pattern=anchored), [group]))
    return pc.if_else(took_part, text, pa.scalar(None, pa.string()))


def check_regex_group(pattern: str, group: int, named: bool = False) -> None:
    """REGEXP_EXTRACT_ALL's group must exist in the pattern, or with ``named`` its ``group``
    names be no more than its groups (DuckDB's errors otherwise). A pattern with anchors or
    word boundaries that can match empty text is refused: where it matches empty then depends
    on the position (see :func:`regexp_extract_all`)."""
    anchors = any(x in pattern for x in ("^", "$", "\\A", "\\z", "\\b", "\\B"))
    if anchors and (matches_empty(pattern) or "\\b" in pattern or "\\B" in pattern):
        raise UnsupportedError("REGEXP_EXTRACT_ALL with a pattern that matches empty text next to an anchor")
    _, groups = _named_groups(pattern)
    if (0 < group <= groups or named) and any(a in pattern for a in ("^", "$", "\\A", "\\z", "\\B")):
        raise UnsupportedError("REGEXP_EXTRACT_ALL of a group with anchors in the pattern")
    if named and group > groups:
        raise PlanError(f"REGEXP_EXTRACT_ALL: {group} group names, but the pattern has {groups} group(s)")
    # (a group the pattern lacks: [] where nothing matches, an error where something does -- at run time)
