"""Column (tensor + validity + type [+ dictionary]) and Chunk (a batch of rows on one device).

A nested column (LIST, STRUCT, MAP) is int64 codes into :class:`NestedValues`, kept where a
string column keeps its dictionary: take, filter, slice and broadcast move only the codes, and
code that rebuilds a column from ``data`` and ``dictionary`` carries the values along."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import weakref

import pyarrow as pa
import torch

from sluice.kernels.encode import encode_string_list
from sluice.kernels.buffers import host_tensor, lookup, positions, string_buffers, to_device  # noqa: F401 - used and re-exported
from sluice.kernels.buffers import as_string, concat_strings
from sluice.types import LType
from sluice.errors import ExecutionError, InternalError, UnsupportedError


#: A SUM beyond 64 bits (``Column.wide``) is an answer to print, not a value to compute with.
WIDE_SUM = ("a SUM exceeding 64 bits used as a sort, group, join or window key or an aggregate's argument "
            "(it can only be output)")


def computable(col: "Column") -> "Column":
    """``col`` itself, or refused where it is a SUM beyond 64 bits: its ``data`` holds
    zeros (the exact values ride along for output only), so a sort, group, join or window key,
    an aggregate's or a window function's argument over it would compute with zeros -- ORDER BY
    such a sum ordered every group as equal, COUNT(DISTINCT) of it counted one value."""
    if col.wide is not None:
        raise UnsupportedError(WIDE_SUM)
    return col


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a chunk.

    ``data`` is 1-d (or 0-d for a constant that broadcasts). ``valid`` is a bool tensor of
    the same shape, or None when no value is null. String columns hold int32 codes in
    ``data`` and their values in ``dictionary`` (an Arrow string array on the host).
    """

    data: torch.Tensor
    type: LType
    valid: torch.Tensor | None = None
    dictionary: pa.Array | None = None
    wide: tuple | None = None
    """Exact values of a SUM that exceeds 64 bits (``data`` then holds zeros)."""

    def __post_init__(self) -> None:
        if self.type.is_nested and not isinstance(self.dictionary, NestedValues):
            # Code that does not know nested columns rebuilt one without its values.
            raise UnsupportedError(f"a {self.type.kind.upper()} column ({self.type}) in an operation that does "
                                   "not handle nested values")
        if self.data.dtype != self.type.torch_dtype:
            # A tensor that does not hold its type's values prints as garbage (SUM of a float32
            # column once gave 0.0 so): an internal error, never a silent wrong answer.
            raise InternalError(f"a {self.type} column holds {self.data.dtype} values")
        # A constant NULL combined with a column (``s || NULL``) gives 0-d validity: broadcast it.
        if self.valid is not None and self.valid.dim() == 0 and self.data.dim() == 1:
            object.__setattr__(self, "valid", self.valid.expand(self.data.shape))

    def __len__(self) -> int:
        return int(self.data.shape[0]) if self.data.dim() else 1

    @property
    def is_const(self) -> bool:
        return self.data.dim() == 0

    @property
    def nbytes(self) -> int:
        """Bytes of its tensors: values and validity (a constant: none; a dictionary is counted
        by :attr:`Chunk.nbytes`, by the chunk's share of it)."""
        if self.is_const:
            return 0
        return self.data.numel() * self.data.element_size() + (0 if self.valid is None else self.valid.numel())

    def take(self, idx: torch.Tensor) -> "Column":
        if self.is_const:
            return self
        # index_select is about twice as fast as advanced indexing on CPU.
        v = None if self.valid is None else self.valid.index_select(0, idx)
        w = None if self.wide is None else tuple(self.wide[i] for i in idx.cpu().tolist())
        return Column(self.data.index_select(0, idx), self.type, v, self.dictionary, w)

    def filter(self, mask: torch.Tensor) -> "Column":
        if self.is_const:
            return self
        if self.wide is not None:
            return self.take(positions(mask))
        idx = positions(mask)  # gathers: boolean indexing finds the positions again per tensor
        v = None if self.valid is None else self.valid.index_select(0, idx)
        return Column(self.data.index_select(0, idx), self.type, v, self.dictionary)

    def expand(self, n: int) -> "Column":
        """A constant broadcast to ``n`` rows (a stride-0 view: no copy)."""
        if not self.is_const:
            return self
        v = None if self.valid is None else self.valid.reshape(()).expand(n)
        return Column(self.data.reshape(()).expand(n), self.type, v, self.dictionary)


def empty_column(t: LType, device: torch.device) -> Column:
    """A column of type ``t`` with no rows (a string column with an empty dictionary)."""
    return Column(torch.zeros(0, dtype=t.torch_dtype, device=device), t, None,
                  pa.array([], pa.string()) if t.kind == "string"
                  else empty_values(t, device) if t.is_nested else None)


# ---------------------------------------------------------------- nested values


@dataclass(frozen=True, slots=True)
class NestedValues:
    """What a nested column's codes index: ``size`` entries. A LIST's or MAP's entry ``i`` is
    the child rows ``offsets[i]:offsets[i + 1]`` (``offsets``: int64, ``size + 1`` of them) of
    ``children`` -- (elements,) for a LIST, (keys, values) for a MAP; a STRUCT's entry ``i`` is
    row ``i`` of each field in ``children`` (``offsets`` None). Children are Columns (nested or
    not) on the column's device, never constants. Arrow's layout, behind one indirection, so
    that row movement never touches the children (docs: ARCHITECTURE.md, nested columns)."""

    children: tuple
    offsets: torch.Tensor | None
    size: int

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """Bytes of the offsets and children's tensors (string children: their dictionaries)."""
        total = 0 if self.offsets is None else self.offsets.numel() * 8
        for c in self.children:
            total += c.nbytes
            if c.dictionary is not None:
                total += c.dictionary.nbytes
        return total

    def to(self, device: torch.device) -> "NestedValues":
        """The same values on ``device`` (children moved level by level)."""
        kids = tuple(Column(c.data.to(device), c.type, None if c.valid is None else c.valid.to(device),
                            c.dictionary.to(device) if isinstance(c.dictionary, NestedValues) else c.dictionary)
                     for c in self.children)
        return NestedValues(kids, None if self.offsets is None else self.offsets.to(device), self.size)

    def sizes(self, codes: torch.Tensor) -> torch.Tensor:
        """The number of child rows of each entry in ``codes`` (int64). Codes 0..n-1 over n
        entries (a column as read) are the offsets' differences; others are gathered by
        ``index_select`` (advanced indexing took 189 ms for a million codes, against 72 and 13)."""
        o = self.offsets
        if codes.dim() != 1:
            return o[codes + 1] - o[codes]
        n = codes.numel()
        if n == self.size and n and int(codes[0]) == 0 and int(codes[-1]) == n - 1 and \
                torch.equal(codes, torch.arange(n, dtype=codes.dtype, device=codes.device)):
            return o[1:] - o[:-1]
        return o.index_select(0, codes + 1) - o.index_select(0, codes)


def empty_values(t: LType, device: torch.device) -> NestedValues:
    """Nested values with no entries."""
    if t.kind == "struct":
        return NestedValues(tuple(empty_column(u, device) for _, u in t.args), None, 0)
    kids = (t.element,) if t.kind == "list" else t.args
    return NestedValues(tuple(empty_column(u, device) for u in kids),
                        torch.zeros(1, dtype=torch.int64, device=device), 0)


def row_values(col: Column) -> NestedValues:
    """``col``'s nested values with one entry per row, in row order (its codes then 0..n-1):
    the children gathered (only the child rows the rows use), for output, concatenation and
    the list kernels. A NULL row's entry is empty (LIST / MAP) or its fields' entries."""
    codes = col.data.reshape(-1)
    v = col.dictionary
    if col.type.kind == "struct":
        return NestedValues(tuple(c.take(codes) for c in v.children), None, int(codes.numel()))
    sizes = v.sizes(codes)
    if col.valid is not None:
        sizes = sizes * col.valid.reshape(-1).expand(codes.shape)
    if _in_row_order(codes, v, sizes):  # (as read) the values are already what is asked
        return v
    starts = v.offsets[codes]
    offsets = torch.zeros(codes.numel() + 1, dtype=torch.int64, device=codes.device)
    torch.cumsum(sizes, 0, out=offsets[1:])
    idx = child_positions(starts, sizes, offsets)
    return NestedValues(tuple(c.take(idx) for c in v.children), offsets, int(codes.numel()))


def _in_row_order(codes: torch.Tensor, v: NestedValues, sizes: torch.Tensor) -> bool:
    """Whether LIST / MAP values ``v`` are row by row ``codes``' values already: codes 0..n-1,
    children starting at 0 with no rows unused, and every NULL row's entry empty."""
    n = codes.numel()
    if n != v.size or not n or int(v.offsets[0]) != 0 or any(len(c) != int(v.offsets[-1]) for c in v.children):
        return False
    if not torch.equal(codes, torch.arange(n, dtype=codes.dtype, device=codes.device)):
        return False
    return bool(torch.equal(sizes, v.offsets[1:] - v.offsets[:-1]))


def child_positions(starts: torch.Tensor, sizes: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """The child rows ``starts[i] : starts[i] + sizes[i]`` of every entry, one after another
    (``offsets``: the running sum of ``sizes``, with a leading 0)."""
    total = int(offsets[-1])
    if total == 0:
        return torch.zeros(0, dtype=torch.int64, device=starts.device)
    rows = torch.repeat_interleave(torch.arange(sizes.numel(), device=sizes.device), sizes, output_size=total)
    return starts[rows] + (torch.arange(total, device=starts.device) - offsets[:-1][rows])


def entry_rows(offsets: torch.Tensor) -> torch.Tensor:
    """For each child row of row-ordered list values, the entry (row) it belongs to."""
    n = offsets.numel() - 1
    sizes = offsets[1:] - offsets[:-1]
    return torch.repeat_interleave(torch.arange(n, device=offsets.device), sizes, output_size=int(offsets[-1]))


def nested_column(t: LType, values: NestedValues, valid: torch.Tensor | None) -> Column:
    """A column whose rows are ``values``' entries in order."""
    codes = torch.arange(values.size, dtype=torch.int64,
                         device=values.offsets.device if values.offsets is not None else values.children[0].data.device)
    return Column(codes, t, valid, values)


#: A LIST / MAP column whose rows use more child rows than this is looked at for entries its
#: rows share (:func:`shared_entries`: a sort of its codes).
SHARED_ENTRIES_MIN = 4096


def shared_entries(col: Column) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(the distinct entries a LIST / MAP column's valid rows use, each row's position among them:
    int32) where those entries hold less than half the child rows of every row's entry one after
    another -- rows sharing entries: a window's list per partition, which every row of the
    partition points at, a join's build-side list, a constant; else None (rows of lists of their
    own, or too few child rows to look: :data:`SHARED_ENTRIES_MIN`)."""
    codes = col.data.reshape(-1).expand(len(col))
    sizes = col.dictionary.sizes(codes)
    valid = None if col.valid is None else col.valid.reshape(-1).expand(len(col))
    if valid is not None:
        sizes = sizes * valid
    by_rows = int(sizes.sum())
    if by_rows <= SHARED_ENTRIES_MIN:
        return None
    if _distinct_in_order(codes if valid is None else codes[valid]):
        return None  # each row its own entry (a column as read, or filtered): nothing to sort
    keyed = codes if valid is None else torch.where(valid, codes, torch.full_like(codes, -1))
    entries, where = torch.unique(keyed, return_inverse=True)
    if valid is not None and entries.numel() and int(entries[0]) < 0:  # NULL rows: no entry
        entries, where = entries[1:], (where - 1).clamp_(min=0)
    if 2 * (int(col.dictionary.sizes(entries).sum()) + entries.numel()) >= by_rows:
        return None
    return entries, where.to(torch.int32)


def _distinct_in_order(codes: torch.Tensor) -> bool:
    """Whether ``codes`` rise strictly -- so no two rows share an entry: one pass, where
    :func:`shared_entries`' ``torch.unique`` sorts (it ran on every key build of a column as
    read, whose codes are 0..n-1)."""
    return codes.numel() < 2 or bool((codes[1:] > codes[:-1]).all())


def _compact(v: NestedValues) -> bool:
    """Whether every child row of ``v`` lies between its first and last offset, from 0 (values
    concatenated as they are must: the offsets of the whole are one running sum)."""
    if v.offsets is None:
        return True
    end = int(v.offsets[-1])
    return int(v.offsets[0]) == 0 and all(len(k) == end for k in v.children)


def _concat_nested(cols: list[Column], unify: bool) -> Column:
    """Each column's values end to end (offsets moved by the child rows before, codes by the
    entries before). A column's values are kept as they are where its rows use more child rows
    than they hold (and one copy serves every column of the same values: slices of one chunk);
    else cut to the entries its rows share where they share some (:func:`shared_entries`), else
    gathered to row order (only the child rows its rows use). So rows pointing at one entry (a
    window's list per partition, a repeated constant) still point at one entry and are never
    copied out once per row -- also when the values they point into are far larger than what
    the rows use (pages read back from a spill, each with its own entries)."""
    parts, codes, kept = [], [], {}
    t = cols[0].type
    for c in cols:
        v = c.dictionary
        shared_cost = len(v) if v.offsets is None else int(v.offsets[-1]) + len(v)
        if v.offsets is None:
            row_cost = len(c)
        else:
            used = v.sizes(c.data.reshape(-1))
            row_cost = int((used if c.valid is None else used * c.valid.reshape(-1)).sum()) + len(c)
        if row_cost > shared_cost and _compact(v):
            if id(v) not in kept:
                kept[id(v)] = len(parts)
                parts.append(v)
            codes.append((kept[id(v)], c.data.reshape(-1)))
            continue
        shared = None if v.offsets is None else shared_entries(c)
        if shared is None:
            parts.append(row_values(c))
            codes.append((len(parts) - 1, torch.arange(len(c), dtype=torch.int64, device=c.data.device)))
        else:
            entries, where = shared
            parts.append(row_values(Column(entries, t, None, v)))
            codes.append((len(parts) - 1, where.to(torch.int64)))
    kids = tuple(concat_columns([p.children[i] for p in parts], unify) for i in range(len(parts[0].children)))
    offsets = None
    if t.kind != "struct":
        pieces, base = [parts[0].offsets[:1]], 0
        for p in parts:
            pieces.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        offsets = torch.cat(pieces)
    bases, base = [], 0
    for p in parts:
        bases.append(base)
        base += p.size
    values = NestedValues(kids, offsets, base)
    valid = None
    if any(c.valid is not None for c in cols):
        valid = torch.cat([c.valid.reshape(-1).expand(len(c)) if c.valid is not None
                           else torch.ones(len(c), dtype=torch.bool, device=c.data.device) for c in cols])
    return Column(torch.cat([k + bases[i] for i, k in codes]), t, valid, values)


def filter_columns(cols: Mapping[str, Column], mask: torch.Tensor) -> dict[str, Column]:
    """``cols`` (all of ``mask``'s length) less the rows where ``mask`` is false.

    The positions are found once and gathered from every column: a boolean index per column
    finds them again for each (SF 10 lineorder, pushdown, 8 columns: 14 ms a slice against 2,
    a third of the scan's time)."""
    idx = positions(mask)
    return {c: col.take(idx) for c, col in cols.items()}


@dataclass(frozen=True, slots=True)
class Chunk:
    """A batch of rows: named columns, all of ``num_rows`` rows on one device.

    A chunk with no columns (``count(*)`` over a scan, ``VALUES``' one row before its literals)
    still lives on a device: ``home`` names it, and constructing one without it is an internal
    error. Before, such chunks fell back to the CPU, and the literals evaluated over them met
    CUDA columns in joins, concatenations and sorts."""

    columns: Mapping[str, Column]
    num_rows: int
    seq: int = 0
    home: torch.device | None = None

    def __post_init__(self) -> None:
        if self.home is None and not self.columns:
            raise InternalError("a chunk with no columns was made without its device")

    @property
    def device(self) -> torch.device:
        for c in self.columns.values():
            return c.data.device
        return self.home

    @property
    def nbytes(self) -> int:
        """Bytes the chunk holds -- the one count for memory budgets, spilling and statistics:
        its columns' tensors plus its share of each dictionary (rows / entries, at most all of
        it: a slice of a column shares the dictionary of the whole)."""
        total = 0
        n = self.num_rows
        for c in self.columns.values():
            if c.is_const:
                continue
            total += c.nbytes
            if c.dictionary is not None and len(c.dictionary):
                d = c.dictionary
                total += int(d.nbytes * min(1.0, n / len(d)))
        return total

    def __getitem__(self, name: str) -> Column:
        return self.columns[name]

    def select(self, names) -> "Chunk":
        return Chunk({n: self.columns[n] for n in names}, self.num_rows, self.seq, self.device)

    def filter(self, mask: torch.Tensor) -> "Chunk":
        idx = positions(mask)
        n = int(idx.numel())
        if n == self.num_rows:
            return self  # nothing filtered out: no copies
        return Chunk({k: c.take(idx) for k, c in self.columns.items()}, n, self.seq, self.home)

    def take(self, idx: torch.Tensor) -> "Chunk":
        return Chunk({k: c.take(idx) for k, c in self.columns.items()}, int(idx.numel()), self.seq, self.home)

    def slice(self, start: int, stop: int) -> "Chunk":
        cols = {}
        for k, c in self.columns.items():
            if c.is_const:
                cols[k] = c
            else:
                v = None if c.valid is None else c.valid[start:stop]
                w = None if c.wide is None else c.wide[start:stop]
                cols[k] = Column(c.data[start:stop], c.type, v, c.dictionary, w)
        return Chunk(cols, max(0, min(stop, self.num_rows) - start), self.seq, self.home)




def compact_strings(chunk: "Chunk") -> "Chunk":
    """The chunk with each string column's dictionary cut to the entries its rows use, where the
    dictionary is much larger than the column (a slice of a bigger chunk): so that a small
    chunk does not keep a big dictionary alive."""
    cols = {}
    changed = False
    for k, c in chunk.columns.items():
        if c.type.kind == "string" and c.dictionary is not None and not c.is_const and len(c.dictionary) > 2 * c.data.numel():
            d, codes = _compacted(c)
            cols[k] = Column(codes, c.type, c.valid, d, c.wide)
            changed = True
        else:
            cols[k] = c
    return Chunk(cols, chunk.num_rows, chunk.seq, chunk.home) if changed else chunk


# ---------------------------------------------------------------- dictionaries


def unify_dictionaries(cols: list[Column]) -> tuple[pa.Array, list[torch.Tensor]]:
    """Re-code string columns with different dictionaries into one deduplicated dictionary.

    Returns the unified dictionary and, per input column, its codes in that dictionary.
    Work is proportional to the dictionaries' sizes (Arrow hashing), plus one gather of codes;
    a dictionary much larger than its column (a filtered high-cardinality column) is first cut
    down to the entries in use, so the work is bounded by the rows too.
    """
    pairs = [_unify_input(c) for c in cols]
    dicts = [d for d, _ in pairs]
    first = dicts[0]
    if all(d is first for d in dicts):
        # One dictionary: encoded once for every chunk that shares it.
        hit = _ENCODED.get(first, _dedupe)
        if hit is None:  # no repeats
            return first, [codes for _, codes in pairs]
        unique, mapping = hit
        return unique, [lookup(to_device(mapping, codes.device), codes) if len(first) else codes
                        for _, codes in pairs]
    unique, mapping = _encode_list([_as_string(d) for d in dicts])
    out, off = [], 0
    for d, codes in pairs:
        if mapping is None:  # no repeats: each dictionary's codes move by its position
            out.append(codes + off if off else codes)
        elif len(d):
            out.append(lookup(to_device(mapping[off: off + len(d)], codes.device), codes))
        else:
            out.append(codes)
        off += len(d)
    return unique, out


def _encode(d: pa.Array) -> tuple[pa.Array, torch.Tensor | None]:
    """(d without repeats, int32 position in it of each entry of d), or (d, None) when d has
    no repeats. The result is remembered as repeat-free for later calls."""
    return _encode_list([d])


def _encode_list(arrs: list[pa.Array]) -> tuple[pa.Array, torch.Tensor | None]:
    """:func:`_encode` of the arrays' concatenation, made only when it has no repeats (then it
    is the dictionary: the array itself when there is one)."""
    unique, mapping = encode_string_list([_as_string(a) for a in arrs])
    if len(unique) == sum(len(a) for a in arrs):
        unique, mapping = concat_strings(arrs), None
    _ENCODED.get(unique, lambda u: None)  # None: repeat-free (never the array itself: see DictionaryCache)
    return unique, mapping


def _dedupe(d: pa.Array) -> tuple[pa.Array, torch.Tensor] | None:
    """What ``_ENCODED`` remembers of ``d``: None if it has no repeats, else ``_encode(d)``."""
    unique, mapping = _encode(d)
    return None if mapping is None else (unique, mapping)


def _compacted(c: Column) -> tuple[pa.Array, torch.Tensor]:
    """(dictionary, codes) of a string column, reduced to the entries it uses when its
    dictionary has more than twice as many entries as it has rows."""
    n = c.data.numel()
    if len(c.dictionary) <= 2 * n:
        return c.dictionary, c.data
    used = c.dictionary.take(pa.array(c.data.reshape(-1).cpu().numpy()))
    return used, torch.arange(n, dtype=torch.int32, device=c.data.device).reshape(c.data.shape)


class DictionaryCache:
    """Results computed once per dictionary (shared by every chunk that uses it) and kept
    exactly as long as the dictionary lives: entries hold it weakly, so a cache never keeps
    a dead chunk's strings in memory. A value must never reference its own dictionary (the
    entry would keep it alive for ever: a leak of every string column seen)."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[weakref.ref, object]] = {}

    def get(self, d: pa.Array, compute):
        key = id(d)
        hit = self._d.get(key)
        if hit is not None and hit[0]() is d:
            return hit[1]
        value = compute(d)
        self._d[key] = (weakref.ref(d, lambda _ref, k=key: self._d.pop(k, None)), value)
        return value


_ENCODED = DictionaryCache()
_COMPACTED = DictionaryCache()  # per dictionary: how often a chunk's entries were cut out of it
#: A dictionary that chunks were cut down from this often is encoded whole, once (cached), and
#: not cut down again: TPC-DS Q11's seven customer string columns, gathered by a join into every
#: chunk of store_sales, were cut and hashed again in each (a quarter of the query's time).
REUSED_AFTER = 2


def _unify_input(c: Column) -> tuple[pa.Array, torch.Tensor]:
    """(dictionary, codes) of ``c`` for unifying: cut down to the entries it uses when its
    dictionary is much larger than it (``_compacted``), unless chunks were already cut down
    from that dictionary ``REUSED_AFTER`` times -- then whole, so that it is encoded once."""
    if len(c.dictionary) <= 2 * c.data.numel():
        return c.dictionary, c.data
    count = _COMPACTED.get(c.dictionary, lambda _d: [0])
    count[0] += 1
    return (c.dictionary, c.data) if count[0] > REUSED_AFTER else _compacted(c)


def used_strings(cols: list[Column]) -> list[pa.Array]:
    """The dictionary entries some valid row of the string columns uses: an array per distinct
    dictionary (a dictionary as it is where every entry is used), repeats possible. What
    COUNT(DISTINCT x) needs of its pages' values: no codes, no unified dictionary."""
    used: dict[int, tuple[pa.Array, torch.Tensor]] = {}
    for c in cols:
        d = c.dictionary
        codes = c.data.reshape(-1)
        if c.valid is not None:
            codes = codes[c.valid.expand(c.data.shape).reshape(-1)]
        if id(d) not in used:
            used[id(d)] = (d, torch.zeros(len(d), dtype=torch.bool))
        codes = codes.cpu().long()
        if codes.numel() and not (0 <= int(codes.min()) and int(codes.max()) < len(d)):
            raise ExecutionError(f"internal error: a string code outside its dictionary of {len(d)}")
        used[id(d)][1][codes] = True
    out = []
    for d, mask in used.values():
        if len(d) and not bool(mask.all()):
            d = d.filter(pa.array(mask.numpy()))
        if len(d):
            out.append(_as_string(d))
    return out


def _as_string(d: pa.Array) -> pa.Array:
    return as_string(d)


def concat_columns(cols: list[Column], unify: bool = True) -> Column:
    """Concatenate non-constant columns of one type. String dictionaries are unified (one
    entry per distinct string) or, with ``unify=False``, only appended (no hashing: for pages
    that are merely moved, such as rows gathered before partitioning or a spill write)."""
    t = cols[0].type
    dictionary = None
    if t.is_nested:
        return _concat_nested(cols, unify)
    if t.kind == "string":
        dictionary, datas = unify_dictionaries(cols) if unify else _appended_dictionaries(cols)
    else:
        datas = [c.data for c in cols]
    wide = None
    if any(c.wide is not None for c in cols):
        # A SUM beyond 64 bits among them: the exact values one after another (the others' from
        # their data), zeros as the data -- rows moved together (a top-k's best rows and the
        # next chunk's) stay printable; what computes with them is refused (``computable``).
        wide = tuple(v for c in cols for v in (c.wide if c.wide is not None else c.data.reshape(-1).tolist()))
        datas = [torch.zeros_like(d) for d in datas]
    data = torch.cat(datas) if len(datas) > 1 else datas[0]
    if any(c.valid is not None for c in cols):
        valid = torch.cat([c.valid if c.valid is not None
                           else torch.ones(len(c), dtype=torch.bool, device=c.data.device)
                           for c in cols])
    else:
        valid = None
    return Column(data, t, valid, dictionary, wide)


def _appended_dictionaries(cols: list[Column]) -> tuple[pa.Array, list[torch.Tensor]]:
    """One dictionary that is the columns' (used) dictionaries one after another, and each
    column's codes moved by its dictionary's position in it."""
    pairs = [_compacted(c) for c in cols]
    first = pairs[0][0]
    if all(d is first for d, _ in pairs):
        return first, [codes for _, codes in pairs]
    out, off = [], 0
    for d, codes in pairs:
        out.append(codes + off if off else codes)
        off += len(d)
    return concat_strings([_as_string(d) for d, _ in pairs]), out


def concat_chunks(chunks: list[Chunk], names=None, unify: bool = True) -> Chunk | None:
    if not chunks:
        return None
    if len(chunks) == 1:
        return chunks[0] if names is None else chunks[0].select(names)
    names = list(chunks[0].columns) if names is None else names
    n = sum(c.num_rows for c in chunks)
    cols = {}
    for k in names:
        parts = [c.columns[k].expand(c.num_rows) for c in chunks]
        cols[k] = concat_columns(parts, unify)
    return Chunk(cols, n, chunks[0].seq, chunks[0].device)
