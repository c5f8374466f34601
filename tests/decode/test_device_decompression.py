"""The device decoder with its pages decompressed "on the device" (nvCOMP's part played on the
host by the stand-in of test_device_codecs): the decoded columns equal pyarrow's for every
encoding x codec x page version (a rotating share in Triton's interpreter), the host reads
nothing of the decompressed pages (the kernels read the levels' lengths, bit widths and delta
headers themselves), pages nvCOMP cannot take fall back to the host counted (or are refused
under strict_device), and a query shows where its pages were decompressed. On a GPU,
``--device cuda`` with nvCOMP installed runs the real thing (test_device_codecs' GPU tests and
the decoder tests with decoder=device)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import torch

from sluice.arrow import arrow_to_column
from sluice.errors import UnsupportedError
from sluice.io.parquet.decode import nvcomp
from sluice.io.parquet.decode.column import NotDecodable, column_spec
from sluice.io.parquet.decode.kernel_column import KernelPages, check
from sluice.io.parquet.fetch import fetch_chunks
from sluice.types import from_arrow
from decode.test_device_codecs import HostDecoder
from decode.test_device_decoder import INTERPRETED, RG, SCHEMES, _matrix_table, assert_same, write_matrix


def decode(chunks, spec, od):
    col, errs = KernelPages(chunks, spec).decode(torch.device("cpu"), None, od)
    check(errs)
    return col


def stand_in(parts, size, device):
    """nvcomp.decompress with the host playing nvCOMP (raises NotOnDevice as it would)."""
    p = nvcomp.plan(parts, size)
    out = torch.empty(size + nvcomp.PAD, dtype=torch.uint8)
    out[size:] = 0
    nvcomp._run(p, out, HostDecoder())
    return out


@pytest.mark.parametrize("codec", ["snappy", "zstd", "lz4", "gzip", "none"])
@pytest.mark.parametrize("scheme", ["dictionary", "plain", "delta", "byte_stream_split"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pages_decompressed_on_the_device_decode_as_on_the_host(tmp_path, monkeypatch, codec, scheme, version):
    if INTERPRETED and ["snappy", "zstd", "lz4", "gzip", "none"].index(codec) != (SCHEMES.index(scheme) + 2 * (
            version == "2.0")) % 5:
        pytest.skip("one codec per scheme and page version in Triton's interpreter; all on CUDA")
    path = write_matrix(tmp_path / "m.parquet", _matrix_table(), codec, scheme, version)
    md = pq.read_metadata(path)
    schema = md.schema.to_arrow_schema()
    groups = list(range(md.num_row_groups))
    chunks, _ = fetch_chunks(str(path), md, groups, schema.names, pinned=True)
    od = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
    arrow = pq.ParquetFile(path).read_row_groups(groups)
    for name in schema.names:
        lt = from_arrow(schema.field(name).type)
        spec = column_spec(md, name, schema.field(name).type, lt)
        try:
            ours = decode(chunks[name], spec, od)
        except NotDecodable:  # strings not dictionary-coded: pyarrow's, in a scan
            assert lt.kind == "string" and scheme != "dictionary"
            continue
        assert_same(ours, arrow_to_column(arrow.column(name), lt), f"{name}")
    if codec == "none":
        assert od.pages_device == 0  # nothing to decompress: the host path
        return
    assert od.pages_device > 0 and od.pages_host == 0


def test_a_codec_nvcomp_lacks_falls_back_counted_or_is_refused(tmp_path):
    t = _matrix_table()
    path = tmp_path / "b.parquet"
    pq.write_table(t, path, compression="brotli", data_page_size=2048, row_group_size=RG,
                   write_page_checksum=True)
    md = pq.read_metadata(path)
    f = t.schema.field("i64")
    chunks, _ = fetch_chunks(str(path), md, [0, 1], ["i64"])
    spec = column_spec(md, "i64", f.type, from_arrow(f.type))
    od = nvcomp.OnDevice(True, decompress=stand_in)
    col = decode(chunks["i64"], spec, od)
    assert len(col) == 2 * RG and od.pages_device == 0 and od.pages_host > 0
    assert any("BROTLI" in w.upper() for w in od.why), od.why
    strict = nvcomp.OnDevice(True, strict=True, decompress=stand_in)
    with pytest.raises(UnsupportedError, match="strict_device=true forbids the host"):
        decode(chunks["i64"], spec, strict)
    off = nvcomp.OnDevice(False, "nvCOMP not installed")
    decode(chunks["i64"], spec, off)
    assert off.why == {"nvCOMP not installed": off.pages_host} and off.pages_host > 0


@pytest.mark.parametrize("codec", ["snappy", "zstd"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])  # v2: the CRC covers levels and values
def test_only_pages_with_a_crc_go_to_the_device(tmp_path, codec, version):
    # nvCOMP's decoders trust their input (on an H200 a garbled Snappy or Zstd page faulted the
    # GPU or decoded to other bytes): pages without a page CRC stay on the host unless
    # device_decompress_unverified; pages with one are checked on the host first, and a
    # mismatch is a corrupt page before anything reaches the device.
    t = _matrix_table()
    f = t.schema.field("i64")
    for crc in (False, True):
        path = tmp_path / f"c{crc}.parquet"
        pq.write_table(t, path, compression=codec, data_page_size=2048, row_group_size=RG,
                       write_page_checksum=crc, data_page_version=version)
        md = pq.read_metadata(path)
        chunks, _ = fetch_chunks(str(path), md, [0, 1], ["i64"])
        spec = column_spec(md, "i64", f.type, from_arrow(f.type))
        want = arrow_to_column(pq.ParquetFile(path).read_row_groups([0, 1], columns=["i64"]).column("i64"),
                               from_arrow(f.type))
        od = nvcomp.OnDevice(True, decompress=stand_in)
        assert_same(decode(chunks["i64"], spec, od), want, "i64")
        if crc:
            assert od.pages_device > 0 and od.pages_host == 0
        else:
            assert od.pages_device == 0 and od.pages_host > 0
            assert any("page CRC" in w for w in od.why), od.why
            trusting = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
            assert_same(decode(chunks["i64"], spec, trusting), want, "i64")
            assert trusting.pages_device > 0 and trusting.pages_host == 0
            strict = nvcomp.OnDevice(True, strict=True, decompress=stand_in)
            with pytest.raises(UnsupportedError, match="page CRC"):
                decode(chunks["i64"], spec, strict)
    # One byte changed in the last page's body: its CRC no longer matches.
    raw, codec_name, n = chunks["i64"][0]
    bad = bytearray(raw)
    bad[-3] ^= 0x55
    with pytest.raises(ValueError, match="CRC"):
        decode([(memoryview(bytes(bad)), codec_name, n)], spec, nvcomp.OnDevice(True, decompress=stand_in))


def test_pinned_fetch_reads_the_same_bytes(tpch_dir):
    path = str(tpch_dir / "orders.parquet")
    md = pq.read_metadata(path)
    cols = ["o_orderkey", "o_comment", "o_orderdate"]
    a, na = fetch_chunks(path, md, [0], cols)
    b, nb = fetch_chunks(path, md, [0], cols, pinned=True)
    assert na == nb
    for c in cols:
        assert [(bytes(m), codec, n) for m, codec, n in a[c]] == [(bytes(m), codec, n) for m, codec, n in b[c]]


def test_a_query_says_where_its_pages_were_decompressed(device_decoder_dirs, monkeypatch, connect):
    from sluice.io.parquet import decoders
    from sluice.testing.oracle import duckdb_connect
    tpch_dir = device_decoder_dirs[0]
    tpch_duck = duckdb_connect(tpch_dir)
    init = decoders.KernelDecoder.__init__

    def with_stand_in(self, ctx):
        init(self, ctx)
        self.on_device = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
    monkeypatch.setattr(decoders.KernelDecoder, "__init__", with_stand_in)
    sql = ("select l_shipmode, count(*) as n, sum(l_extendedprice) as s, max(l_comment) as c "
           "from lineitem where l_shipdate < date '1995-01-01' group by 1 order by 1")
    con = connect(tpch_dir, decoder="device")
    from sluice.testing.oracle import compare
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())
    text = con.sql(sql).analyze()
    assert "on the device (nvCOMP), 0 on the host" in text, text
