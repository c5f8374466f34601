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
from sluice.errors import PlanError, UnsupportedError
from sluice.expr.functions.registry import register
from sluice.expr.functions.strings import _named_groups
from sluice.expr.nodes import Lit
from sluice.types import STRING, list_of

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
    dev = a.data.device
    lists = lists.fill_null([]) if lists.null_count else lists
    offs = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    offs = offs - offs[0]
    pieces = lists.flatten()
    pieces = pieces.cast(pa.string()) if pieces.type != pa.string() else pieces
    valid = None
    if pieces.null_count:  # (REGEXP_EXTRACT_ALL's groups that took no part): NULL elements
        valid = to_device(host_tensor(np.asarray(pc.is_valid(pieces).to_numpy(zero_copy_only=False))), dev)
        pieces = pieces.fill_null("")
    child = Column(torch.arange(len(pieces), dtype=torch.int32, device=dev), STRING, valid, pieces)
    values = NestedValues((child,), to_device(host_tensor(offs), dev), len(lists))
    codes = a.data.to(torch.int64)
    return Column(codes, out_type, a.valid, values)


def _entries(a: Column) -> pa.Array:
    d = a.dictionary
    return d if d.type == pa.string() else d.cast(pa.string())


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


@register("regexp_extract_all", bind=_bind_string("regexp_extract_all"))
def regexp_extract_all(e, args, chunk) -> Column:
    """REGEXP_EXTRACT_ALL(s, pattern [, group]): the group's text (0: the whole match) of every
    non-overlapping match, left to right; NULL for a NULL string. Each match is rewritten to
    its group between two marker bytes (RE2's global replace: DuckDB's matches), then split out."""
    a, = args
    pattern, group = e.params
    d = _entries(a).fill_null("")
    if pc.any(pc.match_substring_regex(d, f"[{_OPEN}{_CLOSE}]")).as_py():
        raise UnsupportedError("REGEXP_EXTRACT_ALL of strings holding the bytes \\x01 or \\x02")
    marked = pc.replace_substring_regex(d, pattern=pattern, replacement=f"{_OPEN}\\0{_CLOSE}")
    parts = pc.split_pattern(marked, pattern=_OPEN)  # [before the first match, match+rest, ...]
    offs = np.asarray(parts.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    flat = parts.flatten()
    keep = np.ones(len(flat), dtype=bool)
    keep[offs[:-1] - offs[0]] = False  # the text before each string's first match
    matches = pc.split_pattern(flat.filter(pa.array(keep)), pattern=_CLOSE, max_splits=1)
    found = pc.list_element(matches, 0)
    if group:
        found = _group_of(found, pattern, group)
    counts = np.diff(offs) - 1
    new_offs = np.zeros(len(d) + 1, dtype=np.int32)
    np.cumsum(counts, out=new_offs[1:])
    return _list_per_entry(a, pa.ListArray.from_arrays(pa.array(new_offs), found), e.type)


def _group_of(found: pa.Array, pattern: str, group: int) -> pa.Array:
    """Group ``group`` of each whole match, NULL where the group took no part (DuckDB). The
    match alone, anchored, parses as it did in its string (leftmost-first: the best parse that
    ends where it ended), which needs a pattern free of context assertions (checked)."""
    named, _ = _named_groups(pattern)
    anchored = f"^(?:{named})$"
    text = pc.struct_field(pc.extract_regex(found, pattern=anchored), [group])
    took_part = pc.is_valid(pc.struct_field(pc.extract_regex_span(found, pattern=anchored), [group]))
    return pc.if_else(took_part, text, pa.scalar(None, pa.string()))


def check_regex_group(pattern: str, group: int) -> None:
    """REGEXP_EXTRACT_ALL's group must exist in the pattern (DuckDB's error otherwise). A
    pattern that can match empty text is refused: after a non-empty match DuckDB also takes an
    empty one where RE2's global replace does not (``'e*'`` in ``'green'``)."""
    if pc.match_substring_regex(pa.array([""]), pattern=pattern)[0].as_py() or "\\b" in pattern:
        raise UnsupportedError("REGEXP_EXTRACT_ALL with a pattern that matches empty text")
    _, groups = _named_groups(pattern)
    if group and any(a in pattern for a in ("^", "$", "\\A", "\\z", "\\B")):
        raise UnsupportedError("REGEXP_EXTRACT_ALL of a group with anchors in the pattern")
    if not 0 <= group <= groups:
        raise PlanError(f"REGEXP_EXTRACT_ALL group {group}: the pattern has {groups} group(s)")
