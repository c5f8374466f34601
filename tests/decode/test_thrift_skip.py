"""``skip_value`` (sluice.io.parquet.thrift) steps over any Thrift compact-protocol value -- every
type, nested lists, sets, maps and structs, bools inside lists and maps (a byte each) and in
struct fields (no byte), field ids too far apart for the header's delta -- to exactly its end.
Values are written here by a small compact-protocol encoder; real footers are covered by the
decimal and plain-string rewrites (tests/scan)."""

import struct

import pyarrow.parquet as pq
from hypothesis import given, settings, strategies as st

from sluice.io.parquet.thrift import CompactReader, skip_value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


# A value: (type, payload). Types: 1/2 bool (payload True/False), 3 byte, 4-6 int, 7 double,
# 8 binary, 9 list (element type, items), 11 map (key type, value type, pairs), 12 struct
# ([(field id, value)]).
def _encode(ctype: int, v, in_field: bool = False) -> bytes:
    if ctype in (1, 2):
        return b"" if in_field else bytes([1 if v else 2])  # a list's / map's bool: a byte
    if ctype == 3:
        return bytes([v & 0xFF])
    if ctype in (4, 5, 6):
        return _zigzag(v)
    if ctype == 7:
        return struct.pack("<d", v)
    if ctype == 8:
        return _varint(len(v)) + v
    if ctype == 9:
        et, items = v
        head = bytes([(len(items) << 4) | et]) if len(items) < 15 else bytes([0xF0 | et]) + _varint(len(items))
        return head + b"".join(_encode(et, x) for x in items)
    if ctype == 11:
        kt, vt, pairs = v
        if not pairs:
            return b"\x00"
        return _varint(len(pairs)) + bytes([(kt << 4) | vt]) + b"".join(
            _encode(kt, k) + _encode(vt, x) for k, x in pairs)
    if ctype == 12:
        out, last = bytearray(), 0
        for fid, (t, x) in v:
            wire_t = (1 if x else 2) if t in (1, 2) else t
            if 0 < fid - last <= 15:
                out.append(((fid - last) << 4) | wire_t)
            else:
                out.append(wire_t)
                out += _zigzag(fid)
            out += _encode(t, x, in_field=True)
            last = fid
        out.append(0)
        return bytes(out)
    raise AssertionError(ctype)


_SCALARS = st.one_of(
    st.tuples(st.just(1), st.booleans()), st.tuples(st.just(3), st.integers(0, 255)),
    st.tuples(st.sampled_from([4, 5, 6]), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(7), st.floats(allow_nan=False)), st.tuples(st.just(8), st.binary(max_size=40)))


def _values(children):
    def lists(et_and_gen):
        return st.tuples(st.just(9), st.tuples(st.just(et_and_gen[0]), st.lists(et_and_gen[1], max_size=20)))
    same_type = st.sampled_from([(1, st.booleans()), (3, st.integers(0, 255)), (5, st.integers(-99, 10**12)),
                                 (8, st.binary(max_size=5))])
    fields = st.lists(st.tuples(st.integers(1, 40), children), max_size=6).map(
        lambda fs: sorted({f: v for f, v in fs}.items()))
    return st.one_of(
        same_type.flatmap(lists),
        st.tuples(st.just(9), st.tuples(st.just(12), st.lists(fields, max_size=4))),
        st.tuples(st.just(11), st.tuples(st.just(8), st.just(1), st.lists(
            st.tuples(st.binary(max_size=4), st.booleans()), max_size=5))),
        st.tuples(st.just(11), st.tuples(st.just(5), st.just(12), st.lists(
            st.tuples(st.integers(0, 9), fields), max_size=3))),
        st.tuples(st.just(12), fields))


VALUES = st.recursive(_SCALARS, _values, max_leaves=30)


@given(VALUES, st.binary(max_size=8))
@settings(max_examples=300, deadline=None)
def test_skip_value_ends_where_the_value_ends(value, tail):
    ctype, v = value
    if ctype in (1, 2):  # a bare bool has no bytes of its own outside a list; wrap it in a struct
        ctype, v = 12, [(1, value)]
    data = b"\x07" + _encode(ctype, v) + tail  # something before, something after
    assert skip_value(data, 1, ctype) == len(data) - len(tail)
    r = CompactReader(memoryview(data), 1)
    r.skip(ctype)
    assert r.pos == len(data) - len(tail)


def test_skips_every_field_of_a_real_footer(tpch_dir):
    # The file's footer: walking its top-level fields with skip_value ends on its stop byte.
    path = tpch_dir / "lineitem.parquet"
    raw = path.read_bytes()
    n = struct.unpack("<I", raw[-8:-4])[0]
    footer = raw[-8 - n:-8]
    assert skip_value(footer, 0, 12) == len(footer)
    assert pq.read_metadata(path).num_row_groups > 1
