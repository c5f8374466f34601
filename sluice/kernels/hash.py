"""A value hash: equal values get equal 64-bit hashes, whatever chunk, dictionary or device
they come from (docs/design.md §4). It is the one partitioner of spill partitions (and later of
exchanges and Bloom filters); it decides where rows go, never whether two rows are equal.

Integers, decimals (as scaled integers of one common scale), dates and booleans hash their
int64 value; floats their canonical bit pattern (-0.0 as 0.0, one NaN); strings their bytes,
computed once per dictionary entry on the host and gathered by code. NULL hashes to a
constant. Several key columns combine in order. The mixer is splitmix64's finaliser in
wrapping int64 arithmetic, identical on CPU and CUDA.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, DictionaryCache, host_tensor, lookup, string_buffers
from sluice.kernels.values import to_type
from sluice.types import LType
from sluice.errors import UnsupportedError

_NULL_HASH = 0x2545F4914F6CDD1D
_GOLDEN = -0x61C8864680B583EB  # 0x9E3779B97F4A7C15 as a signed int64
_K2 = -0x3D4D51C2D82B14B1  # 0xC2B2AE3D27D4EB4F (xxhash prime 2)


def _srl(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """splitmix64 finaliser: a bijection of int64 that spreads every input bit."""
    x = x ^ _srl(x, 30)
    x = x * -0x40A7B892E31B1A47  # 0xBF58476D1CE4E5B9
    x = x ^ _srl(x, 27)
    x = x * -0x6B2FB644ECCEEE15  # 0x94D049BB133111EB
    return x ^ _srl(x, 31)


def _value_bits(col: Column, t: LType | None) -> torch.Tensor:
    """int64 tensor whose equality is SQL equality of ``col``'s values (as type ``t``)."""
    if col.type.is_nested:
        raise UnsupportedError(f"hashing (a join, grouping or DISTINCT key) a {col.type.kind.upper()} value")
    if col.type.kind == "string":
        return lookup(_string_hashes(col.dictionary).to(col.data.device), col.data)
    if t is not None and t != col.type and t.is_numeric and col.type.is_numeric:
        data = to_type(col, t)
    else:
        data = col.data
    if data.is_floating_point():
        d = data.to(torch.float64)
        d = torch.where(d == 0, torch.zeros_like(d), d)  # -0.0 == 0.0
        d = torch.where(torch.isnan(d), torch.full_like(d, float("nan")), d)
        return d.view(torch.int64)
    return data.to(torch.int64)


def hash_columns(cols: list[Column], n: int, types: list[LType] | None = None) -> torch.Tensor:
    """Per-row 64-bit hash of the key ``cols`` (each converted to ``types[i]`` if given)."""
    h = None
    for i, c in enumerate(cols):
        c = c.expand(n)
        v = _value_bits(c, types[i] if types else None)
        if c.valid is not None:
            v = torch.where(c.valid, v, torch.full_like(v, _NULL_HASH))
        h = v * _GOLDEN if h is None else (h ^ _srl(h, 29)) * _K2 + v * _GOLDEN
    if h is None:
        return torch.zeros(n, dtype=torch.int64)
    # Multiplication moves entropy to the high bits, which partition_of reads first; one
    # xor-shift-multiply round mixes them back down for deeper recursion levels.
    return (h ^ _srl(h, 32)) * _K2


def partition_of(h: torch.Tensor, bits: int, level: int = 0) -> torch.Tensor:
    """Partition number in [0, 2**bits) from the hash bits used at recursion ``level``:
    level 0 takes the top bits, each deeper level the next ones (recursive repartitioning)."""
    shift = 64 - bits * (level + 1)
    if shift < 0:
        shift = (bits * level) % (64 - bits)  # past 64 bits: reuse (only balance suffers)
    return _srl(h, shift) & ((1 << bits) - 1)


_STRINGS = DictionaryCache()


def _string_hashes(d: pa.Array) -> torch.Tensor:
    """Hash of each dictionary entry's bytes (cached per dictionary object)."""
    return _STRINGS.get(d, string_hashes)


def string_hashes(d: pa.Array) -> torch.Tensor:
    """64-bit hash of each string's bytes: a polynomial over its 8-byte words (all of them, so
    strings that differ anywhere spread), vectorised over the Arrow buffers, O(bytes / 8)."""
    bufs = string_buffers(d)
    if bufs is None:
        return torch.zeros(0, dtype=torch.int64)
    offsets, data = bufs
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    # Every byte offset as the start of an (unaligned, little-endian) 8-byte word.
    words = np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    nwords = np.maximum((lengths + 7) // 8, 1)
    first = np.cumsum(nwords) - nwords                    # index of each string's first word
    j = np.arange(int(nwords.sum()), dtype=np.int64) - np.repeat(first, nwords)  # word number in its string
    w = words[np.repeat(starts - 8 * first, nwords) + 8 * np.arange(len(j), dtype=np.int64)]
    # Bytes past the end of the string in its last word are zeroed.
    last = first + nwords - 1
    left = (lengths - 8 * (nwords - 1)).astype(np.uint64)
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    w[last] &= np.where(left >= 8, full, (np.uint64(1) << (np.minimum(left, 7) * np.uint64(8))) - np.uint64(1))
    powers = np.cumprod(np.full(int(nwords.max()), np.uint64(0x9E3779B97F4A7C15), dtype=np.uint64),
                        dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = np.add.reduceat(w * powers[j], first)
    return mix64(host_tensor(h.view(np.int64)) + host_tensor(lengths) * _K2)
