"""DuckDB's path functions over a string's dictionary entries (``parse_filename``,
``parse_dirname``, ``parse_dirpath``): the part of a path before or after its first or last
separator, with Arrow's RE2 over each distinct string, never per row. Registered as the
per-entry string function ``path_part`` (:data:`sluice.expr.functions.strings.PER_ENTRY`)."""

from __future__ import annotations

import re

import pyarrow as pa
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
