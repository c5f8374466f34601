"""Dictionary-encode a large string array in parallel, cache-sized pieces.

Arrow's ``dictionary_encode`` is one thread over one hash table: at tens of millions of
distinct strings the table outgrows the caches and every probe is a memory miss (SF 10
``select distinct l_comment``: 60 M strings, ~730 ns each, two thirds of the query). Here the
strings are first split by a cheap hash of their bytes into pieces of about 128 K strings,
each piece is encoded on its own (a table that fits in cache, the pieces spread over the
compute threads: Arrow releases the GIL), and the pieces' dictionaries are concatenated. The
cheap hash only decides which piece a string goes to: equal strings always land in the same
piece, so the dictionaries of different pieces never share an entry and the result is exact
whatever the hash's quality (a skewed hash only makes one piece bigger, i.e. slower).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.kernels.buffers import concat_strings, host_tensor, string_buffers
from sluice.kernels.parallel import compute_pool

PARALLEL_MIN = 1 << 21   # below this, one Arrow call is as fast (its table still fits in cache)
PIECE_ROWS = 1 << 17     # strings per piece
TAKE_ROWS_MIN = 256      # strings a take from one array for one piece moves at least, on average

def encode_strings(arr: pa.Array) -> tuple[pa.Array, torch.Tensor]:
    """(dictionary without repeats, int32 code of each element) of a string array without
    NULLs. The dictionary's order is unspecified."""
    return encode_string_list([arr])


def encode_string_list(arrs: list[pa.Array]) -> tuple[pa.Array, torch.Tensor]:
    """:func:`encode_strings` of the arrays' concatenation, without making it: each piece is
    taken from every array in turn (its strings lie in one run of the stable order within each
    array), so only the pieces (small) and their dictionaries are copied. DISTINCT over SF 10
    l_comment's 59 pages concatenated 1.6 GB of strings first and then took every one of them
    into its piece: two fresh buffers of the whole input, paid for in page faults."""
    arrs = [a for a in arrs if len(a)] or arrs[:1]
    n = sum(len(a) for a in arrs)
    if n < max(PARALLEL_MIN, 1):
        enc = pc.dictionary_encode(arrs[0] if len(arrs) == 1 else concat_strings(arrs))
        return enc.dictionary, _indices(enc)
    pieces, order = _pieces(arrs, n)
    results = compute_pool().map(lambda i: _maybe(pc.dictionary_encode, pieces(i)), range(pieces.count))
    return _assemble(list(results), order, n)


def count_distinct_strings(arrs: list[pa.Array]) -> int:
    """The number of distinct strings in the arrays together (no NULLs): the pieces of
    :func:`encode_string_list`, each deduplicated on its own, counted. COUNT(DISTINCT x) needs
    no codes and no dictionary: assembling them (a scatter of every string's code and a copy of
    every distinct string) was a third of the encoding of SF 10 l_comment."""
    arrs = [a for a in arrs if len(a)]
    n = sum(len(a) for a in arrs)
    if n < PARALLEL_MIN:
        return len(pc.unique(concat_strings(arrs))) if n else 0
    pieces, _ = _pieces(arrs, n)
    return sum(compute_pool().map(lambda i: _maybe(lambda p: len(pc.unique(p)), pieces(i)) or 0,
                                  range(pieces.count)))


def unique_strings(arrs: list[pa.Array]) -> pa.Array:
    """The distinct strings of the arrays together (no NULLs), in no particular order: each
    piece of :func:`encode_string_list` deduplicated on its own, without codes."""
    arrs = [a for a in arrs if len(a)]
    n = sum(len(a) for a in arrs)
    if n < PARALLEL_MIN:
        return pc.unique(concat_strings(arrs)) if n else pa.array([], pa.string())
    pieces, _ = _pieces(arrs, n)
    out = [u for u in compute_pool().map(lambda i: _maybe(pc.unique, pieces(i)), range(pieces.count))
           if u is not None]
    return concat_strings(out)


def _maybe(f, arr: pa.Array | None):
    return None if arr is None else f(arr)


class _Pieces:
    """The strings of piece i (an array, None when empty), taken from every array in turn."""

    def __init__(self, arrs: list[pa.Array], order: np.ndarray, counts: list[int]):
        self.arrs, self.order, self.counts, self.count = arrs, order, counts, len(counts)
        self.starts = np.cumsum([0] + counts[:-1]).tolist()
        self.offs = np.cumsum([0] + [len(a) for a in arrs])

    def __call__(self, i: int) -> pa.Array | None:
        if self.counts[i] == 0:
            return None
        mine = self.order[self.starts[i]: self.starts[i] + self.counts[i]]  # increasing: stable within the piece
        cuts = np.searchsorted(mine, self.offs)
        arrs, offs = self.arrs, self.offs
        parts = [arrs[a].take(pa.array(mine[cuts[a]:cuts[a + 1]] - offs[a]))
                 for a in range(len(arrs)) if cuts[a + 1] > cuts[a]]
        return parts[0] if len(parts) == 1 else concat_strings(parts)


def _pieces(arrs: list[pa.Array], n: int) -> tuple[_Pieces, torch.Tensor]:
    """The strings split by :func:`_piece_of` into pieces of about PIECE_ROWS, and the stable
    order that lists them piece by piece."""
    pieces = 1 << max(1, int(np.ceil(np.log2(n / PIECE_ROWS))))
    if len(arrs) > 1 and n < TAKE_ROWS_MIN * pieces * len(arrs):
        arrs = [concat_strings(arrs)]  # many small arrays: a take from each per piece costs more
    piece = torch.cat([_piece_of(a, pieces) for a in arrs])
    order = torch.argsort(piece, stable=True)
    counts = torch.bincount(piece, minlength=pieces).tolist()
    return _Pieces(arrs, order.numpy(), counts), order


def _assemble(results: list, order: torch.Tensor, n: int) -> tuple[pa.Array, torch.Tensor]:
    """The pieces' dictionaries as one, and each string's code (``order``: the strings by piece)."""
    dicts, local, base = [], [], 0
    for enc in results:
        if enc is None:
            continue
        local.append(_indices(enc) + base)
        base += len(enc.dictionary)
        dicts.append(enc.dictionary)
    codes = torch.empty(n, dtype=torch.int32)
    codes[order] = torch.cat(local)
    return concat_strings(dicts), codes


def _indices(enc: pa.DictionaryArray) -> torch.Tensor:
    return host_tensor(np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int32))


BLOCK = 1 << 14          # strings hashed per step: temporaries that stay in cache (1 << 20: 8 MiB
                         # each, 0.33 s per million l_comment strings against 0.04)


def _piece_of(arr: pa.Array, pieces: int) -> torch.Tensor:
    """Piece number of each string (bits 40 and up of :func:`piece_hashes`)."""
    return piece_hashes(arr).bitwise_right_shift_(40).bitwise_and_(pieces - 1).to(torch.int32)


def piece_hashes(arr: pa.Array) -> torch.Tensor:
    """A cheap 64-bit hash of each string (int64): its length and its first, middle and last 8
    bytes, read as unaligned words straight from the Arrow buffer (no copy), a block of strings
    at a time (fresh 60 M-element temporaries cost more in page faults than the arithmetic).
    About 12x cheaper than :func:`sluice.kernels.hash.string_hashes` (every word of every
    string): good enough to spread strings over pieces and partitions, where equal strings
    must meet and a skew only costs balance. Bits 58-63 are spill partitions, 40-57 pieces."""
    bufs = string_buffers(arr)
    if bufs is None:
        return torch.zeros(0, dtype=torch.int64)
    offsets, data = bufs
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8 - len(data), np.uint8)])
    words = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    n = len(offsets) - 1
    out = torch.empty(n, dtype=torch.int64)
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        out[lo:hi] = _block_hashes(words, offsets[lo:hi], offsets[lo + 1:hi + 1])
    return out


def _block_hashes(words: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
    last_word = len(words) - 1
    lengths = ends - starts
    last = words[np.maximum(ends - 8, 0)]
    first = words[np.minimum(starts, last_word)]
    # a word from the middle (strings of 16 bytes or more; shorter ones are in first and last)
    mid = words[np.minimum(starts + np.maximum(lengths // 2 - 4, 0), last_word)]
    short = np.nonzero(lengths < 8)[0]
    if len(short):
        # A short string's word may begin before it (at the end of the buffer): shift its own
        # bytes down, keep only them; its "last word" is the same bytes.
        s, ln = starts[short], lengths[short]
        skip = (s - np.minimum(s, last_word)).astype(np.uint64) * np.uint64(8)
        keep = (np.uint64(1) << (ln.astype(np.uint64) * np.uint64(8))) - np.uint64(1)
        first[short] = (first[short] >> skip) & keep
        last[short] = 0
    mid[lengths < 16] = 0
    h = host_tensor(first.view(np.int64)).mul_(-0x61C8864680B583EB)
    h.bitwise_xor_(host_tensor(last.view(np.int64)).add_(host_tensor(lengths)))
    h.mul_(-0x3D4D51C2D82B14B1)
    h.bitwise_xor_(host_tensor(mid.view(np.int64)))
    h.mul_(-0x61C8864680B583EB)
    return h.bitwise_xor_(h.bitwise_right_shift(29))
