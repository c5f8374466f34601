"""DuckDB's BIT strings over Arrow text arrays of '0' / '1' (vectorised over the array's values).

sluice keeps a BIT value as its text ('0101'), in a string column's dictionary: that is how
DuckDB writes a BIT column to Parquet (a UTF8 column of that text) and how it casts one to
VARCHAR, so scans, joins, grouping, DISTINCT, LIKE and concatenation need nothing of their own
and agree with DuckDB, which casts BIT to VARCHAR in those places. What differs is done here:
reading text as BIT (only 0 and 1), the integer casts, the bit functions, and DuckDB's own
binary form of a BIT (a byte holding the padding, then the bits packed, padded with 1s in
front), which is how DuckDB hands a BIT to Arrow.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _chars(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated bytes and the int64 offsets of a string array without NULLs."""
    texts = texts.cast(pa.large_string()) if texts.type != pa.large_string() else texts
    offs = np.frombuffer(texts.buffers()[1], dtype=np.int64, count=len(texts) + 1 + texts.offset)[texts.offset:]
    data = texts.buffers()[2]
    chars = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return chars[offs[0]:offs[-1]], offs - offs[0]


def _strings(chars: np.ndarray, offs: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.large_string(), len(offs) - 1, [None, pa.py_buffer(offs.astype(np.int64)),
                                 pa.py_buffer(np.ascontiguousarray(chars, dtype=np.uint8))]).cast(pa.string())


def invalid_bit_text(texts: pa.Array) -> str | None:
    """The first character that is neither 0 nor 1 in ``texts`` (None: all are bit strings)."""
    bad = pc.fill_null(pc.match_substring_regex(texts, "[^01]"), False)
    if not pc.any(bad).as_py():
        return None
    first = texts.filter(bad)[0].as_py()
    return next(c for c in first if c not in "01")


def text_to_bits(texts: pa.Array) -> pa.Array:
    """Bit-string text as DuckDB reads it ('' is the one bit '0'); validate with
    :func:`invalid_bit_text` first."""
    return pc.if_else(pc.equal(pc.utf8_length(texts), 0), pa.scalar("0"), texts)


def bits_to_blob(bits: pa.Array) -> pa.Array:
    """DuckDB's binary form of each BIT value: a byte with the number of padding bits, then the
    bits packed most significant first, the padding 1s in front."""
    valid = bits.is_valid()
    bits = bits.fill_null("0")
    n = len(bits)
    length = pc.utf8_length(bits).to_numpy(zero_copy_only=False).astype(np.int64)
    pad = (8 - length % 8) % 8
    full = pc.binary_join_element_wise(pc.binary_repeat(pa.scalar("1"), pa.array(pad)), bits, "")
    chars, _ = _chars(full)
    packed = np.packbits(chars - ord("0"))
    nbytes = (length + pad) // 8
    out_offs = np.zeros(n + 1, np.int64)
    np.cumsum(nbytes + 1, out=out_offs[1:])
    out = np.empty(int(out_offs[-1]), np.uint8)
    out[out_offs[:-1]] = pad
    out[np.arange(len(packed)) + np.repeat(np.arange(n), nbytes) + 1] = packed
    blob = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(out_offs), pa.py_buffer(out)]).cast(pa.binary())
    return pc.if_else(valid, blob, pa.scalar(None, pa.binary()))


def integers_to_bits(values: np.ndarray, width: int) -> pa.Array:
    """Integers (their two's complement, ``width`` bits) as bit strings."""
    v = values.astype(np.uint64)
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64)
    chars = ((v[:, None] >> shifts) & np.uint64(1)).astype(np.uint8) + ord("0")
    return _strings(chars.reshape(-1), np.arange(len(values) + 1, dtype=np.int64) * width)


def bits_to_unsigned(bits: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Bit strings as unsigned 64-bit values, and per value whether it is longer than ``width``
    bits (it does not fit; its value is then 0)."""
    bits = bits.fill_null("0")
    length = pc.utf8_length(bits).to_numpy(zero_copy_only=False).astype(np.int64)
    too_long = length > width
    short = pc.if_else(pa.array(too_long), pa.scalar("0"), bits)
    padded = pc.utf8_lpad(short, 64, "0")
    chars, _ = _chars(padded)
    words = np.packbits((chars - ord("0")).reshape(-1, 64), axis=1)
    return words.view(">u8").reshape(-1).astype(np.uint64), too_long


def bit_counts(bits: pa.Array) -> pa.Array:
    """The 1s of each bit string."""
    return pc.count_substring(bits, "1")


def bitwise(a: pa.Array, b: pa.Array | None, op: str) -> tuple[pa.Array, bool]:
    """``a & b``, ``a | b``, ``xor(a, b)`` or ``~a`` (``b`` None) row by row, and whether some
    pair differs in length (DuckDB's error)."""
    a = a.fill_null("0")
    ca, offs = _chars(a)
    x = ca - ord("0")
    if op == "~":
        return _strings((1 - x) + ord("0"), offs), False
    b = b.fill_null("0")
    if not pc.all(pc.equal(pc.utf8_length(a), pc.utf8_length(b))).as_py():
        return a, True
    y = _chars(b)[0] - ord("0")
    r = {"&": x & y, "|": x | y, "xor": x ^ y}[op]
    return _strings(r + ord("0"), offs), False


def shifted(bits: pa.Array, n: int, left: bool) -> pa.Array:
    """Each bit string shifted by ``n`` (>= 0) places, its length kept, zeros shifted in."""
    length = pc.utf8_length(bits)
    k = pc.min_element_wise(length, pa.scalar(n, length.type))
    zeros = pc.binary_repeat(pa.scalar("0"), k)
    if left:
        return pc.binary_join_element_wise(pc.utf8_slice_codeunits(bits, n), zeros, "")
    rev = pc.utf8_reverse(bits)
    return pc.utf8_reverse(pc.binary_join_element_wise(pc.utf8_slice_codeunits(rev, n), zeros, ""))


def bit_positions(bits: pa.Array, pattern: str) -> pa.Array:
    """The 1-based position of ``pattern``'s first occurrence in each bit string (0: none)."""
    return pc.add(pc.find_substring(bits, pattern), 1)


def bits_from_positions(starts: np.ndarray, lengths: np.ndarray, positions: np.ndarray,
                        owners: np.ndarray) -> pa.Array:
    """BITSTRING_AGG's results: per group a bit string of ``lengths[g]`` zeros with a 1 at each
    ``positions[i]`` (0-based) of group ``owners[i]``."""
    offs = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offs[1:])
    chars = np.full(int(offs[-1]), ord("0"), np.uint8)
    chars[offs[owners] + positions] = ord("1")
    return _strings(chars, offs)


def blob_to_bits(blob: pa.Array) -> pa.Array:
    """:func:`bits_to_blob`'s inverse: DuckDB's binary form of BIT values as their text."""
    valid = blob.is_valid()
    blob = blob.fill_null(b"\x00\x00").cast(pa.large_binary())
    n = len(blob)
    offs = np.frombuffer(blob.buffers()[1], dtype=np.int64, count=n + 1 + blob.offset)[blob.offset:]
    data = np.frombuffer(blob.buffers()[2], dtype=np.uint8)[offs[0]:offs[-1]]
    offs = offs - offs[0]
    pad = data[offs[:-1]].astype(np.int64)
    keep = np.ones(len(data), bool)
    keep[offs[:-1]] = False
    bits = np.unpackbits(data[keep])
    nbits = (np.diff(offs) - 1) * 8
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(nbits, out=starts[1:])
    drop = np.zeros(len(bits) + 1, np.int64)  # the padding bits at each value's front
    np.add.at(drop, starts[:-1], 1)
    np.add.at(drop, starts[:-1] + pad, -1)
    mask = np.cumsum(drop[:-1]) == 0
    length = nbits - pad
    out_offs = np.zeros(n + 1, np.int64)
    np.cumsum(length, out=out_offs[1:])
    text = _strings(bits[mask] + ord("0"), out_offs)
    return pc.if_else(valid, text, pa.scalar(None, pa.string()))

