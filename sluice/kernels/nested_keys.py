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

The encoding, all ASCII (valid UTF-8, so Arrow's string kernels order it bytewise):

- a number, date, time or boolean: its int64 (floats through ``float_order_key``: -0.0 is 0.0,
  NaN above +inf), sign bit flipped, as 11 characters of 6 bits from ``'0'``, most significant
  first -- one width for every integer type, so BIGINT[] and INTEGER[] values compare;
- a string: each UTF-8 byte as two characters (its nibbles from ``'0'``), then ``'!'``, which is
  below them (a prefix first);
- a child value (list element, struct field, map key or value): ``'"'`` then its key, or
  ``'#'`` for NULL (above every value);
- a list or map: its entries' child keys, then ``'!'`` (below ``'"'`` and ``'#'``: a prefix
  first); a struct: its fields' child keys in order.

Built level by level with gathers over the children (segments of bytes concatenated per
row, never a loop over rows); a top-level NULL is a NULL key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, row_values, child_positions
from sluice.kernels.buffers import host_tensor, string_buffers, to_device
from sluice.kernels.values import float_order_key
from sluice.types import STRING, LType

END, VALUE, NULL = 0x21, 0x22, 0x23
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
    value is."""
    if not col.type.is_nested:
        return col
    if col.is_const:  # one value, kept a constant (it broadcasts against the other side)
        k = order_key(col.expand(1))
        v = None if k.valid is None else k.valid.reshape(())
        return Column(k.data.reshape(()), STRING, v, k.dictionary)
    return order_key(col)


def order_key(col: Column) -> Column:
    """The order key (see the module docstring) of each row of the nested column ``col``."""
    n = len(col)
    col = col.expand(n)
    if col.wide is not None:
        raise ValueError("a wide column has no order key")
    buf, starts, lens = _value(col, n)
    valid = None if col.valid is None else col.valid.reshape(-1).expand(n)
    if valid is not None:
        lens = lens * valid
    out, offsets = _gather(buf, starts, lens)
    data = out.cpu().numpy()
    offs = offsets.cpu().numpy()
    big = offs[-1] >= (1 << 31)
    # NULL rows are empty strings in the dictionary (the column's validity says NULL): the
    # dictionary kernels then never meet a NULL entry
    arr = pa.Array.from_buffers(pa.large_string() if big else pa.string(), n,
                                [None, pa.py_buffer(offs if big else offs.astype(np.int32)), pa.py_buffer(data)])
    if big:
        arr = arr.cast(pa.string())
    codes = torch.arange(n, dtype=torch.int32, device=col.data.device)
    return Column(codes, STRING, valid, arr)


# ---------------------------------------------------------------- segments of bytes per row


def _gather(buf: torch.Tensor, starts: torch.Tensor, lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' segments ``buf[starts[i] : starts[i] + lens[i]]`` end to end, and their offsets."""
    offsets = torch.zeros(lens.numel() + 1, dtype=torch.int64, device=lens.device)
    torch.cumsum(lens, 0, out=offsets[1:])
    return buf[child_positions(starts, lens, offsets)], offsets


def _concat(parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], n: int, dev
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row, the parts' segments one after another: (buffer, starts, lengths)."""
    lens = torch.zeros(n, dtype=torch.int64, device=dev)
    for _, _, ln in parts:
        lens = lens + ln
    offsets = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    torch.cumsum(lens, 0, out=offsets[1:])
    out = torch.zeros(int(offsets[-1]), dtype=torch.uint8, device=dev)
    at = offsets[:-1].clone()
    for buf, st, ln in parts:
        o = torch.zeros(n + 1, dtype=torch.int64, device=dev)
        torch.cumsum(ln, 0, out=o[1:])
        out[child_positions(at, ln, o)] = buf[child_positions(st, ln, o)]
        at = at + ln
    return out, offsets[:-1], lens


def _byte(b: int, lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The one byte ``b`` where ``lens`` is 1, nothing where 0."""
    return (torch.tensor([b], dtype=torch.uint8, device=lens.device), torch.zeros_like(lens), lens)


def _child(col: Column, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A child value's key: VALUE then the value's key, or NULL."""
    dev = col.data.device
    ones = torch.ones(n, dtype=torch.int64, device=dev)
    buf, st, ln = _value(col, n)
    if col.valid is None and col.type.kind != "null":
        return _concat([_byte(VALUE, ones), (buf, st, ln)], n, dev)
    valid = torch.zeros(n, dtype=torch.bool, device=dev) if col.type.kind == "null" else col.valid.reshape(-1)
    v = valid.to(torch.int64)
    return _concat([_byte(VALUE, v), _byte(NULL, 1 - v), (buf, st, ln * v)], n, dev)


def _value(col: Column, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each row's value key, whatever its validity (a NULL row's bytes are any)."""
    dev = col.data.device
    k = col.type.kind
    if k == "null" or n == 0:
        z = torch.zeros(n, dtype=torch.int64, device=dev)
        return torch.zeros(0, dtype=torch.uint8, device=dev), z, z
    if k == "string":
        return _string(col, n)
    if col.type.is_nested:
        vals = row_values(col)
        if k == "struct":
            return _concat([_child(c, vals.size) for c in vals.children], n, dev)
        m = int(vals.offsets[-1])
        entries = _concat([_child(c, m) for c in vals.children], m, dev) if len(vals.children) > 1 \
            else _child(vals.children[0], m)
        buf, st, ln = entries
        # an entry's bytes are contiguous and in order: a row's entries are one segment
        eoff = torch.zeros(m + 1, dtype=torch.int64, device=dev)
        torch.cumsum(ln, 0, out=eoff[1:])
        packed, _ = _gather(buf, st, ln)
        first, last = eoff[vals.offsets[:-1]], eoff[vals.offsets[1:]]
        return _concat([(packed, first, last - first), _byte(END, torch.ones(n, dtype=torch.int64, device=dev))],
                       n, dev)
    if k not in _SCALAR:
        from sluice.errors import UnsupportedError
        raise UnsupportedError(f"comparing nested values holding {k.upper()}")
    v = col.data.reshape(-1).expand(n)
    v = float_order_key(v) if v.is_floating_point() else v.to(torch.int64)
    v = v ^ _SIGN
    shifts = torch.arange(60, -1, -6, device=dev)  # 11 characters, most significant first
    chars = ((v.unsqueeze(1) >> shifts) & 63).to(torch.uint8) + _DIGIT
    return (chars.reshape(-1), torch.arange(n, device=dev) * _WIDTH,
            torch.full((n,), _WIDTH, dtype=torch.int64, device=dev))


def _string(col: Column, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each string's bytes as nibble characters, then END."""
    dev = col.data.device
    bufs = string_buffers(col.dictionary)
    if bufs is None:
        offs, data = np.zeros(1, np.int64), np.zeros(0, np.uint8)
    else:
        offs, data = bufs
    nib = np.empty(2 * len(data) + 1, dtype=np.uint8)
    nib[0:-1:2] = (data >> 4) + _DIGIT
    nib[1:-1:2] = (data & 15) + _DIGIT
    nib[-1] = END
    # per entry: its nibbles and the END after them (written where the next entry starts: a copy
    # per entry of the END, so entries get their own terminator by a second segment)
    offs_t = to_device(host_tensor(np.ascontiguousarray(offs, dtype=np.int64)), dev)
    codes = col.data.reshape(-1).expand(n).long()
    if offs_t.numel() == 1:
        codes = torch.zeros(n, dtype=torch.int64, device=dev)
    starts = offs_t[codes] * 2
    lens = (offs_t[codes + 1] - offs_t[codes]) * 2 if offs_t.numel() > 1 else torch.zeros(n, dtype=torch.int64,
                                                                                            device=dev)
    nib_t = to_device(host_tensor(nib), dev)
    end = torch.full((n,), nib.size - 1, dtype=torch.int64, device=dev)
    return _concat([(nib_t, starts, lens), (nib_t, end, torch.ones(n, dtype=torch.int64, device=dev))], n, dev)
