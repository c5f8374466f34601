"""String functions with constant parameters, computed once per dictionary entry.

A string column is int32 codes into a dictionary of distinct strings, so a function of the
string alone (STARTS_WITH(s, 'x'), REPLACE(s, 'a', 'b'), SPLIT_PART(s, ',', 2)...) runs once
per dictionary entry with Arrow's vectorised kernels; the caller gathers the per-entry results
by code (booleans and integers) or keeps the codes over the new dictionary (strings). The
semantics follow DuckDB's: positions count characters, 1-based; SPLIT_PART out of range is
''; LPAD/RPAD cut strings longer than the width; REGEXP_REPLACE replaces the first match
unless the 'g' option is given.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.chunk import string_buffers

#: name -> kind of result: "string", "bool" or "int".
RESULT = {
    "starts_with": "bool", "ends_with": "bool", "contains": "bool", "regexp_matches": "bool",
    "strpos": "int",
    "replace": "string", "split_part": "string", "lpad": "string", "rpad": "string",
    "regexp_replace": "string", "reverse": "string", "left": "string", "right": "string",
    "regexp_extract": "string",
}


def per_entry(d: pa.Array, name: str, params: tuple) -> pa.Array:
    """The function's value for every string of ``d`` (no NULLs in ``d``)."""
    if name == "starts_with":
        return pc.starts_with(d, pattern=params[0])
    if name == "ends_with":
        return pc.ends_with(d, pattern=params[0])
    if name == "contains":
        return pc.match_substring(d, pattern=params[0])
    if name == "regexp_matches":
        return pc.match_substring_regex(d, pattern=params[0])
    if name == "strpos":
        return _char_position(d, params[0])
    if name == "replace":
        return pc.replace_substring(d, pattern=params[0], replacement=params[1])
    if name == "regexp_extract":
        pattern, group = params
        named, groups = _named_groups(pattern)
        if not 0 <= group <= groups:
            from sluice.errors import PlanError
            raise PlanError(f"REGEXP_EXTRACT group {group}: the pattern has {groups} group(s)")
        got = pc.struct_field(pc.extract_regex(d, pattern=named), [group])
        return got.fill_null("")
    if name == "regexp_replace":
        pattern, replacement, every = params
        return pc.replace_substring_regex(d, pattern=pattern, replacement=replacement,
                                          max_replacements=None if every else 1)
    if name == "split_part":
        return _split_part(d, params[0], params[1])
    if name in ("lpad", "rpad"):
        width, fill = params
        cut = pc.utf8_slice_codeunits(d, 0, width)
        pad = pc.utf8_lpad if name == "lpad" else pc.utf8_rpad
        return pad(cut, width=width, padding=fill)
    if name == "reverse":
        return pc.utf8_reverse(d)
    if name == "left":
        return pc.utf8_slice_codeunits(d, 0, params[0])  # a negative length drops from the end
    if name == "right":
        n = params[0]  # the last n characters; a negative n drops the first -n
        return pc.utf8_slice_codeunits(d, 0, 0) if n == 0 else pc.utf8_slice_codeunits(d, -n)
    raise AssertionError(f"string function {name}")


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
