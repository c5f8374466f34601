"""The device Parquet decoder (the Triton page kernels) equals pyarrow: a matrix of encodings,
codecs and page versions with NULLs, many pages per chunk and short last pages, and (on CUDA:
``--device cuda``; Triton's interpreter is far too slow for it) every column of every TPC-H and
SSB table at SF 0.1 as generated and under each ``sluice rewrite`` preset. Without a GPU the
kernels run in the interpreter on smaller tables and a rotating share of the matrix (every
encoding, codec and page version still met)."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sluice.arrow import arrow_to_column
from sluice.chunk import Column
from sluice.io.parquet.decode.column import NotDecodable, column_spec
from sluice.io.parquet.decode.kernel_column import KernelPages, check, decode_column
from sluice.io.parquet.decode.page_index import ENCODING_CODE, read_index
from sluice.io.parquet.fetch import fetch_chunks
from sluice.layout.rewrite import options_from, rewrite
from sluice.types import from_arrow


def assert_same(ours, ref, name):
    """Equal values where valid, equal validity, same dtype; strings by their text."""
    va = (ours.valid if ours.valid is not None else torch.ones(len(ours.data), dtype=torch.bool)).cpu()
    vb = ref.valid if ref.valid is not None else torch.ones(len(ref.data), dtype=torch.bool)
    assert torch.equal(va, vb), f"{name}: validity differs"
    if ref.type.kind == "string":
        a = ours.dictionary.take(pa.array(ours.data.cpu().numpy()[va.numpy()]))
        b = ref.dictionary.take(pa.array(ref.data.numpy()[vb.numpy()]))
        assert a.equals(b), f"{name}: strings differ"
        return
    assert ours.data.dtype == ref.data.dtype, f"{name}: {ours.data.dtype} vs {ref.data.dtype}"
    a, b = ours.data.cpu()[va], ref.data[vb]
    if ref.data.dtype.is_floating_point:
        assert torch.equal(a.isnan(), b.isnan()), name
        a, b = a[~a.isnan()], b[~b.isnan()]
    assert torch.equal(a, b), f"{name}: values differ"


def _torch_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


#: Whether the kernels run in Triton's interpreter (no GPU): the matrix is cut down there.
INTERPRETED = not torch.cuda.is_available()


def decode_rows(chunks, spec, device, keep, budget=None):
    pages = KernelPages(chunks, spec).select(keep)
    col, errs = pages.decode(device, budget)
    check(errs)
    return col, pages.skipped


def _plain_strings(path, name) -> bool:
    """Whether a string column has pages not dictionary-coded (left to pyarrow: NotDecodable)."""
    md = pq.read_metadata(path)
    chunks, _ = fetch_chunks(str(path), md, list(range(md.num_row_groups)), [name])
    dict_codes = {ENCODING_CODE["RLE_DICTIONARY"], ENCODING_CODE["PLAIN_DICTIONARY"]}
    return any(set(ix.encoding[ix.data].tolist()) - dict_codes for ix in (read_index(c[0]) for c in chunks[name]))


def check_file(path, row_groups=None, device="cpu", budget=None) -> int:
    """Decode every column of ``path`` (all row groups as one task) on ``device`` (the suite's:
    ``--device cuda`` runs the decoder on a GPU), in page batches of ``budget`` transient bytes,
    and compare; returns the columns decoded or, being strings not dictionary-coded, refused
    (NotDecodable: a scan leaves them to pyarrow)."""
    md = pq.read_metadata(path)
    schema = md.schema.to_arrow_schema()
    groups = list(range(md.num_row_groups)) if row_groups is None else row_groups
    chunks, _ = fetch_chunks(str(path), md, groups, schema.names)
    table = pq.ParquetFile(path).read_row_groups(groups)
    done = 0
    for name in schema.names:
        lt = from_arrow(schema.field(name).type)
        spec = column_spec(md, name, schema.field(name).type, lt)
        if lt.kind == "string" and _plain_strings(path, name):
            with pytest.raises(NotDecodable, match="not dictionary-coded"):
                decode_column(chunks[name], spec, _torch_device(device), budget)
            done += 1
            continue
        ours = decode_column(chunks[name], spec, _torch_device(device), budget)
        assert_same(ours, arrow_to_column(table.column(name), lt), f"{path.name}:{name}")
        done += 1
    return done


# --------------------------------------------------------------------------- matrix

ROWS = 300 if INTERPRETED else 3000
#: pages of about this many bytes (many a chunk at either size)
PAGE = 256 if INTERPRETED else 2048
RG = ROWS * 11 // 30
CODECS = ["none", "snappy", "zstd", "lz4", "gzip", "brotli"]
SCHEMES = ["dictionary", "plain", "delta", "byte_stream_split"]


def _matrix_table(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = ROWS
    nulls = rng.random(n) < 0.15

    def arr(values, typ, with_nulls=True):
        return pa.array(values, typ, mask=nulls if with_nulls else None)

    words = np.array(["", "a", "bb", "MAIL", "SHIP", "TRUCK", "über", "naïve café", "x" * 40])
    low = words[rng.integers(0, len(words), n)]
    high = np.char.add(np.char.add(low.astype(str), "-"), (np.arange(n) * 7919 % 100003).astype(str))
    dec = rng.integers(-10**12, 10**12, n)
    table = pa.table({
        "i32": arr(rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32), pa.int32()),
        "i64": arr(np.cumsum(rng.integers(-1000, 10**6, n)), pa.int64(), with_nulls=False),
        "i64x": arr(rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64), pa.int64()),
        "i8": arr(rng.integers(-128, 128, n).astype(np.int8), pa.int8()),
        "i16": arr(rng.integers(-2**15, 2**15, n).astype(np.int16), pa.int16()),
        "u8": arr(rng.integers(0, 256, n).astype(np.uint8), pa.uint8()),
        "u32": arr(rng.integers(0, 2**32, n, dtype=np.int64).astype(np.uint32), pa.uint32()),
        "f32": arr(rng.standard_normal(n).astype(np.float32), pa.float32()),
        "f64": arr(rng.standard_normal(n) * 1e6, pa.float64()),
        "b": arr(rng.random(n) < 0.3, pa.bool_()),
        "d": arr(rng.integers(-20000, 30000, n).astype(np.int32), pa.date32()),
        "ts": arr(rng.integers(-2**50, 2**50, n), pa.timestamp("us")),
        "tsms": arr(rng.integers(-2**40, 2**40, n), pa.timestamp("ms", tz="UTC")),
        "dec": pa.array([None if m else decimal.Decimal(int(v)).scaleb(-2) for v, m in zip(dec, nulls)],
                        pa.decimal128(15, 2)),
        "decw": pa.array([None if m else decimal.Decimal(int(v)).scaleb(-4) for v, m in zip(dec, nulls)],
                         pa.decimal128(30, 4)),
        "s": arr(low, pa.string()),
        "sh": arr(high, pa.string(), with_nulls=False),
        "sn": pa.array([None] * n, pa.string()),
    })
    # Triton's interpreter: the types test_page_kernels.py does not meet one by one
    return table.select(["i8", "i64", "u32", "b", "tsms", "decw", "s", "sh"]) if INTERPRETED else table


def _encodings(scheme: str, table: pa.Table) -> dict:
    if scheme == "dictionary":
        return dict(use_dictionary=True)
    if scheme == "plain":
        return dict(use_dictionary=False)
    enc = {}
    for f in table.schema:
        t = f.type
        if scheme == "delta":
            if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
                enc[f.name] = "DELTA_BINARY_PACKED"
            elif pa.types.is_string(t):
                enc[f.name] = "DELTA_BYTE_ARRAY" if f.name != "sh" else "DELTA_LENGTH_BYTE_ARRAY"
            elif pa.types.is_boolean(t):
                enc[f.name] = "RLE"
        elif scheme == "byte_stream_split":
            if pa.types.is_floating(t) or pa.types.is_decimal(t) or t in (pa.int32(), pa.int64()):
                enc[f.name] = "BYTE_STREAM_SPLIT"
            elif pa.types.is_string(t):
                enc[f.name] = "DELTA_LENGTH_BYTE_ARRAY"
    return dict(use_dictionary=False, column_encoding=enc)


def write_matrix(path, table: pa.Table, codec: str, scheme: str, version: str):
    """``table`` in many pages per chunk (small pages), three row groups, a short last page in
    each, with ``scheme``'s encodings."""
    pq.write_table(table, path, compression=codec, data_page_version=version, data_page_size=PAGE,
                   row_group_size=RG, write_statistics=False,
                   store_decimal_as_integer=scheme != "byte_stream_split", **_encodings(scheme, table))
    return path


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_encodings_codecs_pages(tmp_path, codec, scheme, version, device):
    if INTERPRETED and (scheme, version, codec) not in (("dictionary", "1.0", "snappy"), ("plain", "2.0", "zstd")):
        pytest.skip("in Triton's interpreter (a few ms an operation) two cases of the matrix; every encoding x "
                    "page version x codec x NULLs: test_page_kernels.py; CUDA takes them all")
    table = _matrix_table()
    path = write_matrix(tmp_path / "m.parquet", table, codec, scheme, version)
    md = pq.read_metadata(path)
    assert md.num_row_groups == 3
    assert check_file(path, device=device) == table.num_columns
    assert check_file(path, [1], device=device) == table.num_columns  # one row group alone


def test_dictionary_overflow_falls_back_to_plain_pages(tmp_path, device):
    """A dictionary that outgrows its page limit: the chunk mixes dictionary and plain pages."""
    table = _matrix_table(1)
    path = tmp_path / "o.parquet"
    pq.write_table(table, path, dictionary_pagesize_limit=512 if not INTERPRETED else 128,
                   data_page_size=1024 if not INTERPRETED else 256)
    encs = {e for i in range(pq.read_metadata(path).num_row_groups)
            for e in pq.read_metadata(path).row_group(i).column(table.schema.names.index("sh")).encodings}
    assert "PLAIN" in encs and "RLE_DICTIONARY" in encs
    assert check_file(path, device=device) == table.num_columns


def test_delta_pages_without_values_last(tmp_path, device):
    """Delta-encoded pages holding only NULLs at the end of a task (a row group of NULLs): their
    streams are empty and their values' offset is the end of all values (it was gathered: an
    IndexError, on CUDA a device-side assert, on a valid file)."""
    vals = [i * 3 if i < 2 * ROWS // 3 else None for i in range(ROWS)]
    t = pa.table({"x": pa.array(vals, pa.int64()), "s": pa.array([None if v is None else str(v) for v in vals]),
                  "l": pa.array([None if v is None else "v" * (v % 7) for v in vals])})
    path = tmp_path / "t.parquet"
    pq.write_table(t, path, use_dictionary=False, row_group_size=ROWS // 3, column_encoding={
        "x": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY", "l": "DELTA_LENGTH_BYTE_ARRAY"})
    assert check_file(path, device=device) == 3  # (the strings: refused, left to pyarrow)


def test_a_row_group_of_null_strings_has_a_dictionary_its_codes_index(tmp_path, device, connect):
    """A dictionary-coded string column whose last row group holds only NULLs (an empty
    dictionary page): its rows' codes 0 must index the dictionary (it was empty, and grouping by
    the column raised an IndexError: found by bench/fuzz_sql.py seed 11)."""
    import duckdb

    from sluice.testing.oracle import compare
    vals = ["p", "q", None, "r", None, "p", "q", None]
    pq.write_table(pa.table({"k": pa.array(vals, pa.string()), "v": pa.array(range(8), pa.int64())}),
                   tmp_path / "t.parquet", row_group_size=7)
    md = pq.read_metadata(tmp_path / "t.parquet")
    chunks, _ = fetch_chunks(str(tmp_path / "t.parquet"), md, [1], ["k"])
    k = decode_column(chunks["k"], column_spec(md, "k", pa.string(), from_arrow(pa.string())), _torch_device(device))
    assert k.data.numel() == 1 and int(k.data.max()) < len(k.dictionary)
    q = "select k, count(*) as n, max(v) as m from t group by k"
    con = connect(tmp_path, decoder="device", chunk_rows=5)
    compare(con.sql(q).to_arrow(), duckdb.sql(q.replace(" t ", f" '{tmp_path / 't.parquet'}' ")).to_arrow_table(), [])


@pytest.mark.parametrize("budget", [1, 6 * ROWS])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_row_group_batches_equal_one_batch(tmp_path, scheme, budget, device):
    """Decoding in batches of row groups under a transient budget (one at a time, a few) gives
    what pyarrow gives, with mixed pages."""
    if INTERPRETED and (scheme, budget) != ("plain", 1):
        pytest.skip("one case in Triton's interpreter")
    table = _matrix_table(2)
    path = tmp_path / "b.parquet"
    pq.write_table(table, path, compression="snappy", data_page_size=PAGE, row_group_size=RG,
                   dictionary_pagesize_limit=4096, store_decimal_as_integer=scheme != "byte_stream_split",
                   **_encodings(scheme, table))
    assert check_file(path, device=device, budget=budget) == table.num_columns


@pytest.mark.parametrize("selection", ["clustered", "scattered", "one row", "first and last"])
@pytest.mark.parametrize("scheme", ["dictionary", "plain", "delta"])
def test_row_selection_decodes_only_the_pages_it_needs(tmp_path, scheme, selection, device):
    """decode_rows(keep) equals decoding everything and filtering, with NULLs, dictionaries
    that overflow into plain pages, v1 and v2 pages, and under a page budget."""
    if INTERPRETED and (scheme, selection) not in (("dictionary", "scattered"), ("delta", "first and last")):
        pytest.skip("two cases in Triton's interpreter")
    table = _matrix_table(4)
    path = tmp_path / "r.parquet"
    pq.write_table(table, path, data_page_size=PAGE // 2, write_batch_size=ROWS // 30, row_group_size=RG,
                   dictionary_pagesize_limit=PAGE, data_page_version="2.0" if scheme == "delta" else "1.0",
                   **_encodings(scheme, table))
    md = pq.read_metadata(path)
    groups = list(range(md.num_row_groups))
    chunks, _ = fetch_chunks(str(path), md, groups, table.schema.names)
    rng = np.random.default_rng(5)
    keep = np.zeros(table.num_rows, dtype=bool)
    if selection == "clustered":
        keep[ROWS * 2 // 5:ROWS // 2] = True
    elif selection == "scattered":
        keep = rng.random(table.num_rows) < 6 / ROWS
    elif selection == "one row":
        keep[ROWS * 3 // 4] = True
    else:
        keep[0] = keep[-1] = True
    skipped_any = False
    for name in table.schema.names if not INTERPRETED else ["u32", "b", "s"]:
        lt = from_arrow(table.schema.field(name).type)
        spec = column_spec(md, name, table.schema.field(name).type, lt)
        if lt.kind == "string" and _plain_strings(path, name):
            continue  # left to pyarrow (NotDecodable: check_file shows it)
        full = decode_column(chunks[name], spec, _torch_device(device))
        for budget in (None, 1):
            ours, skipped = decode_rows(chunks[name], spec, _torch_device(device), keep, budget)
            ref = full.filter(torch.from_numpy(keep).to(full.data.device))
            assert_same(ours, Column(ref.data.cpu(), ref.type, None if ref.valid is None else ref.valid.cpu(),
                                     ref.dictionary), f"{name} {selection} budget={budget}")
            assert skipped.pages < skipped.of
            skipped_any |= skipped.pages > 0
    assert skipped_any


def test_batches_hold_the_budget_and_keep_the_order(tmp_path):
    """Under a budget, whole row groups at a time, in order, as many as it holds (one at least)."""
    table = _matrix_table(3)
    path = tmp_path / "c.parquet"
    pq.write_table(table, path, data_page_size=PAGE, row_group_size=ROWS // 6)
    md = pq.read_metadata(path)
    chunks, _ = fetch_chunks(str(path), md, list(range(md.num_row_groups)), ["i64"])
    spec = column_spec(md, "i64", pa.int64(), from_arrow(pa.int64()))
    pages = KernelPages(chunks["i64"], spec)
    need, most = pages.estimate()
    seen = []
    real = pages._decode

    def spy(batch, *a):
        seen.append(batch)
        return real(batch, *a)
    pages._decode = spy
    for budget, expect in ((1, md.num_row_groups), (2 * most, (md.num_row_groups + 1) // 2), (need, 1)):
        seen.clear()
        col, errs = pages.decode(torch.device("cpu"), budget)
        check(errs)
        assert len(seen) == expect and sum(seen, []) == list(range(md.num_row_groups))
        assert torch.equal(col.data, torch.from_numpy(table.column("i64").to_numpy()))


def test_not_decodable_columns_are_named(tmp_path):
    t = pa.table({"l": pa.array([[1, 2], None, [3]]), "ns": pa.array([1, 2, 3], pa.timestamp("ns")),
                  "bin": pa.array([b"a", b"b", None])})
    path = tmp_path / "n.parquet"
    pq.write_table(t, path)
    md = pq.read_metadata(path)
    with pytest.raises(NotDecodable, match="timestamp unit ns"):
        column_spec(md, "ns", t.schema.field("ns").type, from_arrow(t.schema.field("ns").type))


# --------------------------------------------------------------------------- TPC-H / SSB

@pytest.fixture(scope="module")
def layouts(data_root, tmp_path_factory, device):
    """The TPC-H and SSB tables as generated and rewritten with each preset."""
    out = {"generated": data_root}
    if not device.startswith("cuda"):
        return out
    for preset in ("cpu", "gpu"):
        dst = tmp_path_factory.mktemp(f"layout-{preset}")
        for bench in ("tpch", "ssb"):
            rewrite(data_root / bench, dst / bench, options_from(preset))
        out[preset] = dst
    return out


@pytest.mark.parametrize("layout", ["generated", "cpu", "gpu"])
@pytest.mark.parametrize("bench", ["tpch", "ssb"])
def test_benchmark_tables(layouts, layout, bench, device):
    if not device.startswith("cuda"):
        pytest.skip("every TPC-H / SSB column at SF 0.1: on CUDA (--device cuda; the GPU stage of "
                    "scripts/gpu_check.sh), far too slow in Triton's interpreter")
    root = layouts[layout] / bench
    files = sorted(root.glob("*.parquet"))
    assert files
    for f in files:
        check_file(f, device=device)
