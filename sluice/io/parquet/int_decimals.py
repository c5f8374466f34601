"""Decimals stored as integers, read as those integers.

A Parquet DECIMAL of up to 18 digits is usually stored as INT64 (or INT32) unscaled values --
exactly what sluice keeps (a scaled int64). pyarrow, though, turns every such value into a
16-byte decimal128, and the scan then copies the low words back out: on TPC-H SF 1 lineitem's
four decimal columns, 103 ms of pyarrow decode plus 41 ms of conversion on one core, most of
it writing and reading those 16-byte values.

So for reading, the file's footer is rewritten in memory without the DECIMAL annotation of
such columns (SchemaElement fields converted_type, scale, precision and logicalType -- the
Thrift compact protocol, re-emitted field by field); pyarrow then decodes them as plain
integers, which the decoder labels with the column's decimal type again. The row groups,
column chunks, statistics and every other field are copied byte for byte, and the rewritten
footer must describe the same file (rows, row groups, column chunks, every other column's
type) or it is not used. Statistics, pruning and types still come from the original footer.

The same rewrite can leave out the footer's key-value metadata, where pyarrow keeps the Arrow
schema it wrote (``plain_strings``): files that schema types ``string_view`` (tpchgen-cli's)
then decode straight into plain strings, which is what the scan keeps, instead of into views
it copied. Any other type that schema would have changed keeps it.
"""

from __future__ import annotations

import io
import struct

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.io.parquet.thrift import CompactReader

_INT32, _INT64 = 1, 2  # parquet Type
_DECIMAL = 5  # ConvertedType.DECIMAL, and LogicalType's DECIMAL member
_ANNOTATION = {6, 7, 8, 10}  # converted_type, scale, precision, logicalType
_STRUCT, _LIST = 12, 9
_KEY_VALUE_METADATA = 5  # FileMetaData field: pyarrow's ARROW:schema lives there


def _fields(r: CompactReader) -> list[tuple[int, int, int, int]]:
    """The fields of the struct at ``r.pos`` as (id, compact type, header start, end); ``r``
    ends after the struct's stop byte."""
    out, last = [], 0
    while True:
        start = r.pos
        h = r.byte()
        if h == 0:
            return out
        delta, ctype = h >> 4, h & 0x0F
        fid = last + delta if delta else r.zigzag()
        r.skip(ctype)
        out.append((fid, ctype, start, r.pos))
        last = fid


def _header(fid: int, last: int, ctype: int) -> bytes:
    if 0 < fid - last <= 15:
        return bytes([(fid - last) << 4 | ctype])
    z = (fid << 1) ^ (fid >> 63)
    out = bytearray([ctype])
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _value_start(buf, start: int, fid_delta_byte: int) -> int:
    """Where a field's value begins after its header at ``start``."""
    if fid_delta_byte >> 4:
        return start + 1
    r = CompactReader(buf, start + 1)
    r.varint()
    return r.pos


def _i32(buf, field) -> int:
    _, _, start, _ = field
    return CompactReader(buf, _value_start(buf, start, buf[start])).zigzag()


def _is_int_decimal(buf, fields) -> bool:
    by_id = {f[0]: f for f in fields}
    if 1 not in by_id or _i32(buf, by_id[1]) not in (_INT32, _INT64):
        return False
    if 6 in by_id and _i32(buf, by_id[6]) == _DECIMAL:
        return True
    if 10 in by_id:  # a LogicalType union: its one member's id says which
        f = by_id[10]
        inner = _fields(CompactReader(buf, _value_start(buf, f[2], buf[f[2]])))
        return bool(inner) and inner[0][0] == _DECIMAL
    return False


def _without_annotation(buf, fields) -> bytes:
    out, last = bytearray(), 0
    for fid, ctype, start, end in fields:
        if fid in _ANNOTATION:
            continue
        out += _header(fid, last, ctype)
        out += buf[_value_start(buf, start, buf[start]):end]
        last = fid
    out.append(0)
    return bytes(out)


def rewrite_footer(footer: bytes, decimals: bool = True, arrow_schema: bool = True
                   ) -> tuple[bytes, list[int]] | None:
    """``footer`` (a FileMetaData) with integer-stored decimals unannotated (``decimals``) and,
    unless ``arrow_schema``, without its key-value metadata (where pyarrow keeps the Arrow
    schema that makes strings read as ``string_view``), and the schema positions of the
    unannotated elements; None when nothing changed."""
    r = CompactReader(footer)
    top = _fields(r)
    out, changed, dropped, last = bytearray(), [], False, 0
    for fid, ctype, start, end in top:
        if fid == _KEY_VALUE_METADATA and not arrow_schema:
            dropped = True
            continue
        value = _value_start(footer, start, footer[start])
        out += _header(fid, last, ctype)
        last = fid
        if fid != 2 or ctype != _LIST or not decimals:
            out += footer[value:end]
            continue
        lr = CompactReader(footer, value)
        h = lr.byte()
        size, etype = h >> 4, h & 0x0F
        if size == 15:
            size = lr.varint()
        if etype != _STRUCT:
            return None
        out += footer[value:lr.pos]  # the list's header, as it was
        for i in range(size):
            s0 = lr.pos
            fields = _fields(lr)
            if _is_int_decimal(footer, fields):
                out += _without_annotation(footer, fields)
                changed.append(i)
            else:
                out += footer[s0:lr.pos]
    out.append(0)
    return (bytes(out), changed) if changed or dropped else None


def _read_footer(path: str) -> bytes | None:
    with open(path, "rb") as f:
        f.seek(0, io.SEEK_END)
        size = f.tell()
        if size < 12:
            return None
        f.seek(size - 8)
        tail = f.read(8)
        if tail[4:] != b"PAR1":  # encrypted footers ("PARE") are left alone
            return None
        n = struct.unpack("<I", tail[:4])[0]
        if n + 8 > size:
            return None
        f.seek(size - 8 - n)
        return f.read(n)


def integer_metadata(path: str, md: pq.FileMetaData, decimals: bool = True, plain_strings: bool = False
                     ) -> tuple[pq.FileMetaData, frozenset[str]] | None:
    """Metadata of ``path`` under which its integer-stored decimals read as integers
    (``decimals``) and, with ``plain_strings``, its ``string_view``/``large_string`` columns as
    plain strings (the file's Arrow schema left out: pyarrow decodes them as views that the scan
    then copied into strings, TPC-H SF 1 o_comment 97 + 15 ms against 90), and the names of the
    decimal columns read as integers; None when nothing changes or the rewrite does not check
    out. When leaving the Arrow schema out would change any other column's type (a time zone,
    a duration), only the decimals are rewritten."""
    if not _may_change(md.schema.to_arrow_schema(), decimals, plain_strings):
        return None  # without parsing the footer: 110-270 ms for SSB SF 10 lineorder's 524 row groups
    try:
        footer = _read_footer(path)
        if footer is None:
            return None
    except OSError:
        return None
    for keep_schema in ((False, True) if plain_strings else (True,)):
        try:
            got = rewrite_footer(footer, decimals, keep_schema)
            if got is None:
                continue
            new, _ = got
            patched = pq.read_metadata(io.BytesIO(b"PAR1" + new + struct.pack("<I", len(new)) + b"PAR1"))
        except Exception:  # noqa: BLE001 - a footer this cannot rewrite is read as it is
            continue
        names = _checked(md, patched)
        if names is not None:
            return patched, names
    return None


def _may_change(types, decimals: bool, plain_strings: bool) -> bool:
    """Whether a rewrite could change any of these fields' types (nested ones included): a
    decimal of up to 18 digits, or a view / large string or binary."""
    for f in types:
        t = f.type
        if decimals and pa.types.is_decimal(t) and t.precision <= 18:
            return True
        if plain_strings and t in _PLAIN:
            return True
        if pa.types.is_struct(t) and _may_change(list(t), decimals, plain_strings):
            return True
        if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
                or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)) \
                and _may_change([t.value_field], decimals, plain_strings):
            return True
        if pa.types.is_map(t) and _may_change([t.key_field, t.item_field], decimals, plain_strings):
            return True
    return False


_PLAIN = {pa.string_view(): pa.string(), pa.large_string(): pa.string(),
          pa.binary_view(): pa.binary(), pa.large_binary(): pa.binary()}


def _checked(md: pq.FileMetaData, patched: pq.FileMetaData) -> frozenset[str] | None:
    """The columns whose type changed from decimal to an integer, when nothing else did but
    string (binary) views or large strings becoming plain ones; None when neither changed."""
    if (md.num_rows, md.num_row_groups, md.num_columns) != (patched.num_rows, patched.num_row_groups,
                                                             patched.num_columns):
        return None
    a, b = md.schema.to_arrow_schema(), patched.schema.to_arrow_schema()
    if a.names != b.names:
        return None
    changed, plain = set(), False
    for fa, fb in zip(a, b):
        if fa.type == fb.type:
            continue
        if pa.types.is_decimal(fa.type) and fa.type.precision <= 18 and fb.type in (pa.int32(), pa.int64()):
            changed.add(fa.name)
            continue
        if _PLAIN.get(fa.type) == fb.type:
            plain = True
            continue
        return None
    for i in range(md.num_columns):
        if md.schema.column(i).physical_type != patched.schema.column(i).physical_type:
            return None
    for g in range(md.num_row_groups):
        ra, rb = md.row_group(g), patched.row_group(g)
        if ra.num_rows != rb.num_rows:
            return None
        for j in range(md.num_columns):
            ca, cb = ra.column(j), rb.column(j)
            if (ca.data_page_offset, ca.total_compressed_size, ca.num_values, ca.compression) != \
                    (cb.data_page_offset, cb.total_compressed_size, cb.num_values, cb.compression):
                return None
    return frozenset(changed) if changed or plain else None
