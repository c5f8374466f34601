"""The Triton page kernels (``decoder=device``) under Triton's interpreter, against pyarrow: every
encoding the kernels decode x data page v1 / v2 x codec x with and without NULLs, on tiny files
(the interpreter runs a few thousand values a second per run walked)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

# Before triton is imported at all: triton.language's own jit functions read it when defined.
os.environ.setdefault("TRITON_INTERPRET", "0" if torch.cuda.is_available() else "1")
pytest.importorskip("triton")

from sluice.arrow import arrow_to_column  # noqa: E402
from sluice.io.parquet.decode.column import NotDecodable, column_spec  # noqa: E402
from sluice.io.parquet.decode.kernel_column import KernelPages, check  # noqa: E402
from sluice.io.parquet.fetch import fetch_chunks  # noqa: E402
from sluice.types import from_arrow  # noqa: E402

ROWS = 300
CODECS = ["none", "snappy", "zstd", "gzip", "lz4"]


def _values(kind: str, nulls: bool, rng) -> pa.Array:
    n = ROWS
    mask = (rng.random(n) < 0.3) if nulls else None
    if kind == "int32":
        v = pa.array(rng.integers(-2**31, 2**31, n, dtype=np.int32), mask=mask)
    elif kind == "int64":
        v = pa.array(rng.integers(-2**62, 2**62, n, dtype=np.int64), mask=mask)
    elif kind == "small64":  # repeating: dictionary pages with few entries, long RLE runs
        v = pa.array(np.repeat(rng.integers(0, 5, n // 20 + 1), 20)[:n].astype(np.int64), mask=mask)
    elif kind == "float32":
        v = pa.array(rng.standard_normal(n).astype(np.float32), mask=mask)
    elif kind == "float64":
        v = pa.array(rng.standard_normal(n), mask=mask)
    elif kind == "bool":
        v = pa.array(rng.random(n) < 0.5, mask=mask)
    elif kind == "date":
        v = pa.array(rng.integers(0, 20000, n, dtype=np.int32), mask=mask).cast(pa.date32())
    elif kind == "ts_ms":
        v = pa.array(rng.integers(0, 2**40, n, dtype=np.int64), mask=mask).cast(pa.timestamp("ms"))
    elif kind == "ts_us":
        v = pa.array(rng.integers(0, 2**50, n, dtype=np.int64), mask=mask).cast(pa.timestamp("us"))
    elif kind in ("dec", "dec_wide"):
        raw = rng.integers(-10**11, 10**11, n)
        t = pa.decimal128(12, 2) if kind == "dec" else pa.decimal128(30, 2)
        from decimal import Decimal
        v = pa.array([Decimal(int(x)).scaleb(-2) for x in raw], t, mask=mask)
    elif kind == "str":
        words = np.array(["alpha", "beta", "", "gamma delta", "é"], dtype=object)
        v = pa.array(words[rng.integers(0, 5, n)], pa.string(), mask=mask)
    else:
        raise AssertionError(kind)
    return v


#: (value kind, encoding: "dict" or a column_encoding pyarrow writes)
CASES = [("int32", "PLAIN"), ("int64", "PLAIN"), ("float32", "PLAIN"), ("float64", "PLAIN"), ("bool", "PLAIN"),
         ("date", "PLAIN"), ("ts_ms", "PLAIN"), ("ts_us", "PLAIN"), ("dec", "PLAIN"), ("dec_wide", "PLAIN"),
         ("small64", "dict"), ("float64", "dict"), ("dec", "dict"), ("str", "dict"), ("date", "dict"),
         ("float32", "BYTE_STREAM_SPLIT"), ("float64", "BYTE_STREAM_SPLIT"), ("int32", "BYTE_STREAM_SPLIT"),
         ("int64", "DELTA_BINARY_PACKED"), ("int32", "DELTA_BINARY_PACKED"), ("small64", "DELTA_BINARY_PACKED"),
         ("bool", "RLE")]


def _write(path, arr: pa.Array, encoding: str, version: str, codec: str) -> None:
    t = pa.table({"c": arr})
    kw = dict(compression=codec, data_page_version=version, data_page_size=200, write_batch_size=64,
              row_group_size=ROWS // 2 + 7, write_statistics=False)
    if encoding == "dict":
        kw["use_dictionary"] = True
    else:
        kw.update(use_dictionary=False, column_encoding={"c": encoding})
    pq.write_table(t, path, **kw)
    md = pq.read_metadata(path)
    encs = {e for i in range(md.num_row_groups) for e in md.row_group(i).column(0).encodings}
    assert (encs & {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}) if encoding == "dict" else encoding in encs, encs
    assert md.num_row_groups == 2


def _decode(path, device=torch.device("cpu"), keep=None):
    md = pq.read_metadata(path)
    schema = pq.read_schema(path)
    rgs = list(range(md.num_row_groups))
    chunks, _ = fetch_chunks(str(path), md, rgs, ["c"])
    lt = from_arrow(schema.field("c").type)
    spec = column_spec(md, "c", schema.field("c").type, lt)
    pages = KernelPages(chunks["c"], spec)
    if keep is not None:
        pages.select(keep)
    col, errs = pages.decode(device)
    check(errs)
    return col, lt


def _same(col, path, lt, keep=None):
    t = pq.read_table(path, read_dictionary=["c"] if lt.kind == "string" else None)
    if lt.kind == "decimal":
        raw = t.column("c").combine_chunks()
        expect_vals = [None if x is None else int(x.scaleb(raw.type.scale)) for x in raw.to_pylist()]
    ref = arrow_to_column(t.column("c"), lt)
    got_valid = col.valid if col.valid is not None else torch.ones(len(col), dtype=torch.bool)
    ref_valid = ref.valid if ref.valid is not None else torch.ones(len(ref), dtype=torch.bool)
    if keep is not None:
        k = torch.from_numpy(keep)
        ref_valid = ref_valid[k]
        ref = ref.filter(k)
    assert len(col) == len(ref)
    assert torch.equal(got_valid, ref_valid)
    v = got_valid
    if lt.kind == "string":
        got = np.array(col.dictionary.to_pylist(), dtype=object)[col.data[v].long().numpy()]
        want = np.array(ref.dictionary.to_pylist(), dtype=object)[ref.data[v].long().numpy()]
        assert list(got) == list(want)
    elif lt.kind == "decimal":
        want = [x for x, ok in zip(expect_vals, v.tolist()) if ok]
        assert col.data[v].tolist() == want
    else:
        assert torch.equal(col.data[v], ref.data[v].to(col.data.dtype))


@pytest.mark.parametrize("kind,encoding", CASES, ids=[f"{k}-{e}" for k, e in CASES])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_kernels_match_pyarrow(tmp_path, kind, encoding, version):
    """Each case once per page version, with and without NULLs, its codec rotating."""
    rng = np.random.default_rng(abs(hash((kind, encoding, version))) % 2**32)
    for nulls in (False, True):
        codec = CODECS[(CASES.index((kind, encoding)) + nulls + (version == "2.0")) % len(CODECS)]
        path = tmp_path / f"{nulls}.parquet"
        _write(path, _values(kind, nulls, rng), encoding, version, codec)
        col, lt = _decode(path)
        _same(col, path, lt)


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec(tmp_path, codec):
    rng = np.random.default_rng(7)
    path = tmp_path / "x.parquet"
    _write(path, _values("small64", True, rng), "dict", "1.0", codec)
    col, lt = _decode(path)
    _same(col, path, lt)


def test_a_row_selection_skips_pages(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "x.parquet"
    _write(path, _values("int64", True, rng), "PLAIN", "1.0", "snappy")
    keep = np.zeros(ROWS, dtype=bool)
    keep[5:9] = True
    keep[250] = True
    col, lt = _decode(path, keep=keep)
    _same(col, path, lt, keep)


def test_plain_strings_are_left_to_pyarrow(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "x.parquet"
    _write(path, _values("str", False, rng), "PLAIN", "1.0", "none")
    with pytest.raises(NotDecodable, match="not dictionary-coded"):
        _decode(path)
