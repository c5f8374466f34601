"""Order keys of nested values: each LIST / STRUCT / MAP value as a string whose byte order is
DuckDB's order of the values and whose equality is theirs.

A nested column's ``data`` are codes into its values, and equal values may have different
codes, so the key kernels cannot group, sort, hash or join on them. Instead every key kernel
(:mod:`sluice.kernels.keys`, :mod:`sluice.kernels.hash`) first replaces a nested column by its
order key, a string column, and from then on the machinery that groups, sorts, joins and
partitions strings runs unchanged -- across chunks, spill pages and ranks, because the key
is a function of the value alone (ranks of a sort of the distinct values would be comparable
only within the rows sorted together). Why this order: DuckDB compares nested values
field by field and element by element, a shorter list before a longer one it is a prefix of,
and a NULL inside a value above every non-NULL one (in ``=`` too: ``[NULL] = [NULL]`` is true)
-- a total order, so ``DESC`` is exactly its reverse. A MAP compares as its list of
(key, value) entries, in their order (DuckDB 2.0).

The encoding, valid UTF-8 (Arrow's string kernels order it bytewise):

- a number, date, time or boolean: its int64 (floats through ``float_order_key``: -0.0 is 0.0,
  NaN above +inf), sign bit flipped, as 11 characters of 6 bits from ``'0'``, most significant
  first -- one width for every integer type, so BIGINT[] and INTEGER[] values compare;
- a string: its UTF-8 bytes (0x00 / 0x01 escaped as 0x01 0x02 / 0x01 0x03), then 0x01 0x01,
  below any byte that can follow (a prefix first);
- a child value (list element, struct field, map key or value): ``'"'`` then its key, or
  ``'#'`` for NULL (above every value);
- a list or map: its entries' child keys, then ``'!'`` (below ``'"'`` and ``'#'``: a prefix
  first); a struct: its fields' child keys in order.

Built level by level with gathers over the children (segments of bytes concatenated per
row, never a loop over rows); a top-level NULL is a NULL key."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, computable, entry_rows, row_values, shared_entries
from sluice.kernels.buffers import host_tensor, string_buffers, to_device
from sluice.kernels.values import float_order_key
from sluice.types import BOOL, STRING, LType
from sluice.errors import UnsupportedError

END, VALUE, NULL = 0x21, 0x22, 0x23
_TERM = 0x01  # a string's terminator, twice
_DIGIT = 0x30
_WIDTH = 11  # 6-bit characters of an int64
_SIGN = -(1 << 63)

#: Scalar kinds an order key encodes (as int64 or bytes).
_SCALAR = frozenset({"bool", "int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz",
                     "interval", "float32", "float64", "string", "null"})


def order_key_type_ok(t: LType) -> str | None:
    """None when values of ``t`` have an order key, else the kind that has none (to refuse by name)."""
    if t.is_nested:
        kids = [u for _, u in t.args] if t.kind == "struct" else [t.element] if t.kind == "list" else list(t.args)
        for u in kids:
            bad = order_key_type_ok(u)
            if bad is not None:
                return bad
        return None
    return None if t.kind in _SCALAR else t.kind


def key_column(col: Column) -> Column:
    """``col`` itself, or for a nested column its order key: a STRING column, NULL where the
    value is. A SUM beyond 64 bits has none (every key kernel asks here: an error, not zeros)."""
    if not col.type.is_nested:
        return computable(col)
    if col.is_const:  # one value, kept a constant (it broadcasts against the other side)
        k = order_key(col.expand(1))
        v = None if k.valid is None else k.valid.reshape(())
        return Column(k.data.reshape(()), STRING, v, k.dictionary)
    if col.type.kind != "struct":
        shared = shared_entries(col)
        if shared is not None:  # rows sharing lists (a window's per partition): a key per list, not per row
            entries, where = shared
            k = order_key(Column(entries, col.type, None, col.dictionary))
            return Column(where, STRING, col.valid, k.dictionary)
    return order_key(col)


#: Field kinds a STRUCT key is split into (:func:`struct_key_columns`): each field's values are
#: equal exactly where its data are (integers of any width, dates, booleans) or its strings are.
#: (Floats, decimals and timestamps keep the order key: -0.0 / NaN, scales, units.)
_SPLIT_KINDS = frozenset({"bool", "int8", "int16", "int32", "int64", "date", "string"})


def splits(t: LType) -> bool:
    """Whether an equality key of type ``t`` is keyed by its fields (:func:`struct_key_columns`):
    a STRUCT of such fields (or of STRUCTs of them)."""
    return t.kind == "struct" and bool(t.args) and all(u.kind in _SPLIT_KINDS or splits(u) for _, u in t.args)


def equality_keys(cols: list[Column], n: int) -> tuple[list[Column], list[int]]:
    """The columns to group or join on for ``cols`` (each ``n`` rows): a STRUCT that
    :func:`splits` as its field columns, any other nested column as its order key; and for
    each column out, the position of the column in ``cols`` it comes from."""
    out: list[Column] = []
    src: list[int] = []
    for i, c in enumerate(cols):
        got = struct_key_columns(c.expand(n)) if splits(c.type) else [key_column(c)]
        out.extend(got)
        src.extend([i] * len(got))
    return out, src


def struct_key_columns(col: Column) -> list[Column]:
    """The equality key of a STRUCT column (``splits(col.type)``) as plain columns: per field, a
    BOOL column (whether the field is non-NULL) then its values, NULL filled (0, or a string
    ``''`` appended to its dictionary); an inner STRUCT field likewise below its own flag. The
    first column carries the struct's validity: a NULL struct is a NULL key (it never joins, and
    groups with the other NULLs), while a NULL field is a value -- ``{'a': NULL} = {'a': NULL}``
    is true in DuckDB, in joins and GROUP BY alike, as the order key has it.

    Why: the order key writes every row's bytes and hashes them again (a join on a struct of two
    fields was 14x DuckDB at a million rows); these columns go to the machinery that keys
    integers and dictionary strings as for any multi-column key, with no bytes made."""
    out: list[Column] = []
    _field_columns(col, None, out)
    first = out[0]
    out[0] = Column(first.data, first.type, None if col.valid is None else col.valid.reshape(-1).expand(len(col)))
    return out


def _field_columns(col: Column, live: torch.Tensor | None, out: list[Column]) -> None:
    """``col``'s fields' key columns into ``out``; ``live``: the rows whose enclosing structs are
    all non-NULL (None: every row)."""
    values = col.dictionary
    for (name, t), child in zip(col.type.args, values.children):
        f = child.take(col.data)
        here = f.valid if live is None else (live if f.valid is None else live & f.valid)
        present = here if here is not None else torch.ones(len(f), dtype=torch.bool, device=f.data.device)
        out.append(Column(present, BOOL))
        if t.kind == "struct":
            _field_columns(f, present, out)
            continue
        if here is None:
            out.append(Column(f.data, f.type, None, f.dictionary))
        elif t.kind == "string":
            d = f.dictionary
            fill = len(d)
            d = pa.concat_arrays([d, pa.array([""], d.type)])
            out.append(Column(torch.where(here, f.data, torch.full_like(f.data, fill)), f.type, None, d))
        else:
            out.append(Column(torch.where(here, f.data, torch.zeros_like(f.data)), f.type, None))


def order_key(col: Column) -> Column:
    """The order key (see the module docstring) of each row of the nested column ``col``."""
    n = len(col)
    col = col.expand(n)
    if col.wide is not None:
        raise ValueError("a wide column has no order key")
    seg = _value(col, n)
    valid = None if col.valid is None else col.valid.reshape(-1).expand(n)
    # A NULL row's bytes are kept (its key is NULL by the column's validity): the segments are
    # end to end already, so the buffer is the dictionary's as it stands.
    out, starts, lens = seg.var()
    offsets = torch.empty(n + 1, dtype=torch.int64, device=lens.device)
    offsets[:-1] = starts
    offsets[-1:] = starts[-1:] + lens[-1:] if n else 0
    data = out[:int(offsets[-1])].cpu().numpy() if n else np.zeros(0, np.uint8)
    offs = offsets.cpu().numpy()
    big = offs[-1] >= (1 << 31)
    arr = pa.Array.from_buffers(pa.large_string() if big else pa.string(), n,
                                [None, pa.py_buffer(offs if big else offs.astype(np.int32)), pa.py_buffer(data)])
    if big:
        arr = arr.cast(pa.string())
    codes = torch.arange(n, dtype=torch.int32, device=col.data.device)
    return Column(codes, STRING, valid, arr)


# ---------------------------------------------------------------- segments of bytes per row


class _Seg:
    """Each row's key bytes: a [rows, width] matrix where every row has the same width (numbers,
    structs of them: no index arithmetic), else ``buf[starts[i] : starts[i] + lens[i]]`` with
    the rows' segments end to end in ``buf`` (as every builder here leaves them), or on the CPU
    an Arrow large_binary array of the rows (no NULLs), joined by Arrow's C++ kernels."""

    __slots__ = ("mat", "buf", "starts", "lens", "arr")

    def __init__(self, mat=None, buf=None, starts=None, lens=None, arr=None):
        self.mat, self.buf, self.starts, self.lens, self.arr = mat, buf, starts, lens, arr

    def var(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.arr is not None:
            a = self.arr
            offs = np.frombuffer(a.buffers()[1], dtype=np.int64)[a.offset:a.offset + len(a) + 1]
            data = a.buffers()[2]
            buf = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
            o = torch.from_numpy(offs.copy())
            return torch.from_numpy(buf), o[:-1], o[1:] - o[:-1]
        if self.mat is None:
            return self.buf, self.starts, self.lens
        n, w = self.mat.shape
        dev = self.mat.device
        return (self.mat.reshape(-1), torch.arange(n, dtype=torch.int64, device=dev) * w,
                torch.full((n,), w, dtype=torch.int64, device=dev))


_BIN = pa.large_binary()


@functools.cache
def _empty() -> pa.Scalar:
    """b"" as a large_binary scalar, made on first use: making a pyarrow scalar imports pandas
    (0.2 s of every process's start: each rank, each CLI call)."""
    return pa.scalar(b"", _BIN)


def _arrow(p: _Seg, n: int) -> pa.Array | None:
    """``p`` as an Arrow large_binary array of its ``n`` rows, where that takes no copy of its
    bytes out of order (a matrix, or segments end to end); None where it would."""
    if p.arr is not None:
        return p.arr
    if p.mat is not None:
        m = p.mat.contiguous()
        w = m.shape[1]
        if w == 0:  # every row empty
            return pa.LargeBinaryArray.from_buffers(_BIN, n, [None, pa.py_buffer(np.zeros(n + 1, np.int64)),
                                                              pa.py_buffer(b"")])
        return pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), n, [None, pa.py_buffer(m.numpy())]).cast(_BIN)
    if n and not bool(torch.equal(p.starts[1:], p.starts[:-1] + p.lens[:-1])):
        return None
    offs = torch.empty(n + 1, dtype=torch.int64)
    offs[:-1] = p.starts
    offs[-1] = p.starts[-1] + p.lens[-1] if n else 0
    return pa.LargeBinaryArray.from_buffers(_BIN, n, [None, pa.py_buffer(offs.numpy()),
                                                      pa.py_buffer(p.buf.contiguous().numpy())])


def _concat(parts: list[_Seg], n: int, dev) -> _Seg:
    """Per row, the parts' bytes one after another."""
    if dev.type == "cpu" and n and not all(p.mat is not None for p in parts):
        arrs = [_arrow(p, n) for p in parts]
        if all(a is not None for a in arrs):  # Arrow joins each row's parts in C++
            return _Seg(arr=pc.binary_join_element_wise(*arrs, _empty()) if len(arrs) > 1 else arrs[0])
    if all(p.mat is not None for p in parts):
        return _Seg(mat=torch.cat([p.mat for p in parts], 1) if parts else
                    torch.zeros((n, 0), dtype=torch.uint8, device=dev))
    lens = torch.zeros(n, dtype=torch.int64, device=dev)
    for p in parts:
        lens = lens + (p.lens if p.mat is None else p.mat.shape[1])
    offsets = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    torch.cumsum(lens, 0, out=offsets[1:])
    out = torch.zeros(int(offsets[-1]), dtype=torch.uint8, device=dev)
    at = offsets[:-1].clone()
    for p in parts:
        if p.mat is not None:  # the same width on every row: placed as a block per row
            w = p.mat.shape[1]
            if w:
                out[at.unsqueeze(1) + torch.arange(w, device=dev)] = p.mat
            at = at + w
            continue
        total = int(p.lens.sum())
        if total:
            # each byte's row and place in its segment, once for both sides of the copy
            o = torch.zeros(n + 1, dtype=torch.int64, device=dev)
            torch.cumsum(p.lens, 0, out=o[1:])
            rows = torch.repeat_interleave(torch.arange(n, device=dev), p.lens, output_size=total)
            local = torch.arange(total, device=dev) - o[:-1][rows]
            out[at[rows] + local] = p.buf[p.starts[rows] + local]
        at = at + p.lens
    return _Seg(buf=out, starts=offsets[:-1], lens=lens)


def _marker(valid: torch.Tensor) -> torch.Tensor:
    return torch.where(valid, VALUE, NULL).to(torch.uint8).unsqueeze(1)


def _child(col: Column, n: int) -> _Seg:
    """A child value's key: VALUE then the value's key, or NULL (then, for a fixed width, zeros)."""
    dev = col.data.device
    seg = _value(col, n)
    if col.valid is None and col.type.kind != "null":
        valid = torch.ones(n, dtype=torch.bool, device=dev)
    else:
        valid = torch.zeros(n, dtype=torch.bool, device=dev) if col.type.kind == "null" else col.valid.reshape(-1)
    if seg.mat is not None:
        return _Seg(mat=torch.cat([_marker(valid), seg.mat * valid.unsqueeze(1).to(torch.uint8)], 1))
    if seg.arr is not None:  # (CPU) a NULL child's bytes dropped by Arrow
        kept = pc.if_else(pa.array(valid.numpy()), seg.arr, _empty())
        return _concat([_Seg(mat=_marker(valid)), _Seg(arr=kept)], n, dev)
    buf, st, ln = seg.var()
    return _concat([_Seg(mat=_marker(valid)), _Seg(buf=buf, starts=st, lens=ln * valid)], n, dev)


def _fixed_width(t: LType) -> int | None:
    """The key width of every value of type ``t`` where it has one (numbers, structs of them)."""
    if t.kind == "null":
        return 0
    if t.kind in ("string", "list", "map"):
        return None
    if t.kind == "struct":
        ws = [_fixed_width(u) for _, u in t.args]
        return None if any(w is None for w in ws) else sum(1 + w for w in ws)
    return _WIDTH


def _value(col: Column, n: int) -> _Seg:
    """Each row's value key, whatever its validity (a NULL row's bytes are any)."""
    dev = col.data.device
    k = col.type.kind
    if k == "null" or n == 0:
        # (no rows: still the form the type always has, or an empty list's END block would be
        # as wide as this chunk's entries and its key differ from another chunk's)
        w = 0 if k == "null" else _fixed_width(col.type)
        if w is None:
            z = torch.zeros(0, dtype=torch.int64, device=dev)
            return _Seg(buf=torch.zeros(0, dtype=torch.uint8, device=dev), starts=z, lens=z)
        return _Seg(mat=torch.zeros((n, w), dtype=torch.uint8, device=dev))
    if k == "string":
        return _string(col, n)
    if col.type.is_nested:
        vals = row_values(col)
        if k == "struct":
            return _concat([_child(c, vals.size) for c in vals.children], n, dev)
        m = int(vals.offsets[-1])
        entries = _concat([_child(c, m) for c in vals.children], m, dev)
        sizes = vals.offsets[1:] - vals.offsets[:-1]
        rows = torch.arange(n, dtype=torch.int64, device=dev)
        if entries.mat is not None:
            # Entries of one width w: each list is its entries' blocks and an END block, so the
            # placement is per block (an END block is END and zeros).
            w = entries.mat.shape[1]
            out = torch.zeros((m + n, w), dtype=torch.uint8, device=dev)
            out[torch.arange(m, dtype=torch.int64, device=dev) + entry_rows(vals.offsets)] = entries.mat
            out[vals.offsets[1:] + rows, 0] = END
            return _Seg(buf=out.reshape(-1), starts=(vals.offsets[:-1] + rows) * w, lens=(sizes + 1) * w)
        buf, st, ln = entries.var()
        # an entry's bytes are contiguous and in order: a row's entries are one segment
        eoff = torch.zeros(m + 1, dtype=torch.int64, device=dev)
        torch.cumsum(ln, 0, out=eoff[1:])
        first, last = eoff[vals.offsets[:-1]], eoff[vals.offsets[1:]]
        end = torch.full((n, 1), END, dtype=torch.uint8, device=dev)
        return _concat([_Seg(buf=buf, starts=first, lens=last - first), _Seg(mat=end)], n, dev)
    if k not in _SCALAR:
        raise UnsupportedError(f"comparing nested values holding {k.upper()}")
    v = col.data.reshape(-1).expand(n)
    v = float_order_key(v) if v.is_floating_point() else v.to(torch.int64)
    v = v ^ _SIGN
    shifts = torch.arange(60, -1, -6, device=dev)  # 11 characters, most significant first
    return _Seg(mat=((v.unsqueeze(1) >> shifts) & 63).to(torch.uint8) + _DIGIT)


def _string(col: Column, n: int) -> _Seg:
    """Each string's UTF-8 bytes (0x00 and 0x01 escaped as 0x01 0x02 and 0x01 0x03), then the
    terminator 0x01 0x01: below every byte that can follow, so a prefix sorts first; the
    bytes' order is the strings' and the key stays valid UTF-8."""
    dev = col.data.device
    bufs = string_buffers(col.dictionary)
    if bufs is None:
        offs, data = np.zeros(1, np.int64), np.zeros(0, np.uint8)
    else:
        offs, data = bufs
    offs = np.ascontiguousarray(offs, dtype=np.int64)
    esc = data < 2
    if esc.any():  # (rare) each 0x00 / 0x01 byte becomes two
        shift = np.concatenate([[0], np.cumsum(esc)])
        pos = np.arange(len(data)) + shift[:-1]
        out = np.empty(len(data) + int(shift[-1]), dtype=np.uint8)
        out[pos] = np.where(esc, 1, data)
        out[pos[esc] + 1] = data[esc] + 2
        data, offs = out, offs + shift[offs]
    offs_t = to_device(host_tensor(offs), dev)
    codes = col.data.reshape(-1).expand(n).long()
    if offs_t.numel() == 1:
        codes = torch.zeros(n, dtype=torch.int64, device=dev)
        offs_t = torch.zeros(2, dtype=torch.int64, device=dev)
    if dev.type == "cpu" and n:  # each distinct string's key once, then taken per row (Arrow)
        ends = np.diff(offs)
        keys = pa.LargeBinaryArray.from_buffers(_BIN, len(offs) - 1, [None, pa.py_buffer(offs - offs[0]),
                                                                        pa.py_buffer(np.ascontiguousarray(
                                                                            data[offs[0]:offs[0] + ends.sum()]))])
        keys = pc.binary_join_element_wise(keys, pa.scalar(bytes([_TERM, _TERM]), _BIN), _empty())
        return _Seg(arr=keys.take(pa.array(codes.numpy())))
    starts = offs_t[codes]
    lens = offs_t[codes + 1] - starts
    term = torch.full((n, 2), _TERM, dtype=torch.uint8, device=dev)
    return _concat([_Seg(buf=to_device(host_tensor(np.ascontiguousarray(data)), dev), starts=starts, lens=lens),
                    _Seg(mat=term)], n, dev)
