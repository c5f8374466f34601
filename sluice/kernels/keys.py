"""Dense integer codes for (multi-column) keys, shared by aggregation and joins.

Group-by: every key column becomes codes 0..k-1 (+1 slot for NULL); columns are combined by
mixed radix while the product of cardinalities fits in 62 bits, re-densified with
``torch.unique`` otherwise. Joins code both sides against the build side's ranges (or its
sorted distinct values): :mod:`sluice.kernels.join_keys`, with the helpers here they share.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, lookup, positions, to_device, unify_dictionaries
from sluice.errors import DataError
from sluice.kernels.checks import fail_if
from sluice.kernels.nested_keys import equality_keys, key_column
from sluice.kernels.values import (dictionary_rank, float_from_order_key, float_order_key,  # noqa: F401 - re-exported
                                    to_type)
from sluice.types import LType

#: Largest code range we address directly (bincount / direct tables) relative to row count.
DIRECT_RANGE_FACTOR = 4
#: ... and in absolute terms: a direct table of 2**20 int64 entries (8 MiB) always beats
#: sorting and binary search (TPC-H Q22 probes 1.5M keys into a 150K range this way).
DIRECT_RANGE_MIN = 1 << 20
_LIMIT = 1 << 62
GOLDEN = -0x61C8864680B583EB  # 0x9E3779B97F4A7C15 (2**64 / golden ratio) as a signed int64


def packed_bits(distinct: torch.Tensor, nbits: int) -> torch.Tensor:
    """A little-endian packed bitmap (bit i of byte j: value 8j + i) of ``nbits`` bits with the
    bits of the ``distinct`` int64 values in [0, nbits) set."""
    # distinct values set distinct bits: their sum per byte is their OR
    bit = torch.ones_like(distinct).bitwise_left_shift_(distinct & 7).to(torch.uint8)
    return torch.zeros((nbits + 7) // 8, dtype=torch.uint8, device=distinct.device).index_add_(0, distinct >> 3, bit)


def bit_set(byte: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Whether bit ``x & 7`` of each ``byte`` (value x's byte of a :func:`packed_bits`) is set."""
    return byte.bitwise_right_shift((x & 7).to(torch.uint8)).bitwise_and_(1).bool()


def hash_slot(v: torch.Tensor, log2: int) -> torch.Tensor:
    """A slot in [0, 2**log2) per int64 key: Fibonacci hashing, the product's top bits."""
    return ((v * GOLDEN) >> (64 - log2)) & ((1 << log2) - 1)


def sortable(col: Column, t: LType | None = None) -> torch.Tensor:
    """Values as a tensor whose order and equality match SQL's (decimals share scale; floats
    as :func:`float_order_key`)."""
    col = key_column(col)  # a nested value: its order key (kernels/nested_keys.py)
    if col.type.kind == "string":
        d, (codes,) = unify_dictionaries([col])
        return lookup(to_device(dictionary_rank(d), codes.device), codes)
    if col.type.kind == "bool":
        return col.data.to(torch.int64)
    if t is not None and t != col.type and t.is_numeric:
        v = to_type(col, t)
    else:
        v = col.data
    return float_order_key(v) if v.is_floating_point() else v


#: What a key value outside the range its column's statistics gave means (``known`` ranges).
OUTSIDE_STATISTICS = ("a GROUP BY key value lies outside its column's min/max statistics in the Parquet file "
                      "(the file's statistics are wrong)")


def _int_codes(v: torch.Tensor, known: tuple[int, int] | None = None,
               valid: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
    """Codes 0..k-1 of integer values ``v`` and k. With ``known`` (lo, hi) -- the key's range
    from statistics, decided when lowering (:mod:`sluice.physical.key_ranges`) -- and a range
    small enough to address directly, the codes are the values less lo and nothing is read
    back from the device; each valid value is checked to lie in the range (a deferred check on
    a GPU: a lying file fails the query, and the codes are clamped meanwhile so no kernel
    indexes outside its table)."""
    n = v.numel()
    if n == 0:
        return v.to(torch.int64), 1
    if known is not None and not v.is_floating_point():
        lo_i, hi_i = known
        rng = hi_i - lo_i + 1
        if 0 < rng <= max(DIRECT_RANGE_FACTOR * n, DIRECT_RANGE_MIN):
            codes = v.to(torch.int64) - lo_i
            fail_if((codes < 0) | (codes >= rng), OUTSIDE_STATISTICS, valid, DataError)
            return codes.clamp_(0, rng - 1), rng
    if v.is_floating_point():
        uniq, inv = torch.unique(float_order_key(v), return_inverse=True)
        return inv, int(uniq.numel())
    lo, hi = torch.aminmax(v)
    lo_i, hi_i = int(lo), int(hi)
    rng = hi_i - lo_i + 1
    if rng <= max(DIRECT_RANGE_FACTOR * n, DIRECT_RANGE_MIN):
        return (v.to(torch.int64) - lo_i), rng
    uniq, inv = torch.unique(v, return_inverse=True)
    return inv, int(uniq.numel())


def column_codes(col: Column, n: int, known: tuple[int, int] | None = None) -> tuple[torch.Tensor, int]:
    """Codes 0..k-1 of one key column (NULL gets code k-1 when the column has nulls): int32
    where they come so (a dictionary's codes), else int64. ``known``: the column's (lo, hi)
    from statistics (see :func:`_int_codes`)."""
    col = key_column(col.expand(n))
    if col.type.kind == "string":
        d, (codes,) = unify_dictionaries([col])
        k = max(len(d), 1)  # codes index the deduplicated dictionary
    elif col.type.kind == "bool":
        codes, k = col.data.to(torch.int32), 2
    else:
        codes, k = _int_codes(col.data, known, col.valid)
    if col.valid is not None:
        codes = torch.where(col.valid, codes, torch.full_like(codes, k))
        k += 1
    return codes, k


#: Code ranges up to this size are counted by bincount on a CPU (past it, its random writes
#: into a large count array cost more than marking: 100k codes of 1M rows, 6.4 against 6.0 ms).
COUNTED_CODES = 4096


def _densify(codes: torch.Tensor, card: int) -> tuple[torch.Tensor, int]:
    """Group ids 0..g-1 (int64) for ``codes`` in 0..card-1, numbered in code order."""
    n = codes.numel()
    if card <= min(n, COUNTED_CODES) and codes.device.type == "cpu":
        # Few codes on a CPU: counted (one pass, no int64 copy to index with); every code
        # present -- flags, a year -- and the codes are the ids (1M codes of 2-60 values:
        # 4.5-5.2 -> 0.8-2.5 ms). (On a GPU bincount waits for the device: marked as below.)
        counts = torch.bincount(codes, minlength=card)
        if bool(counts.all()):
            return codes.long(), card
        remap = torch.cumsum(counts > 0, 0, dtype=torch.int64) - 1
        return remap.index_select(0, codes), int(remap[-1]) + 1
    if card <= n:
        # Few codes (a chunk's flags, a date's year): mark, number with the -1 folded in, and one
        # gather straight to int64 (q01's two flags, 114k rows: 0.33 -> 0.2 ms a chunk).
        present = torch.zeros(card, dtype=torch.bool, device=codes.device).index_fill_(0, codes.long(), True)
        remap = torch.cumsum(present, 0, dtype=torch.int64) - 1
        return remap.index_select(0, codes), int(remap[-1]) + 1
    if card <= max(DIRECT_RANGE_FACTOR * n, DIRECT_RANGE_MIN):
        # Mark the codes present, number them in order: a prefix sum over the code range
        # (int32 while it fits: half the memory traffic of int64, measured 2x faster with
        # marking instead of bincount on 15M codes in a 60M range).
        # (index_fill_: half the time of a boolean index_put, which handles duplicates as writes)
        present = torch.zeros(card, dtype=torch.bool, device=codes.device).index_fill_(0, codes.long(), True)
        dt = torch.int32 if card < (1 << 31) else torch.int64
        remap = torch.cumsum(present, 0, dtype=dt)
        g = int(remap[-1])
        return (remap.index_select(0, codes) - 1).to(torch.int64), g
    uniq, inv = torch.unique(codes, return_inverse=True)
    return inv, int(uniq.numel())


class GroupingState:
    """What one aggregation learns across its chunks: the determining-key shortcut is dropped
    after it has failed twice (ClickBench q16-q18 group by UserID and SearchPhrase: every
    chunk coded UserID, gathered, compared the phrases, failed, and coded UserID again)."""

    MISSES = 2

    def __init__(self) -> None:
        self.misses = 0

    @property
    def shortcut(self) -> bool:
        return self.misses < self.MISSES


def group_ids(cols: list[Column], n: int, device: torch.device | None = None,
              determining: bool = True, state: GroupingState | None = None,
              known: tuple | None = None) -> tuple[torch.Tensor, int]:
    """Group id (0..g-1) of each of ``n`` rows, and g. With no key columns: one group, its
    ids a zero broadcast on ``device`` (no memory, nothing to copy to a GPU: a host tensor of
    n zeros crossed PCIe per chunk of every keyless aggregate). ``determining=False`` skips
    the determining-key shortcut where it cannot hold: (group, value) pairs of a DISTINCT
    aggregate, whose value varies within a group (ClickBench q05: 164 of 440 ms spent
    finding that out). ``known``: per key column, its (lo, hi) from statistics or None (the
    range is then not read back from the device: :func:`_int_codes`)."""
    if not cols:
        return torch.zeros(1, dtype=torch.int64, device=device).expand(n), 1
    known = tuple(known) if known is not None else (None,) * len(cols)
    # (a STRUCT of scalar fields: its fields' columns, grouped as any multi-column key)
    cols, src = equality_keys(cols, n)
    known = tuple(known[i] if src.count(i) == 1 else None for i in src)
    if determining and (state is None or state.shortcut) and len(cols) > 1 and \
            any(c.type.kind == "string" for c in cols):
        got = _by_determining_key(cols, n, known)
        if got is not None:
            return got
        if state is not None:
            state.misses += 1
    return _combined_ids(cols, n, known)


def _combined_ids(cols: list[Column], n: int, known: tuple | None = None) -> tuple[torch.Tensor, int]:
    """The groups of every combination of the ``cols``' codes."""
    known = known or (None,) * len(cols)
    combined, card = column_codes(cols[0], n, known[0])
    for c, rng in zip(cols[1:], known[1:]):
        codes, k = column_codes(c, n, rng)
        if card * k >= _LIMIT:
            combined, card = _densify(combined, card)
        # int32 while the combined codes fit: half the memory traffic.
        dt = torch.int32 if card * k < (1 << 31) else torch.int64
        combined = combined.to(dt) * k + codes.to(dt)
        card *= k
    return _densify(combined, card)


_EXACT_KINDS = frozenset({"bool", "int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz",
                          "interval"})


def _by_determining_key(cols: list[Column], n: int, known: tuple | None = None) -> tuple[torch.Tensor, int] | None:
    """The groups of one integer-like key column, when every other key is constant within
    each of them (TPC-H Q10 groups by c_custkey and six customer and nation columns, Q18 by
    o_orderkey and four more): the string keys are then never hashed. Tried where a string key
    is among the others (what costs); the column with the most groups leads. None when some
    other key varies within a group (then the keys are combined as usual).

    Failing that, the integer-like keys together with the string key of the largest
    dictionary lead (TPC-DS q04/q11/q74 group by a customer's id, five more of its strings
    and a year: the id and the year decide the rest), the other strings checked as before."""
    best = None
    known = known or (None,) * len(cols)
    exact = [i for i, c in enumerate(cols) if c.type.kind in _EXACT_KINDS and c.wide is None]
    for i in exact:
        ids, g = _densify(*column_codes(cols[i], n, known[i]))
        if best is None or g > best[1]:
            best = (ids, g, {i})
    if best is not None and _others_constant(cols, n, *best):
        return best[0], best[1]
    strings = [i for i, c in enumerate(cols) if c.type.kind == "string" and c.wide is None]
    if not strings or len(exact) + 1 >= len(cols):
        return None
    widest = max(strings, key=lambda i: len(cols[i].dictionary))
    ids, g = _combined_ids([cols[widest]] + [cols[i] for i in exact], n, (None,) + tuple(known[i] for i in exact))
    if _others_constant(cols, n, ids, g, {widest, *exact}):
        return ids, g
    return None


def _others_constant(cols: list[Column], n: int, ids: torch.Tensor, g: int, lead: set[int]) -> bool:
    """Whether every key outside ``lead`` is constant within each group of ``ids``."""
    rep = first_rows(ids, g).index_select(0, ids)  # each row's group's first row
    return all(_constant_within(c.expand(n), rep) for j, c in enumerate(cols) if j not in lead)


def _constant_within(c: Column, rep: torch.Tensor) -> bool:
    """Whether every row of ``c`` equals (NULL with NULL) its group's first row ``rep``."""
    if c.wide is not None or c.type.is_float:
        return False  # -0.0 / NaN group by their own rules: not worth repeating here
    valid = c.valid
    if valid is not None and not torch.equal(valid.index_select(0, rep), valid):
        return False
    same = c.data.index_select(0, rep) == c.data
    if valid is not None:
        same |= ~valid
    if c.type.kind != "string":
        return bool(same.all())
    diff = positions(~same)  # equal codes are equal strings; others are compared
    if diff.numel() == 0:
        return True
    # A few of them first: a key that varies mostly shows it at once (q04 compared a
    # million strings to learn that a customer's id is not constant within a year).
    for part in (diff[:256], diff[256:]):
        if part.numel() == 0:
            continue
        a = c.data.index_select(0, part).cpu().numpy().astype(np.int64)
        b = c.data.index_select(0, rep.index_select(0, part)).cpu().numpy().astype(np.int64)
        if not pc.all(pc.equal(c.dictionary.take(pa.array(a)), c.dictionary.take(pa.array(b)))).as_py():
            return False
    return True


def first_rows(ids: torch.Tensor, groups: int) -> torch.Tensor:
    """Index of the first row of each group."""
    n = ids.numel()
    out = torch.full((groups,), n, dtype=torch.int64, device=ids.device)
    return out.scatter_reduce_(0, ids, torch.arange(n, device=ids.device), reduce="amin")


# --------------------------------------------------------------------- exact sums


_MASK32 = (1 << 32) - 1


def split_hi_lo(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """v = hi * 2**32 + lo with 0 <= lo < 2**32; sums of either part over < 2**31 rows fit."""
    v = v.to(torch.int64)
    return v >> 32, v & _MASK32


def normalize_hi_lo(hi: torch.Tensor, lo: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return hi + (lo >> 32), lo & _MASK32


def hi_lo_fits_int64(hi: torch.Tensor) -> bool:
    if hi.numel() == 0:
        return True
    lo, hi_max = torch.aminmax(hi)
    return int(lo) >= -(1 << 31) and int(hi_max) < (1 << 31) - 1
