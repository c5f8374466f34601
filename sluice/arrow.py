"""Arrow <-> sluice, in one module: every place a Column or a Chunk becomes Arrow or comes back
from it (scans and CSV files, results, CAST of strings, spill pages, rows between ranks).

Two forms. The *value* form (:func:`arrow_to_column`, :func:`column_to_arrow`) is what a user
reads and a file holds: decimals as decimal128(38, s), dates as date32, a SUM past 64 bits as its
exact decimal. The *page* form (:func:`page_to_batch`, :func:`batch_to_page`) is exact for
sluice's own representation -- every column's type in field metadata, strings as values (or, for
a low-cardinality column, its dictionary and codes), a SUM past 64 bits as its digits, rows
without columns counted -- for spill files and the exchange. Nested columns (LIST, STRUCT, MAP)
are Arrow's nested arrays in both forms: their children convert as columns of their own, one
level at a time (offsets, validity and child arrays as buffers: no Python over rows).

Decimals become int64 scaled integers by viewing the decimal128 value buffer as int64 pairs
and keeping the low words (checked: the high word must be the low word's sign extension).
Strings that arrive as dictionaries keep them; plain strings (high-cardinality columns such
as comments) get identity codes over the array itself instead of being hashed: a dictionary
need not be unique (``unify_dictionaries`` deduplicates where equality matters), and hashing
a million distinct comments per chunk cost more than decoding them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Chunk, Column, NestedValues, host_tensor, row_values, shared_entries
from sluice.errors import DataError, UnsupportedError
from sluice.kernels.checks import fail_if
from sluice.kernels.infinite import TIMESTAMP_INFINITY, widen_infinite
from sluice.kernels.bits import bits_to_blob
from sluice.types import LType, from_arrow, is_bit, split_interval, to_arrow
import decimal as _dec



def _filled(arr: pa.Array, value) -> pa.Array:
    """Nulls replaced by ``value`` (a no-op, not a copy, when there are none)."""
    return arr.fill_null(value) if arr.null_count else arr


def _valid_numpy(arr: pa.Array) -> np.ndarray | None:
    """``arr``'s validity as a bool array (None: no NULLs), unpacked from its bitmap with numpy:
    ``is_valid().to_numpy()`` took 12x as long (TPC-DS store_sales, whose key columns all hold
    NULLs: a tenth of q17's samples)."""
    if arr.null_count == 0:
        return None
    bitmap = arr.buffers()[0] if arr.type.num_buffers >= 2 and not pa.types.is_dictionary(arr.type) else None
    if bitmap is None:
        return arr.is_valid().to_numpy(zero_copy_only=False)
    n, off = len(arr), arr.offset
    bits = np.frombuffer(bitmap, dtype=np.uint8, count=(off + n + 7) // 8)
    return np.unpackbits(bits, bitorder="little", count=off + n)[off:].view(np.bool_)


def _validity(arr: pa.Array) -> torch.Tensor | None:
    v = _valid_numpy(arr)
    return None if v is None else host_tensor(v)


def _numbers(arr: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    """The values of an integer or float array as numpy, NULLs as 0 -- from its buffers:
    ``fill_null(0).to_numpy()`` copied the array through a compute kernel (0.23 ms per 131 K
    int32 against 0.03)."""
    t = arr.type
    if not (pa.types.is_integer(t) or (pa.types.is_floating(t) and t != pa.float16())) or arr.buffers()[1] is None:
        filled = arr.fill_null(0) if valid is not None else arr
        return filled.to_numpy(zero_copy_only=False)
    data = np.frombuffer(arr.buffers()[1], dtype=t.to_pandas_dtype(), count=arr.offset + len(arr))[arr.offset:]
    if valid is None:
        return data
    return data * valid if pa.types.is_integer(t) else np.where(valid, data, 0)


def widen_timestamps(v: torch.Tensor, factor: int, valid: torch.Tensor | None) -> torch.Tensor:
    """Seconds or milliseconds since the epoch as microseconds; DuckDB's 'infinity' /
    '-infinity' (the int64 extremes in any unit) stay infinities (:mod:`sluice.kernels.infinite`),
    other values beyond that range raise instead of wrapping around."""
    finite, inf = widen_infinite(v, factor)
    limit = TIMESTAMP_INFINITY // factor  # (not abs(): the int64 minimum is its own absolute value)
    fail_if((finite > limit) | (finite < -limit), "a timestamp is beyond the range of microsecond "
            "timestamps (about 290,000 years)", valid, DataError)
    big = torch.tensor(TIMESTAMP_INFINITY, dtype=v.dtype, device=v.device)
    # (the mask at hand: with_infinities would first ask the host whether there are any)
    return torch.where(inf, torch.where(v > 0, big, -big), finite * factor)


def arrow_to_column(arr: pa.Array | pa.ChunkedArray, t: LType | None = None,
                    device: torch.device | None = None) -> Column:
    """Convert one Arrow array (or chunked array) to a Column on ``device``."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            arr = arr.chunk(0)
        elif pa.types.is_dictionary(arr.type):
            arr = arr.unify_dictionaries().combine_chunks() if arr.num_chunks else pa.array([], arr.type)
        else:
            arr = arr.combine_chunks()
    t = t or from_arrow(arr.type)
    valid = _validity(arr)
    at = arr.type
    if t.is_nested:
        if pa.types.is_dictionary(at):  # a page's rows sharing entries (:func:`page_nested`)
            codes = host_tensor(np.ascontiguousarray(_numbers(arr.indices, None if valid is None else valid.numpy()),
                                                     dtype=np.int64))
            return _placed(Column(codes, t, valid, _nested_values(arr.dictionary, t)), device)
        return _placed(Column(torch.arange(len(arr), dtype=torch.int64), t, valid, _nested_values(arr, t)), device)
    if t.kind == "string":
        if not pa.types.is_dictionary(at):
            dictionary = _filled(arr if pa.types.is_string(at) else arr.cast(pa.string()), "")  # string_view
            return _placed(Column(torch.arange(len(arr), dtype=torch.int32), t, valid, dictionary), device)
        codes = arr.indices
        if codes.type != pa.int32():
            codes = codes.cast(pa.int32())
        data = host_tensor(_numbers(codes, _valid_numpy(codes)))
        dictionary = arr.dictionary
        if dictionary.type != pa.string():
            dictionary = dictionary.cast(pa.string())
        try:  # pyarrow checks UTF-8 of plain strings as it reads them, not of dictionary pages
            dictionary.validate(full=True)
        except pa.ArrowInvalid as e:
            raise DataError(f"a string column holds invalid UTF-8 ({str(e).splitlines()[0]})") from None
        col = Column(data, t, valid, dictionary)
    elif t.kind == "decimal":
        if pa.types.is_decimal(at) and at.bit_width == 128:
            buf = np.frombuffer(arr.buffers()[1], dtype=np.int64)
            pairs = buf[2 * arr.offset: 2 * (arr.offset + len(arr))].reshape(-1, 2)
            lo = np.ascontiguousarray(pairs[:, 0])
            # Precision <= 18 always fits int64; wider columns are checked value by value.
            if at.precision > 18 and not np.array_equal(pairs[:, 1], lo >> 63):
                raise DataError("a decimal value does not fit in 18 digits")
            data = host_tensor(lo)
        elif pa.types.is_decimal(at):
            data = host_tensor(
                np.asarray(pc.multiply(arr.cast(pa.float64()), 10.0 ** t.scale)
                           .to_numpy(zero_copy_only=False)).round().astype(np.int64))
        else:
            data = host_tensor(arr.cast(pa.int64()).to_numpy(zero_copy_only=False)) * 10 ** t.scale
        col = Column(data, t, valid)
    elif t.is_temporal:
        if pa.types.is_timestamp(at) and at.unit == "ns":
            try:
                arr = arr.cast(pa.timestamp("us", tz=at.tz))
            except pa.ArrowInvalid:
                raise UnsupportedError("timestamps with nanoseconds (sluice keeps microseconds)") from None
        if pa.types.is_timestamp(at) and at.unit in ("s", "ms"):
            raw = host_tensor(_filled(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False))
            data = widen_timestamps(raw, 1_000_000 if at.unit == "s" else 1_000, valid)
        else:
            if pa.types.is_date64(at):  # milliseconds: whole days (a cast to int32 refuses date64)
                storage = pc.divide(arr.cast(pa.int64()), 86_400_000).cast(pa.int32())
            elif not pa.types.is_timestamp(at):
                storage = arr.cast(pa.int32() if t.kind == "date" else pa.int64())
            else:
                storage = arr.cast(pa.timestamp("us", tz=at.tz)).cast(pa.int64())
            data = host_tensor(_numbers(storage, _valid_numpy(storage)))
        col = Column(data, t, valid)
    elif t.kind == "bool":
        data = host_tensor(_filled(arr, False).to_numpy(zero_copy_only=False).astype(np.bool_))
        col = Column(data, t, valid)
    else:
        np_arr = _numbers(arr, None if valid is None else valid.numpy())
        data = host_tensor(np.ascontiguousarray(np_arr, dtype=np.dtype(str(t.torch_dtype).split(".")[1])))
        col = Column(data, t, valid)
    return _placed(col, device)


def _nested_values(arr: pa.Array, t: LType) -> NestedValues:
    """The nested values of a LIST / LARGE_LIST, MAP or STRUCT array, one entry per row: its
    offsets as int64 and its children as columns (converted recursively)."""
    if t.kind == "struct":
        if not pa.types.is_struct(arr.type):
            raise UnsupportedError(f"column type {arr.type} read as {t}")
        kids = tuple(arrow_to_column(arr.field(i), u) for i, (_, u) in enumerate(t.args))
        return NestedValues(kids, None, len(arr))
    if pa.types.is_fixed_size_list(arr.type) or pa.types.is_list_view(arr.type) or pa.types.is_large_list_view(arr.type):
        raise UnsupportedError(f"column type {arr.type}")
    offsets = host_tensor(np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64))
    if t.kind == "map":
        entries = arr.values  # struct<key, value>, not sliced: the offsets index it
        kids = (arrow_to_column(entries.field(0), t.args[0]), arrow_to_column(entries.field(1), t.args[1]))
    else:
        kids = (arrow_to_column(arr.values, t.element),)
    return NestedValues(kids, offsets, len(arr))


def _placed(col: Column, device: torch.device | None) -> Column:
    return to_device(col, device) if device is not None and device.type != "cpu" else col


def to_device(col: Column, device: torch.device) -> Column:
    if col.type.is_nested:
        return Column(col.data.to(device), col.type, None if col.valid is None else col.valid.to(device),
                      col.dictionary.to(device))
    nb = device.type == "cuda"
    data = col.data.pin_memory().to(device, non_blocking=nb) if nb else col.data.to(device)
    valid = None if col.valid is None else col.valid.to(device, non_blocking=False)
    return Column(data, col.type, valid, col.dictionary)


def _validity_bitmap(mask: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (bit set = valid) of a NULL mask, and the NULL count."""
    if mask is None:
        return None, 0
    nulls = int(mask.sum())
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(~mask, bitorder="little")), nulls


def numpy_to_arrow(values: np.ndarray, arrow_type: pa.DataType, mask: np.ndarray | None = None) -> pa.Array:
    """A fixed-width Arrow array over a NumPy array's buffer (no copy where the layout agrees).

    ``pa.array(ndarray)`` would do, but it probes for pandas on every call, which imports
    pandas (half a second) when it is installed; building from buffers does not."""
    validity, nulls = _validity_bitmap(mask)
    if pa.types.is_boolean(arrow_type):
        data = pa.py_buffer(np.packbits(np.ascontiguousarray(values, dtype=np.bool_), bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, data], null_count=nulls)


def result_field(name: str, t: LType) -> pa.Field:
    """A result column's Arrow field: a BIT is DuckDB's binary form of it (as DuckDB hands a BIT
    to Arrow), marked so that the printers show its bits."""
    if is_bit(t):
        return pa.field(name, pa.binary(), metadata={b"sluice.type": b"bit"})
    return pa.field(name, to_arrow(t))


def result_array(col: Column, t: LType) -> pa.Array:
    """A result column of the plan's type ``t`` as Arrow (:func:`result_field`'s type)."""
    arr = column_to_arrow(col)
    return bits_to_blob(arr) if is_bit(t) else arr


def column_to_arrow(col: Column) -> pa.Array:
    """Convert a Column back to Arrow (strings decoded on the host)."""
    t = col.type
    data = col.data.detach().cpu()
    n = int(data.numel())
    mask = None if col.valid is None else ~col.valid.cpu().numpy()
    if t.kind == "null":
        return pa.nulls(n)
    if t.is_nested:
        return _nested_to_arrow(col, mask)
    if t.kind == "string":
        codes = numpy_to_arrow(data.numpy().astype(np.int32), pa.int32(), mask)
        if n == 0:
            return pa.array([], pa.string())
        return col.dictionary.take(codes)
    if t.kind == "decimal" and col.wide is not None:
        vals = [None if (mask is not None and mask[i]) else _dec.Decimal(v).scaleb(-t.scale)
                for i, v in enumerate(col.wide)]
        return pa.array(vals, pa.decimal128(38, t.scale))
    if t.kind == "decimal":
        lo = data.numpy().astype(np.int64)
        pairs = np.empty((n, 2), dtype=np.int64)
        pairs[:, 0] = lo
        pairs[:, 1] = lo >> 63
        validity, nulls = _validity_bitmap(mask)
        return pa.Array.from_buffers(pa.decimal128(38, t.scale), n,
                                     [validity, pa.py_buffer(pairs)], null_count=nulls)
    if t.kind == "date":
        return numpy_to_arrow(data.numpy().astype(np.int32), pa.date32(), mask)
    if t.is_timestamp:
        return numpy_to_arrow(data.numpy().astype(np.int64), to_arrow(t), mask)
    if t.kind == "interval":  # (months, days, nanoseconds), split as DuckDB splits ts - ts
        days, rest = split_interval(data.numpy().astype(np.int64))
        mdn = np.zeros(n, dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
        mdn["days"] = days
        mdn["nanos"] = rest * 1000
        validity, nulls = _validity_bitmap(mask)
        return pa.Array.from_buffers(pa.month_day_nano_interval(), n, [validity, pa.py_buffer(mdn)],
                                     null_count=nulls)
    return numpy_to_arrow(data.numpy(), to_arrow(t), mask)


def _nested_to_arrow(col: Column, mask: np.ndarray | None) -> pa.Array:
    """A nested column as Arrow's LIST (32-bit offsets, as DuckDB writes), MAP or STRUCT array."""
    t = col.type
    v = row_values(col)
    m = None if mask is None else pa.array(np.broadcast_to(mask, (v.size,)))
    kids = [column_to_arrow(c) for c in v.children]
    if t.kind == "struct":
        fields = [pa.field(n, a.type) for (n, _), a in zip(t.args, kids)]
        return pa.StructArray.from_arrays(kids, fields=fields, mask=m)
    o = v.offsets.cpu().numpy()
    if o[-1] >= 2 ** 31:
        raise UnsupportedError("a result list column with more than 2**31 elements in one batch")
    offsets = numpy_to_arrow(o.astype(np.int32), pa.int32())
    if t.kind == "map":
        return pa.MapArray.from_arrays(offsets, kids[0], kids[1], mask=m)
    return pa.ListArray.from_arrays(offsets, kids[0], mask=m)


# ---------------------------------------------------------------- page <-> record batch


def page_to_batch(page: Chunk, dictionaries: bool = True) -> pa.RecordBatch:
    """``page`` in the exact page form; with ``dictionaries`` low-cardinality strings as
    dictionary + codes (``page_dictionaries``), else by value."""
    arrays, fields = [], []
    n = page.num_rows
    for name, c in page.columns.items():
        c = c.expand(n)
        mask = None if c.valid is None else ~c.valid.cpu().numpy()
        meta = {"k": c.type.kind, "s": str(c.type.scale), "p": str(c.type.precision)}
        if is_bit(c.type):
            meta["a"] = "bit"
        if c.type.is_nested:  # Arrow's nested array (shared entries once), its type the column's
            arr = page_nested(c, dictionaries)
            meta["n"] = "1"
        elif c.wide is not None:  # a SUM beyond 64 bits: its exact values, as decimal digits
            arr = pa.array([str(v) for v in c.wide], pa.string(), mask=mask)
            meta["w"] = "1"
        elif c.type.kind == "string":
            arr = _page_strings(c, n, mask, dictionaries)
        else:
            data = np.ascontiguousarray(c.data.cpu().numpy())
            arr = numpy_to_arrow(data, pa.from_numpy_dtype(data.dtype), mask)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, metadata=meta))
    if not arrays:  # rows without columns (SELECT 1 IN (...)'s probe side): keep their count
        arrays, fields = [pa.nulls(n)], [pa.field(_ROWS_ONLY, pa.null())]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def page_nested(col: Column, dictionaries: bool = True) -> pa.Array:
    """A nested column in the page form, whose cost is its entries' elements, never rows x list
    length: a LIST / MAP column whose rows share entries (a window's list per partition, which
    every row of the partition points at; a constant) is Arrow's dictionary array of the distinct
    entries the rows use and a code per row, where writing each row's elements would cost more
    than twice that (an ordered LIST over a million events once asked a spill write for 6 GiB).
    Otherwise by value, as Arrow's nested array; either way its children take this form in turn
    (strings as in :func:`page_to_batch`). :func:`arrow_to_column` reads both forms."""
    mask = None if col.valid is None else ~col.valid.reshape(-1).expand(len(col)).cpu().numpy()
    shared = None if col.type.kind == "struct" else shared_entries(col)
    if shared is None:
        return _page_nested_values(col, mask, dictionaries)
    entries, codes = shared
    values = _page_nested_values(Column(entries, col.type, None, col.dictionary), None, dictionaries)
    return pa.DictionaryArray.from_arrays(numpy_to_arrow(codes.cpu().numpy(), pa.int32(), mask), values)


def _page_nested_values(col: Column, mask: np.ndarray | None, dictionaries: bool) -> pa.Array:
    """``col``'s rows by value (:func:`_nested_to_arrow`'s layout), its children in the page form."""
    t = col.type
    v = row_values(col)
    m = None if mask is None else pa.array(mask)
    kids = [_page_child(c, dictionaries) for c in v.children]
    if t.kind == "struct":
        fields = [pa.field(n, a.type) for (n, _), a in zip(t.args, kids)]
        return pa.StructArray.from_arrays(kids, fields=fields, mask=m)
    o = v.offsets.cpu().numpy()
    if t.kind == "map":
        if o[-1] >= 2 ** 31:
            raise UnsupportedError("a MAP column with more than 2**31 entries in one page")
        return pa.MapArray.from_arrays(numpy_to_arrow(o.astype(np.int32), pa.int32()), kids[0], kids[1], mask=m)
    if o[-1] >= 2 ** 31:
        return pa.LargeListArray.from_arrays(numpy_to_arrow(o, pa.int64()), kids[0], mask=m)
    return pa.ListArray.from_arrays(numpy_to_arrow(o.astype(np.int32), pa.int32()), kids[0], mask=m)


def _page_child(c: Column, dictionaries: bool) -> pa.Array:
    """A child column of nested values in the page form: nested ones as :func:`page_nested`,
    low-cardinality strings as their dictionary and codes, the rest by value."""
    if c.type.is_nested:
        return page_nested(c, dictionaries)
    if c.type.kind == "string" and not is_bit(c.type) and len(c):
        mask = None if c.valid is None else ~c.valid.cpu().numpy()
        return _page_strings(c, len(c), mask, dictionaries)
    return column_to_arrow(c)


#: A page's string column travels as its dictionary and int32 codes when the dictionary has at
#: most this share of the rows' count (a low-cardinality column read from a dictionary page, or
#: a partition of one): each row then costs 4 bytes instead of its string. Otherwise -- plain
#: strings (identity codes), or a big dictionary a small page points into -- by value.
PAGE_DICTIONARY_SHARE = 0.5


def _page_strings(c: Column, n: int, mask: np.ndarray | None, dictionaries: bool = True) -> pa.Array:
    d = c.dictionary
    if dictionaries and 0 < len(d) <= PAGE_DICTIONARY_SHARE * n:
        codes = c.data.cpu().numpy()
        if codes.dtype != np.int32:
            codes = codes.astype(np.int32)
        return pa.DictionaryArray.from_arrays(numpy_to_arrow(codes, pa.int32(), mask), d)
    codes = c.data.cpu().numpy().astype(np.int64, copy=False)
    values = d.take(pa.array(codes)) if n else pa.array([], pa.string())
    return values if mask is None else _with_nulls(values, mask)


#: The one field of a spilled page that has rows but no columns.
_ROWS_ONLY = "\x00rows"


def _with_nulls(values: pa.Array, mask: np.ndarray) -> pa.Array:
    return pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), values)


def batch_to_page(batch: pa.RecordBatch, device: torch.device | None = None) -> Chunk:
    cols = {}
    n = batch.num_rows
    for f, arr in zip(batch.schema, batch.columns):
        if f.name == _ROWS_ONLY:
            continue
        md = f.metadata or {}
        if md.get(b"n") == b"1":  # a nested column, by value
            col = arrow_to_column(arr, None, device)
            cols[f.name] = col
            continue
        t = LType(md[b"k"].decode(), int(md[b"s"].decode()), int(md.get(b"p", b"0").decode()),
                  ("bit",) if md.get(b"a") == b"bit" else ())
        valid = None
        if arr.null_count:
            valid = host_tensor(arr.is_valid().to_numpy(zero_copy_only=False))
        if md.get(b"w") == b"1":  # exact values of a SUM beyond 64 bits
            wide = tuple(int(v) if v is not None else 0 for v in arr.to_pylist())
            col = Column(torch.zeros(n, dtype=t.torch_dtype), t, valid, None, wide)
        elif t.kind == "string" and pa.types.is_dictionary(arr.type):  # dictionary + codes
            codes = arr.indices.fill_null(0) if arr.null_count else arr.indices
            col = Column(host_tensor(codes.to_numpy(zero_copy_only=False)), t, valid, arr.dictionary)
        elif t.kind == "string":
            values = arr.fill_null("") if arr.null_count else arr
            col = Column(torch.arange(n, dtype=torch.int32), t, valid, values)
        else:
            filled = arr.fill_null(False if t.kind == "bool" else 0) if arr.null_count else arr
            np_arr = filled.to_numpy(zero_copy_only=False)
            col = Column(host_tensor(np.ascontiguousarray(np_arr)), t, valid)
        if device is not None and device.type != "cpu":
            col = Column(col.data.to(device), col.type, None if col.valid is None else col.valid.to(device),
                         col.dictionary.to(device) if col.type.is_nested else col.dictionary, col.wide)
        cols[f.name] = col
    return Chunk(cols, n, home=device if device is not None else torch.device("cpu"))
