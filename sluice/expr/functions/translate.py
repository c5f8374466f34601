"""TRANSLATE(s, from, to) with constant ``from`` / ``to``: each code point of ``from`` becomes
the one at its position in ``to`` (its first occurrence decides), those past ``to``'s end are
deleted, as DuckDB's TranslateScalarFunction; CHR(n): the code point ``n`` as a string; ASCII(s):
the code point of the first character (0 for '').

Why code points in NumPy: Arrow has no per-character mapping. The dictionary's UTF-8 bytes are
decoded to one code point per character (lead and continuation bytes combined columnwise),
mapped through a sorted lookup of ``from``, the deleted ones dropped, and encoded back to UTF-8
with new offsets -- once per distinct string, no loop over rows or characters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column
from sluice.errors import PlanError
from sluice.expr.functions.cast import cast_expr
from sluice.expr.functions.registry import register
from sluice.kernels.buffers import string_buffers
from sluice.kernels.checks import fail_if
from sluice.types import INT32, STRING


def decode_utf8(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code points, the byte each starts at) of valid UTF-8 bytes."""
    starts = np.flatnonzero((data & 0xC0) != 0x80)
    if not len(starts):
        return np.zeros(0, np.int64), starts
    b = [data[np.minimum(starts + k, len(data) - 1)].astype(np.int64) for k in range(4)]
    size = np.where(b[0] < 0x80, 1, np.where(b[0] < 0xE0, 2, np.where(b[0] < 0xF0, 3, 4)))
    cp = np.where(size == 1, b[0],
                  np.where(size == 2, ((b[0] & 0x1F) << 6) | (b[1] & 0x3F),
                           np.where(size == 3, ((b[0] & 0x0F) << 12) | ((b[1] & 0x3F) << 6) | (b[2] & 0x3F),
                                    ((b[0] & 0x07) << 18) | ((b[1] & 0x3F) << 12) | ((b[2] & 0x3F) << 6)
                                    | (b[3] & 0x3F))))
    return cp, starts


def encode_utf8(cp: np.ndarray, char_rows: np.ndarray, n: int) -> pa.Array:
    """A string array of ``n`` rows from code points ``cp`` and the row of each (ascending)."""
    size = np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4)))
    first = np.concatenate([[0], np.cumsum(size)])[:-1]
    total = int(size.sum())
    out = np.zeros(total, np.uint8)
    lead = np.where(size == 1, cp, np.where(size == 2, 0xC0 | (cp >> 6),
                                            np.where(size == 3, 0xE0 | (cp >> 12), 0xF0 | (cp >> 18))))
    out[first] = lead
    for k in range(1, 4):  # continuation bytes, the k-th of those that have one
        has = size > k
        shift = 6 * (size[has] - 1 - k)
        out[first[has] + k] = 0x80 | ((cp[has] >> shift) & 0x3F)
    row_bytes = np.bincount(char_rows, weights=size, minlength=n).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(row_bytes)]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def translate_strings(d: pa.Array, source: str, target: str) -> pa.Array:
    """DuckDB's TRANSLATE over each string of ``d`` (NULLs as empty strings)."""
    mapping: dict[int, int] = {}
    for i, ch in enumerate(source):  # the constant's characters, not the rows'
        mapping.setdefault(ord(ch), ord(target[i]) if i < len(target) else -1)
    bufs = string_buffers(d)
    if bufs is None or not mapping:
        return d
    offsets, data = bufs
    cp, starts = decode_utf8(data)
    rows = np.searchsorted(offsets, starts, side="right") - 1
    keys = np.array(sorted(mapping), np.int64)
    values = np.array([mapping[k] for k in keys], np.int64)
    at = np.minimum(np.searchsorted(keys, cp), len(keys) - 1)
    hit = keys[at] == cp
    cp = np.where(hit, values[at], cp)
    keep = cp >= 0
    return encode_utf8(cp[keep], rows[keep], len(d))


def _bind_translate(args, params):
    if args[0].type.kind not in ("string", "null"):
        raise PlanError(f"TRANSLATE needs a string, got {args[0].type}")
    return list(args), STRING


@register("translate", bind=_bind_translate)
def translate(e, args, chunk) -> Column:
    a, = args
    source, target = e.params
    d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
    return Column(a.data, STRING, a.valid, translate_strings(d, source, target))


def _bind_chr(args, params):
    a, = args
    if a.type.kind not in ("int8", "int16", "int32", "null"):  # (DuckDB: INTEGER only, no BIGINT)
        raise PlanError(f"CHR needs an INTEGER, got {a.type}")
    return [cast_expr(a, INT32) if a.type != INT32 else a], STRING


@register("chr", bind=_bind_chr)
def chr_(e, args, chunk) -> Column:
    """CHR(n): the code point ``n`` (DuckDB: an error outside 0 .. 0x10FFFF and for surrogates)."""
    a, = args
    v = a.data.reshape(-1).to(torch.int64)
    bad = (v < 0) | (v > 0x10FFFF) | ((v >= 0xD800) & (v <= 0xDFFF))
    fail_if(bad, "Invalid UTF8 Codepoint", None if a.valid is None else a.valid.reshape(-1))
    uniq, codes = torch.unique(torch.where(bad, torch.zeros_like(v), v), return_inverse=True)
    cp = uniq.cpu().numpy().astype(np.int64)
    text = encode_utf8(cp, np.arange(len(cp)), len(cp))
    return Column(codes.to(torch.int32).reshape(a.data.shape), STRING, a.valid, text)




def _bind_ascii(args, params):
    if args[0].type.kind != "string":
        raise PlanError(f"ASCII needs a string, got {args[0].type}")
    return list(args), INT32


@register("ascii", bind=_bind_ascii)
def ascii_(e, args, chunk) -> Column:
    """ASCII(s): the first character's code point, per distinct string."""
    a, = args
    d = a.dictionary if a.dictionary.type == pa.string() else a.dictionary.cast(pa.string())
    first = np.zeros(len(d), np.int64)
    bufs = string_buffers(d)
    if bufs is not None:
        offsets, data = bufs
        cp, starts = decode_utf8(data)
        nonempty = offsets[1:] > offsets[:-1]
        first[nonempty] = cp[np.searchsorted(starts, offsets[:-1][nonempty])]
    per = torch.from_numpy(first.astype(np.int32)).to(a.data.device)
    return Column(per[a.data.long()], INT32, a.valid)
