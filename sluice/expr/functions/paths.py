"""DuckDB's path functions over a string's dictionary entries (``parse_filename``,
``parse_dirname``, ``parse_dirpath``, ``parse_path``): the part of a path before or after its
first or last separator, or all its parts, with Arrow's RE2 over each distinct string, never
per row. Registered as the per-entry string function ``path_part``
(:data:`sluice.expr.functions.strings.PER_ENTRY`) and the list function ``parse_path``
(:mod:`sluice.expr.functions.string_lists`)."""

from __future__ import annotations

import re

import pyarrow as pa
import numpy as np
import pyarrow.compute as pc

#: DuckDB's separator options: the characters each splits on (``system`` is the POSIX one).
SEPARATORS = {"default": "/\\", "both_slash": "/\\", "forward_slash": "/", "backslash": "\\", "system": "/"}


def path_part(d: pa.Array, part: str, separator: str, trim_extension: bool = False) -> pa.Array:
    """``part`` of each path of ``d``: ``filename`` (after the last separator; with
    ``trim_extension``, less its last ``.`` and what follows), ``dirname`` (before the first
    separator) or ``dirpath`` (before the last); as DuckDB, a dirname of a path starting with a
    separator is that separator (``/`` for ``/a``), a dirpath of ``/x`` is empty but of ``/``
    is ``/``, and a path without a separator has neither."""
    cls = "[" + re.escape(SEPARATORS[separator]) + "]"
    if part == "filename":
        out = pc.replace_substring_regex(d, "(?s)^.*" + cls, "")
        return pc.replace_substring_regex(out, r"(?s)\.[^.]*$", "") if trim_extension else out
    has_sep = pc.match_substring_regex(d, cls)
    rest = "(?s)" + cls + (".*$" if part == "dirname" else "[^" + cls[1:-1] + "]*$")
    head = pc.replace_substring_regex(d, rest, "")
    if part == "dirname":  # the separator the path starts with: '/' for '/a/b'
        lead = pc.utf8_slice_codeunits(d, 0, 1)
    else:  # only a path that is one separator keeps it: '/' for '/', '' for '/x' (DuckDB's)
        lead = pc.if_else(pc.equal(pc.utf8_length(d), 1), d, pa.scalar("", pa.string()))
    head = pc.if_else(pc.equal(pc.utf8_length(head), 0), lead, head)
    return pc.if_else(has_sep, head, pa.scalar("", pa.string()))


def path_parts(d: pa.Array, separator: str) -> pa.ListArray:
    """PARSE_PATH of each path of ``d`` (no NULLs): the non-empty pieces between separators,
    after the path's first character where that is a separator (DuckDB's: ``/a//b`` is
    ``[/, a, b]``, ``///`` is ``[/]``, the empty path ``[]``)."""
    chars = SEPARATORS[separator]
    lists = pc.split_pattern_regex(d, "[" + re.escape(chars) + "]")
    offs = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    offs = offs - offs[0]
    flat = lists.flatten()
    nonempty = np.asarray(pc.greater(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False), dtype=bool)
    lead = pc.utf8_slice_codeunits(d, 0, 1)
    has_lead = np.asarray(pc.is_in(lead, value_set=pa.array(list(chars))).to_numpy(zero_copy_only=False), dtype=bool)
    n = len(d)
    owner = np.repeat(np.arange(n), np.diff(offs))
    values = pa.concat_arrays([lead.filter(pa.array(has_lead)), flat.filter(pa.array(nonempty))])
    entries = np.concatenate([np.nonzero(has_lead)[0], owner[nonempty]])
    order = np.argsort(entries, kind="stable")  # each path's lead first, then its pieces in order
    counts = np.bincount(entries, minlength=n)
    new_offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=new_offs[1:])
    return pa.ListArray.from_arrays(pa.array(new_offs), values.take(pa.array(order)))
