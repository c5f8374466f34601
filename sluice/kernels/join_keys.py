"""Join keys coded against the build side: both sides get equal codes for equal keys (the build
side's ranges, its sorted distinct values or a dictionary), probe values absent from the build
are flagged as non-matching, and the build's rows are found by a direct table, a rank bitmap or
a binary search behind a hash prefilter. Group-by codes are in :mod:`sluice.kernels.keys`.
"""

from __future__ import annotations

import torch

from sluice.chunk import Column, host_tensor, lookup, to_device, unify_dictionaries
from sluice.errors import InternalError
from sluice.kernels.nested_keys import equality_keys, key_column, splits
from sluice.kernels.keys import (_LIMIT, DIRECT_RANGE_FACTOR, DIRECT_RANGE_MIN, bit_set, hash_slot, packed_bits,
                                 sortable)
from sluice.types import LType
import numpy as np
import pyarrow.compute as pc

#: A join's build side with unique keys gets a direct table of int32 row numbers over a key range
#: of up to this many slots per build row (64 bytes a row, within what the budget gives the
#: index): one gather per probe row instead of a binary search. TPC-H SF 1 Q21's orders build
#: (729 K keys over a 6 M range) probed by 1.3 M rows: 182 ms by sorted values, 24 ms direct.
DIRECT_JOIN_FACTOR = 16
#: The sorted index first looks probe keys up in a bitmap of the build keys' hashes, this many
#: slots per build key (about 1 in 8 absent keys passes it): two binary searches over the build
#: for only the rows that may match. TPC-DS Q72 at SF 10 probes 32 M inventory rows on
#: (item, date) into 0.64 M catalog_sales rows, 3 % of them matching: 5.6 s of searchsorted.
PREFILTER_SLOTS = 8
#: ... dropped for the rest of the probe when more than this share of a chunk passes it.
PREFILTER_MAX_PASS = 0.5
#: Past the direct table's range, on a CPU, the build's distinct keys become a bitmap over the
#: code range with, per byte, the number of keys before it (5 bits a code, within what the budget
#: gives the index): a probe is a bit test and a rank -- gathers in a small table -- instead of
#: a hash test and a binary search. Up to this many codes per build row (80 bytes a row).
#: TPC-H SF 10: orders' 573 K keys over a 60 M range, probed by 1.1 M rows: 275 ms by binary
#: search, 29 ms by rank; SF 1 (57 K over 6 M, 115 K probes): 18 and 1.6 ms.
RANK_JOIN_FACTOR = 128
_POPCOUNT = [bin(i).count("1") for i in range(256)]


def _keyed(cols: list[Column], types: list[LType], n: int) -> tuple[list[Column], list, tuple[bool, ...]]:
    """The key columns a join codes for ``cols``: a STRUCT of scalar fields as its fields' columns
    (:func:`~sluice.kernels.nested_keys.struct_key_columns`: its values compared as stored, no
    type to convert to), any other column as it is; and which columns were split so."""
    out, src = equality_keys([c.expand(n) for c in cols], n)
    split = tuple(splits(c.type) for c in cols)
    return out, [None if split[i] else types[i] for i in src], split


class BuildKeys:
    """Per-column coding of the build side's join keys, reused for every probe chunk."""

    def __init__(self, cols: list[Column], types: list[LType]) -> None:
        n = len(cols[0]) if cols else 0
        self.key_types = types
        cols, types, self.split = _keyed(cols, types, n)
        self.types = types
        self.specs = []  # per column: ("range", lo, k) | ("values", sorted uniq) | ("dict", dictionary)
        valid = None
        codes_all = []
        for c, t in zip(cols, types):
            c = key_column(c.expand(n))
            if c.valid is not None:
                valid = c.valid if valid is None else (valid & c.valid)
            if c.type.kind == "string":
                d, (codes,) = unify_dictionaries([c])
                self.specs.append(("dict", d, len(d)))
                codes_all.append((codes.to(torch.int64), max(len(d), 1)))
                continue
            v = sortable(c, t)
            if n == 0:
                self.specs.append(("range", 0, 1))
                codes_all.append((v.to(torch.int64), 1))
                continue
            lo, hi = torch.aminmax(v)
            lo_i, k = int(lo), int(hi) - int(lo) + 1
            # One key column: its values less lo are the codes, whatever their range (JoinTable
            # decides between a direct table and a sorted index behind a hash bitmap: a probe
            # of sparse build keys then skips most rows, where a binary search per row here
            # took 16 % of SSB q3.4 at SF 10); several: each column's codes multiply the
            # combined range.
            if (len(cols) == 1 and k < _LIMIT) or k <= max(DIRECT_RANGE_FACTOR * n, DIRECT_RANGE_MIN):
                self.specs.append(("range", lo_i, k))
                codes_all.append((v.to(torch.int64) - lo_i, k))
            else:
                uniq = torch.unique(v)
                self.specs.append(("values", uniq, uniq.numel()))
                codes_all.append((torch.searchsorted(uniq, v), uniq.numel()))
        self.valid = valid
        self.combine_steps: list[torch.Tensor | None] = []
        key, card = None, 1
        for codes, k in codes_all:
            if key is None:
                key, card = codes, k
                continue
            if card * k >= _LIMIT:
                uniq = torch.unique(key)
                self.combine_steps.append(uniq)
                key, card = torch.searchsorted(uniq, key), uniq.numel()
            else:
                self.combine_steps.append(None)
            key = key * k + codes
            card *= k
        self.key = key if key is not None else torch.zeros(0, dtype=torch.int64)
        self.card = card

    def probe(self, cols: list[Column], n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(codes, ok): probe rows' codes in the build's code space; ok=False never matches."""
        ok = None
        codes_all = []
        cols, _, split = _keyed(cols, self.key_types, n)
        if split != self.split or len(cols) != len(self.specs):  # (never zipped short: a wrong join)
            raise InternalError(f"join keys {[str(c.type) for c in cols]} probe a build keyed otherwise")
        for c, t, spec in zip(cols, self.types, self.specs):
            c = key_column(c.expand(n))
            if c.valid is not None:
                ok = c.valid if ok is None else (ok & c.valid)
            kind = spec[0]
            if kind == "dict":
                d = spec[1]
                idx = pc.index_in(c.dictionary, value_set=d).fill_null(-1).to_numpy(zero_copy_only=False)
                m = to_device(host_tensor(np.asarray(idx, dtype=np.int64)), c.data.device)
                codes = lookup(m, c.data) if m.numel() else torch.full((n,), -1, dtype=torch.int64, device=c.data.device)
                good = codes >= 0
                codes_all.append((codes.clamp(min=0), spec[2], good))
                continue
            v = sortable(c, t)
            if kind == "range":
                lo, k = spec[1], spec[2]
                x = v.to(torch.int64) - lo
                good = (x >= 0) & (x < k)
                codes_all.append((x.clamp(0, max(k - 1, 0)), k, good))
            else:
                uniq = spec[1]
                if uniq.numel() == 0:
                    codes_all.append((torch.zeros(n, dtype=torch.int64, device=v.device), 1,
                                      torch.zeros(n, dtype=torch.bool, device=v.device)))
                    continue
                pos = torch.searchsorted(uniq, v).clamp(max=uniq.numel() - 1)
                codes_all.append((pos, spec[2], uniq[pos] == v))
        key = None
        for i, (codes, k, good) in enumerate(codes_all):
            ok = good if ok is None else (ok & good)
            if key is None:
                key = codes
                continue
            uniq = self.combine_steps[i - 1]
            if uniq is not None:
                if uniq.numel() == 0:
                    key = torch.zeros_like(key)
                    ok = ok & False
                else:
                    pos = torch.searchsorted(uniq, key).clamp(max=uniq.numel() - 1)
                    ok = ok & (uniq[pos] == key)
                    key = pos
            key = key * k + codes
        assert key is not None and ok is not None
        return key, ok


class JoinTable:
    """Build side index over int64 codes: a direct table (unique keys, int32 rows) or CSR
    offsets when the code range is small, else a sorted array searched with ``searchsorted``."""

    def __init__(self, key: torch.Tensor, valid: torch.Tensor | None, card: int,
                 max_bytes: int | None = None) -> None:
        dev = key.device
        total = key.numel()
        rows = torch.arange(total, device=dev)
        if valid is not None:
            rows = rows[valid]
            key = key[valid]
        self.n = key.numel()
        # A direct table of at least DIRECT_RANGE_MIN entries pays even for small builds --
        # unless memory is that short (``max_bytes``: what the budget can give the index).
        floor = DIRECT_RANGE_MIN if max_bytes is None else min(DIRECT_RANGE_MIN, max(0, max_bytes // 16))
        self.direct = False
        self.rank: RankIndex | None = None
        self.card = card
        n1 = max(self.n, 1)
        if card <= max(DIRECT_JOIN_FACTOR * n1, floor) and (max_bytes is None or 4 * (card + 1) <= max_bytes):
            self.table = _unique_table(key, rows, card, total)
            self.direct = self.unique = self.table is not None
            if not self.direct and card <= max(DIRECT_RANGE_FACTOR * n1, floor):
                counts = torch.bincount(key, minlength=card)
                order = torch.argsort(key, stable=True)
                self.sorted_rows = rows[order]
                self.offsets = torch.zeros(card + 1, dtype=torch.int64, device=dev)
                self.offsets[1:] = torch.cumsum(counts, 0)
                self.direct = True
        if not self.direct:
            sk, order = torch.sort(key, stable=True)
            self.sorted_keys = sk
            self.sorted_rows = rows[order]
            self.unique = bool(self.n <= 1 or not bool((sk[1:] == sk[:-1]).any()))
            self.present, self.log2 = None, max(10, (PREFILTER_SLOTS * max(self.n, 1) - 1).bit_length())
            if dev.type == "cpu" and self.n and card <= RANK_JOIN_FACTOR * n1 and card < (1 << 40) and \
                    (max_bytes is None or 5 * card // 8 + 16 * self.n <= max_bytes):
                self.rank = RankIndex(sk, card, self.unique)
            elif self.n and (max_bytes is None or (1 << self.log2) <= max_bytes // 4):
                self.present = torch.zeros(1 << self.log2, dtype=torch.bool, device=dev)
                self.present[hash_slot(sk, self.log2)] = True

    def nbytes(self) -> int:
        """Bytes of the index (for the memory budget)."""
        total = 0
        for name in ("table", "sorted_rows", "offsets", "sorted_keys", "present"):
            t = getattr(self, name, None)
            if t is not None:
                total += t.numel() * t.element_size()
        rank = getattr(self, "rank", None)
        return total + (rank.nbytes() if rank is not None else 0)

    def ranges(self, key: torch.Tensor, ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per probe row, where its key's build rows start in ``sorted_rows`` and how many
        there are (a non-unique index only)."""
        if self.direct:
            k = torch.where(ok, key, torch.zeros_like(key))
            lo, hi = self.offsets[k], self.offsets[k + 1]
            return lo, torch.where(ok, hi - lo, torch.zeros_like(lo))
        idx, lo, cnt = self._search(key, ok)
        if idx is None:
            return lo, cnt
        full_lo, full_cnt = torch.zeros_like(key), torch.zeros_like(key)
        full_lo[idx], full_cnt[idx] = lo, cnt
        return full_lo, full_cnt

    def _search(self, key: torch.Tensor, ok: torch.Tensor):
        """The sorted index: (probe rows searched -- None: all --, where their keys' build
        rows start, how many). Rows whose key hash is absent from the build are not searched."""
        if self.rank is not None:
            lo, cnt = self.rank.find(key, ok)
            return None, lo, cnt
        idx = None
        if self.present is not None:
            cand = ok & self.present[hash_slot(key, self.log2)]
            idx = cand.nonzero().squeeze(1)
            if idx.numel() > PREFILTER_MAX_PASS * key.numel():
                self.present = None  # most keys match here: the bitmap only costs
                idx = None
            else:
                key, ok = key[idx], None
        lo = torch.searchsorted(self.sorted_keys, key)
        if self.unique:  # one search: the key is there or not
            cnt = (self.sorted_keys[lo.clamp(max=self.n - 1)] == key).to(torch.int64) if self.n else lo * 0
        else:
            cnt = torch.searchsorted(self.sorted_keys, key, right=True) - lo
        if ok is not None:
            cnt = torch.where(ok, cnt, torch.zeros_like(cnt))
        return idx, lo, cnt

    def match(self, key: torch.Tensor, ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All (probe row, build row) pairs with equal keys, probe-major order."""
        dev = key.device
        n = key.numel()
        if self.n == 0 or n == 0:
            e = torch.zeros(0, dtype=torch.int64, device=dev)
            return e, e
        if self.direct and self.unique:
            k = torch.where(ok, key, torch.full_like(key, self.card))
            b = self.table.index_select(0, k)  # index_select: twice as fast as b[k] on the CPU
            p = (b >= 0).nonzero().squeeze(1)
            return p, b.index_select(0, p).to(torch.int64)
        idx = None  # the probe rows lo / cnt are of (None: all)
        if self.direct:
            k = torch.where(ok, key, torch.zeros_like(key))
            lo = self.offsets[k]
            cnt = torch.where(ok, self.offsets[k + 1] - lo, torch.zeros_like(lo))
        else:
            idx, lo, cnt = self._search(key, ok)
        if self.unique:
            q = (cnt > 0).nonzero().squeeze(1)
            return (q if idx is None else idx[q]), self.sorted_rows[lo[q]]
        total = int(cnt.sum())
        q = torch.repeat_interleave(torch.arange(cnt.numel(), device=dev), cnt, output_size=total)
        starts = torch.cumsum(cnt, 0) - cnt
        pos = lo[q] + (torch.arange(total, device=dev) - starts[q])
        return (q if idx is None else idx[q]), self.sorted_rows[pos]


class RankIndex:
    """The distinct keys of a sorted build as a bitmap over the codes 0..card-1 plus, per byte,
    how many keys come before it: a code's bit says whether it is a build key, its rank (the
    keys before it) where its rows start in the sorted build (see RANK_JOIN_FACTOR)."""

    def __init__(self, sorted_keys: torch.Tensor, card: int, unique: bool) -> None:
        distinct = sorted_keys if unique else torch.unique_consecutive(sorted_keys)
        self.bits = packed_bits(distinct, card)
        self.popcount = torch.tensor(_POPCOUNT, dtype=torch.int32)
        per_byte = self.popcount.index_select(0, self.bits.to(torch.int64))
        self.before = torch.cumsum(per_byte, 0, dtype=torch.int32).sub_(per_byte)
        self.below = torch.tensor([(1 << i) - 1 for i in range(8)], dtype=torch.uint8)
        self.card = card
        self.starts = None  # where each distinct key's rows start (several rows a key)
        if not unique:
            counts = torch.unique_consecutive(sorted_keys, return_counts=True)[1]
            self.starts = torch.zeros(counts.numel() + 1, dtype=torch.int64)
            torch.cumsum(counts, 0, out=self.starts[1:])

    def nbytes(self) -> int:
        extra = 0 if self.starts is None else self.starts.numel() * 8
        return self.bits.numel() + self.before.numel() * 4 + extra

    def find(self, key: torch.Tensor, ok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per probe row, where its key's rows start in the sorted build and how many there are
        (0 for a key not in the build or a row not ``ok``)."""
        inside = ok & (key >= 0) & (key < self.card)
        k = torch.where(inside, key, torch.zeros_like(key))
        byte = k >> 3
        b = self.bits.index_select(0, byte)
        hit = inside & bit_set(b, k)
        rank = self.before.index_select(0, byte).to(torch.int64) + \
            self.popcount.index_select(0, (b & self.below.index_select(0, k & 7)).to(torch.int64))
        if self.starts is None:
            return rank, hit.to(torch.int64)
        lo = self.starts.index_select(0, rank)  # (rank <= distinct keys: starts has one more)
        cnt = torch.where(hit, self.starts.index_select(0, rank + hit.to(torch.int64)) - lo, torch.zeros_like(lo))
        return lo, cnt


def _unique_table(key: torch.Tensor, rows: torch.Tensor, card: int, total: int) -> torch.Tensor | None:
    """A direct table from key code to build row (< ``total``; -1: none; slot ``card`` is always -1), or
    None when some key repeats. Rows are written, then read back: a repeated key lost one of
    its writes (cheaper than counting the whole range with bincount)."""
    dt = torch.int32 if total < (1 << 31) else torch.int64
    r = rows.to(dt)
    table = torch.full((card + 1,), -1, dtype=dt, device=key.device)
    if key.numel():
        table.index_put_((key,), r)
        if not bool(torch.equal(table.index_select(0, key), r)):
            return None
    return table
