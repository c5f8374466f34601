"""Corrupt pages are errors, never reads past the page buffer nor wrong values.

On CUDA a load out of bounds is an illegal address that kills the CUDA context for every later
query of the process, and Triton's interpreter does not catch one on CPU. So every load of the
page kernels is masked against its page's bounds (from the headers, checked on the host) and a
corrupt page sets an error code the decoder reports as a ValueError (a DataError in a scan):
these tests fail on anything else. Hand-made pages hit each known spot; a fuzz corrupts pages of
every encoding and codec (a smaller one in the interpreter, the full one on ``--device cuda``)."""

from __future__ import annotations

import decimal
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sluice.errors import DataError
from sluice.io.parquet.decode.column import PAD, ColumnSpec, NotDecodable, column_spec
from sluice.io.parquet.decode.kernel_column import decode_column
from sluice.io.parquet.fetch import fetch_chunks
from sluice.io.parquet.thrift import ENCODINGS, read_page_headers
from sluice.types import from_arrow

CPU = torch.device("cpu")
#: Triton's interpreter (no GPU) runs a smaller fuzz
INTERPRETED = not torch.cuda.is_available()


def decode_hybrid(buf, starts, ends, widths, counts):
    """The hybrid kernel straight on streams of ``buf`` (codes of a one-chunk dictionary of
    ``max(counts)`` entries): raises ValueError for the error code it sets."""
    from sluice.io.parquet.decode.kernel_column import check
    from sluice.io.parquet.decode.kernels import hybrid
    t = lambda v: torch.tensor(v, dtype=torch.int64)  # noqa: E731
    counts = counts.long()
    offsets = torch.cumsum(counts, 0) - counts
    out = torch.zeros(int(counts.sum()), dtype=torch.int32)
    err = torch.zeros(len(starts), dtype=torch.int32)
    hybrid.decode(buf, t(starts), t(ends), counts, offsets, out, err, mode=hybrid.CODES, width=int(widths[0]),
                  chunk=t([0] * len(starts)), base=t([0]), size=t([1 << 30]))
    check([err])
    return out, offsets

# --------------------------------------------------------------------------- hand-made pages
# Thrift compact protocol, just what a page header needs: i32 fields, a bool, nested structs.

PLAIN, RLE, DELTA_BINARY_PACKED, RLE_DICTIONARY = 0, 3, 5, 8
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3


def uleb(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zz(v: int) -> int:
    return (v << 1) ^ (v >> 63)


def _struct(fields: list[tuple[int, object]]) -> bytes:
    """Fields (id, value) in id order: an int is an i32, a bool a bool, bytes a nested struct."""
    out, last = bytearray(), 0
    for fid, v in fields:
        ctype = 12 if isinstance(v, bytes) else (1 if v else 2) if isinstance(v, bool) else 5
        out.append(((fid - last) << 4) | ctype)
        last = fid
        if ctype == 12:
            out += v
        elif ctype == 5:
            out += uleb(zz(v))
    return bytes(out) + b"\x00"


def page(kind: int, body: bytes, num_values: int, encoding: int, size: int | None = None, **v2) -> bytes:
    """A page header and its body (``size``: its bytes once decompressed, default the body's)."""
    if kind == DICTIONARY_PAGE:
        sub = (7, _struct([(1, num_values), (2, encoding)]))
    elif kind == DATA_PAGE:
        sub = (5, _struct([(1, num_values), (2, encoding), (3, RLE), (4, RLE)]))
    else:
        sub = (8, _struct([(1, num_values), (2, v2.get("nulls", 0)), (3, num_values), (4, encoding),
                           (5, v2.get("def_bytes", 0)), (6, v2.get("rep_bytes", 0)),
                           (7, v2.get("compressed", False))]))
    return _struct([(1, kind), (2, len(body) if size is None else size), (3, len(body)), sub]) + body


def spec(physical: str, typ: pa.DataType, max_def: int = 0) -> ColumnSpec:
    return ColumnSpec("c", physical, 0, max_def, 0, typ, from_arrow(typ))


def decode(chunk: bytes, sp: ColumnSpec, num_values: int):
    return decode_column([(memoryview(chunk), "UNCOMPRESSED", num_values)], sp, CPU)


def int64s(*vals: int) -> bytes:
    return np.array(vals, dtype="<i8").tobytes()


def dict_chunk(dict_count: int, dict_values: list[int], n: int) -> bytes:
    """An INT64 dictionary page claiming ``dict_count`` entries, then a data page of ``n``
    values, every one index 0 (bit width 1, one RLE run)."""
    return (page(DICTIONARY_PAGE, int64s(*dict_values), dict_count, PLAIN)
            + page(DATA_PAGE, bytes([1]) + uleb(n << 1) + b"\x00", n, RLE_DICTIONARY))


def test_hand_made_pages_decode():
    """The pages these tests make decode as written (so what the corrupt ones test is their
    corruption): a dictionary-coded page, a delta page, v2 levels."""
    col = decode(dict_chunk(2, [7, 9], 5), spec("INT64", pa.int64()), 5)
    assert col.data.tolist() == [7] * 5
    col = decode(page(DATA_PAGE, delta_body(129, 3, bytes([0] * 4)), 129, DELTA_BINARY_PACKED),
                 spec("INT64", pa.int64()), 129)
    assert col.data.tolist() == [3] * 129
    levels = uleb(4 << 1) + b"\x01"  # four defined values
    col = decode(page(DATA_PAGE_V2, levels + int64s(1, 2, 3, 4), 4, PLAIN, def_bytes=len(levels)),
                 spec("INT64", pa.int64(), max_def=1), 4)
    assert col.data.tolist() == [1, 2, 3, 4] and (col.valid is None or bool(col.valid.all()))


@pytest.mark.parametrize("count", [3, 1000, 1 << 20])
def test_dictionary_page_shorter_than_its_count(count):
    """A dictionary page whose header claims more entries than its bytes hold (two values):
    the entries were gathered past the page -- into the next page (3: silently), past the
    buffer (1000, a million: IndexError, a device-side assert on CUDA)."""
    with pytest.raises(ValueError, match="dictionary"):
        decode(dict_chunk(count, [7, 9], 5), spec("INT64", pa.int64()), 5)


def delta_body(total: int, first: int, widths: bytes, data: bytes = b"", block: int = 128,
               minis: int = 4) -> bytes:
    """A DELTA_BINARY_PACKED stream: its header, then one block (min delta 0, ``widths``,
    ``data``) when it holds more than one value."""
    head = uleb(block) + uleb(minis) + uleb(total) + uleb(zz(first))
    return head + (b"\x00" + widths + data if total > 1 else b"")


@pytest.mark.parametrize("case", ["miniblocks past the page", "more miniblocks than bytes",
                                  "delta strings (left to pyarrow)"])
def test_delta_miniblocks_past_the_page(case):
    """A DELTA_BINARY_PACKED block whose miniblocks (four of 64 bits: 1 KiB) lie past its
    page, which ends 10 bytes into them; a header claiming a million miniblocks in a block;
    the same lengths of DELTA_LENGTH_BYTE_ARRAY strings. Values were unpacked (or widths
    read) past the page buffer before the sizes were checked."""
    if case == "miniblocks past the page":
        body = delta_body(129, 0, bytes([64] * 4), bytes(10))
        sp, enc = spec("INT64", pa.int64()), DELTA_BINARY_PACKED
    elif case == "more miniblocks than bytes":
        body = delta_body(129, 0, bytes([1] * 4), bytes(16), block=1 << 23, minis=1 << 20)
        sp, enc = spec("INT64", pa.int64()), DELTA_BINARY_PACKED
    else:
        body = delta_body(129, 0, bytes([64] * 4), bytes(10))
        sp, enc = spec("BYTE_ARRAY", pa.string()), 6  # DELTA_LENGTH_BYTE_ARRAY
    with pytest.raises(NotDecodable if sp.physical == "BYTE_ARRAY" else ValueError,
                       match="not dictionary-coded" if sp.physical == "BYTE_ARRAY" else "DELTA_BINARY_PACKED"):
        decode(page(DATA_PAGE, body, 129, enc), sp, 129)


def test_definition_levels_before_their_page():
    """A v2 page (the first of the buffer) whose repetition levels' length is negative: its
    definition levels' run headers were read at negative positions (IndexError)."""
    levels = uleb(4 << 1) + b"\x01"
    body = bytes(40) + levels + int64s(1, 2, 3, 4)
    chunk = page(DATA_PAGE_V2, body, 4, PLAIN, def_bytes=len(levels) + 40 + 30, rep_bytes=-30)
    with pytest.raises(ValueError, match="levels"):
        decode(chunk, spec("INT64", pa.int64(), max_def=1), 4)


@pytest.mark.parametrize("tail", [b"\xff\xff", b"\x03", b"\xff\xff\xff\xff\xff\xff"])
def test_hybrid_run_header_past_the_stream(tail):
    """RLE/bit-packed run headers that run past their stream: at the end of the buffer (its
    zero padding ends the varint, the run it heads is past the page), and streams that say
    they run past the buffer itself (every load is masked at its stream's end: the header is
    cut short, an error, never a read of the bytes after it)."""
    levels = uleb(2 << 1) + b"\x01" + tail  # two defined values, then a run header cut short
    chunk = page(DATA_PAGE, len(levels).to_bytes(4, "little") + levels + int64s(1, 2), 4, PLAIN)
    with pytest.raises((ValueError, DataError)):
        decode(chunk, spec("INT64", pa.int64(), max_def=1), 4)
    data = b"\x01\x01" + tail
    buf = torch.zeros(len(data) + PAD, dtype=torch.uint8)
    buf[:len(data)] = torch.tensor(list(data), dtype=torch.uint8)
    for start, end in ((0, len(data)), (len(data) - 1, len(data)), (1, len(data))):
        with pytest.raises(ValueError, match="run|fewer values|fit"):
            decode_hybrid(buf, [start], [end], torch.ones(1, dtype=torch.long), torch.tensor([4]))


def test_dictionary_indices_past_the_dictionary():
    """Indices at or past the dictionary's size (and past any index the buffer could hold)."""
    for index, width in ((2, 2), (1 << 20, 21)):
        body = bytes([width]) + uleb(5 << 1) + index.to_bytes((width + 7) // 8, "little")
        chunk = page(DICTIONARY_PAGE, int64s(7, 9), 2, PLAIN) + page(DATA_PAGE, body, 5, RLE_DICTIONARY)
        with pytest.raises(ValueError, match="dictionary"):
            decode(chunk, spec("INT64", pa.int64()), 5)


def test_dictionary_indices_missing():
    """A data page of five values whose RLE_DICTIONARY body is its bit width alone: no index
    at all. It decoded to zeros (values read from nowhere), and with pages of two row groups
    sized a GPU gather past its end (found in review); now a corrupt page."""
    body = bytes([2])
    chunk = page(DICTIONARY_PAGE, int64s(7, 9), 2, PLAIN) + page(DATA_PAGE, body, 5, RLE_DICTIONARY)
    with pytest.raises(ValueError, match="fewer values"):
        decode(chunk, spec("INT64", pa.int64()), 5)
    buf = torch.zeros(8 + PAD, dtype=torch.uint8)
    with pytest.raises(ValueError, match="fewer values"):
        decode_hybrid(buf, [5, 9], [5, 9], torch.ones(2, dtype=torch.long), torch.tensor([4, 2]))
    vals, offsets = decode_hybrid(buf, [5], [5], torch.ones(1, dtype=torch.long), torch.tensor([0]))
    assert vals.numel() == 0 and offsets.tolist() == [0]  # no values asked for: none, no error


def test_plain_strings_are_left_to_pyarrow():
    """A PLAIN byte array page (one whose 4-byte length runs past its page, too): the device
    decoder leaves plain strings to pyarrow, which reads them on the host."""
    body = (3).to_bytes(4, "little") + b"abc" + (1 << 30).to_bytes(4, "little") + b"de"
    with pytest.raises(NotDecodable):
        decode(page(DATA_PAGE, body, 2, PLAIN), spec("BYTE_ARRAY", pa.string()), 2)


# --------------------------------------------------------------------------- fuzz

#: What a corrupt page may raise out of the decoder: the reader turns these into one-line
#: DataErrors. Never IndexError (on CUDA, a device-side assert) nor any other RuntimeError.
EXPECTED = (ValueError, DataError, NotDecodable, OSError, pa.ArrowException)


def _fuzz_table(n: int = 150 if INTERPRETED else 700) -> pa.Table:
    rng = np.random.default_rng(11)
    nulls = rng.random(n) < 0.2
    words = np.array(["", "a", "bb", "MAIL", "SHIP", "über", "x" * 30])
    low = words[rng.integers(0, len(words), n)]
    return pa.table({
        "i32": pa.array(rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32), mask=nulls),
        "i64": pa.array(np.cumsum(rng.integers(-1000, 10**6, n))),
        "f64": pa.array(rng.standard_normal(n), mask=nulls),
        "b": pa.array(rng.random(n) < 0.3, mask=nulls),
        "dec": pa.array([None if m else decimal.Decimal(int(v)).scaleb(-2)
                         for v, m in zip(rng.integers(-10**9, 10**9, n), nulls)], pa.decimal128(12, 2)),
        "s": pa.array(low, mask=nulls),
        "sh": pa.array([f"{w}-{i * 7919 % 100003}" for i, w in enumerate(low)]),
    })


def _fuzz_files(tmp_path) -> list:
    """The table under every encoding the decoder reads, v1 and v2 pages, several codecs."""
    t = _fuzz_table()
    delta = {"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "b": "RLE",
             "s": "DELTA_BYTE_ARRAY", "sh": "DELTA_LENGTH_BYTE_ARRAY"}
    bss = {"f64": "BYTE_STREAM_SPLIT", "i64": "BYTE_STREAM_SPLIT", "dec": "BYTE_STREAM_SPLIT",
           "sh": "DELTA_LENGTH_BYTE_ARRAY"}
    schemes = [("dictionary", dict(use_dictionary=True), "none", "1.0"),
               ("dictionary", dict(use_dictionary=True), "snappy", "2.0"),
               ("plain", dict(use_dictionary=False), "none", "2.0"),
               ("plain", dict(use_dictionary=False), "zstd", "1.0"),
               ("delta", dict(use_dictionary=False, column_encoding=delta), "none", "1.0"),
               ("delta", dict(use_dictionary=False, column_encoding=delta), "lz4", "2.0"),
               ("bss", dict(use_dictionary=False, column_encoding=bss, store_decimal_as_integer=False),
                "none", "2.0")]
    out = []
    for i, (name, enc, codec, version) in enumerate(schemes):
        path = tmp_path / f"{name}-{codec}-{version}.parquet"
        pq.write_table(t, path, compression=codec, data_page_version=version,
                       data_page_size=256 if INTERPRETED else 1024, write_batch_size=32 if INTERPRETED else 128,
                       write_statistics=False, **enc)
        out.append(path)
    return out


ENCODING_ID = {name: i for i, name in ENCODINGS.items()}
KIND_ID = {"DATA_PAGE": DATA_PAGE, "DICTIONARY_PAGE": DICTIONARY_PAGE, "DATA_PAGE_V2": DATA_PAGE_V2}
VALUE_ENCODINGS = [0, 3, 5, 6, 7, 8, 9]


def _rewrite_header(rng: random.Random, data: bytes, headers: list, i: int) -> tuple[bytes, int]:
    """The chunk with page ``i``'s header written anew, one field changed: its value count (the
    footer's changed alike, as if both were corrupt), its encoding (the body read as another
    encoding's), or a v2 page's levels' lengths; and the data pages' value count."""
    out = []
    for j, h in enumerate(headers):
        f = dict(num_values=h.num_values, encoding=ENCODING_ID[h.encoding], size=h.uncompressed,
                 nulls=max(h.num_nulls, 0), def_bytes=h.def_bytes, rep_bytes=h.rep_bytes,
                 compressed=h.compressed_values)
        if j == i:
            f_i = f
            r = rng.random()
            if r < 0.45:
                n = h.num_values
                f["num_values"] = rng.choice([n + 1, n + 7, max(n - 1, 0), 2 * n, n + 1000, 0, 1 << 20]
                                             if not INTERPRETED else [n + 1, n + 7, max(n - 1, 0), 2 * n, 0])
            elif r < 0.85 or h.type != "DATA_PAGE_V2":
                f["encoding"] = rng.choice(VALUE_ENCODINGS)
            else:
                key = rng.choice(["def_bytes", "rep_bytes"])
                f[key] += rng.choice([-40, -3, -1, 1, 2, 9, 1000])
        out.append(page(KIND_ID[h.type], data[h.body:h.body + h.compressed], **f))
    count = sum(h.num_values for h in headers if h.type != "DICTIONARY_PAGE")
    if headers[i].type != "DICTIONARY_PAGE":
        count += f_i["num_values"] - headers[i].num_values
    return b"".join(out), count


def _mutate(rng: random.Random, data: bytes, headers: list, count: int) -> tuple[bytes, int]:
    """One page corrupted: a field of its header changed, a few bytes of its header or its body
    (the first bytes: levels, a bit width, a delta header, a length; or anywhere) overwritten,
    or a bit flipped. Returns the chunk and the value count its footer would give."""
    i = rng.randrange(len(headers))
    h = headers[i]
    r = rng.random()
    if r < 0.4:
        return _rewrite_header(rng, data, headers, i)
    d = bytearray(data)
    start = 0 if i == 0 else headers[i - 1].body + headers[i - 1].compressed
    if r < 0.5:
        at = start + rng.randrange(h.body - start)
    elif r < 0.8:
        at = h.body + rng.randrange(max(1, min(h.compressed, 24)))
    else:
        at = h.body + rng.randrange(max(1, h.compressed))
    if rng.random() < 0.3:
        d[min(at, len(d) - 1)] ^= 1 << rng.randrange(8)
        return bytes(d), count
    for k in range(rng.randrange(1, 5)):
        if at + k < len(d):
            d[at + k] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
    return bytes(d), count


#: corruptions per column of each file (the interpreter runs a few thousand values a second)
TRIES = 4 if INTERPRETED else 60


def test_corrupt_pages_raise_value_errors_only(tmp_path):
    """Column chunks corrupted at random, decoded straight with decode_column (no engine in the
    way): a corrupt page raises ValueError or DataError (or reads as values), never IndexError
    or a RuntimeError out of torch -- on CUDA that would have been a device-side assert."""
    rng = random.Random(2024)
    tries = 0
    wrong = []
    for path in _fuzz_files(tmp_path):
        md = pq.read_metadata(path)
        schema = md.schema.to_arrow_schema()
        chunks, _ = fetch_chunks(str(path), md, [0], schema.names)
        for name in schema.names:
            typ = schema.field(name).type
            sp = column_spec(md, name, typ, from_arrow(typ))
            data, codec, count = chunks[name][0]
            orig = bytes(data)
            headers = read_page_headers(orig)
            for _ in range(TRIES):
                bad, n = _mutate(rng, orig, headers, count)
                tries += 1
                try:
                    decode_column([(memoryview(bytearray(bad)), codec, n)], sp, CPU)
                except EXPECTED:
                    pass
                except Exception as e:  # noqa: BLE001 -- the point of the test
                    wrong.append(f"{path.name}:{name}: {type(e).__name__}: {str(e)[:80]}")
    assert tries >= 7 * 7 * TRIES
    assert not wrong, f"{len(wrong)} of {tries}:\n" + "\n".join(wrong)
