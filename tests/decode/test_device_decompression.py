"""The torch decoder with its pages decompressed "on the device" (nvCOMP's part played on the
host by the stand-in of test_device_codecs): the decoded columns equal pyarrow's for every
encoding x codec x page version, the host reads the decompressed pages' few fields through
:class:`DeviceBytes` windows (a round or two per batch, not a copy per field), pages nvCOMP
cannot take fall back to the host counted (or are refused under strict_device), and a query
shows where its pages were decompressed. On a GPU, ``--device cuda`` with nvCOMP installed runs
the real thing (test_device_codecs' GPU tests and the decoder tests with decoder=device)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from sluice.arrow import arrow_to_column
from sluice.errors import UnsupportedError
from sluice.io.parquet.decode import nvcomp
from sluice.io.parquet.decode.column import ColumnPages, column_spec
from sluice.io.parquet.decode.device_bytes import DeviceBytes
from sluice.io.parquet.fetch import fetch_chunks
from sluice.types import from_arrow
from decode.test_device_codecs import HostDecoder
from decode.test_torch_decoder import _matrix_table, assert_same, write_matrix


def stand_in(parts, size, device):
    """nvcomp.decompress with the host playing nvCOMP (raises NotOnDevice as it would)."""
    p = nvcomp.plan(parts, size)
    out = torch.empty(size + nvcomp.PAD, dtype=torch.uint8)
    out[size:] = 0
    nvcomp._run(p, out, HostDecoder())
    return out


class Rounds:
    """DeviceBytes made while decoding, to count their copies back."""

    def __init__(self, monkeypatch):
        self.made = []
        orig = DeviceBytes.__init__

        def init(db, buf, size):
            orig(db, buf, size)
            self.made.append(db)
        monkeypatch.setattr(DeviceBytes, "__init__", init)


@pytest.mark.parametrize("codec", ["snappy", "zstd", "lz4", "gzip", "none"])
@pytest.mark.parametrize("scheme", ["dictionary", "plain", "delta", "byte_stream_split"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pages_decompressed_on_the_device_decode_as_on_the_host(tmp_path, monkeypatch, codec, scheme, version):
    path = write_matrix(tmp_path / "m.parquet", _matrix_table(), codec, scheme, version)
    md = pq.read_metadata(path)
    schema = md.schema.to_arrow_schema()
    groups = list(range(md.num_row_groups))
    chunks, _ = fetch_chunks(str(path), md, groups, schema.names, pinned=True)
    rounds = Rounds(monkeypatch)
    od = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
    arrow = pq.ParquetFile(path).read_row_groups(groups)
    for name in schema.names:
        lt = from_arrow(schema.field(name).type)
        spec = column_spec(md, name, schema.field(name).type, lt)
        ours = ColumnPages(chunks[name], spec).decode(torch.device("cpu"), None, od)
        assert_same(ours, arrow_to_column(arrow.column(name), lt), f"{name}")
    if codec == "none":
        assert od.pages_device == 0 and not rounds.made  # nothing to decompress: the host path
        return
    assert od.pages_device > 0 and od.pages_host == 0
    for db in rounds.made:
        # A round for the v1 level lengths, one for the value starts; delta headers further into
        # a page (DELTA_BYTE_ARRAY's suffixes) cost a copy each.
        assert db.rounds <= 2 + db.misses
        if scheme != "delta":
            assert db.misses == 0


def test_a_codec_nvcomp_lacks_falls_back_counted_or_is_refused(tmp_path):
    t = _matrix_table()
    path = tmp_path / "b.parquet"
    pq.write_table(t, path, compression="brotli", data_page_size=2048, row_group_size=1100,
                   write_page_checksum=True)
    md = pq.read_metadata(path)
    f = t.schema.field("i64")
    chunks, _ = fetch_chunks(str(path), md, [0, 1], ["i64"])
    spec = column_spec(md, "i64", f.type, from_arrow(f.type))
    od = nvcomp.OnDevice(True, decompress=stand_in)
    col = ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, od)
    assert len(col) == 2200 and od.pages_device == 0 and od.pages_host > 0
    assert any("BROTLI" in w.upper() for w in od.why), od.why
    strict = nvcomp.OnDevice(True, strict=True, decompress=stand_in)
    with pytest.raises(UnsupportedError, match="strict_device=true forbids the host"):
        ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, strict)
    off = nvcomp.OnDevice(False, "nvCOMP not installed")
    ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, off)
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
        pq.write_table(t, path, compression=codec, data_page_size=2048, row_group_size=1100,
                       write_page_checksum=crc, data_page_version=version)
        md = pq.read_metadata(path)
        chunks, _ = fetch_chunks(str(path), md, [0, 1], ["i64"])
        spec = column_spec(md, "i64", f.type, from_arrow(f.type))
        want = arrow_to_column(pq.ParquetFile(path).read_row_groups([0, 1], columns=["i64"]).column("i64"),
                               from_arrow(f.type))
        od = nvcomp.OnDevice(True, decompress=stand_in)
        assert_same(ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, od), want, "i64")
        if crc:
            assert od.pages_device > 0 and od.pages_host == 0
        else:
            assert od.pages_device == 0 and od.pages_host > 0
            assert any("page CRC" in w for w in od.why), od.why
            trusting = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
            assert_same(ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, trusting), want, "i64")
            assert trusting.pages_device > 0 and trusting.pages_host == 0
            strict = nvcomp.OnDevice(True, strict=True, decompress=stand_in)
            with pytest.raises(UnsupportedError, match="page CRC"):
                ColumnPages(chunks["i64"], spec).decode(torch.device("cpu"), None, strict)
    # One byte changed in the last page's body: its CRC no longer matches.
    raw, codec_name, n = chunks["i64"][0]
    bad = bytearray(raw)
    bad[-3] ^= 0x55
    with pytest.raises(ValueError, match="CRC"):
        ColumnPages([(memoryview(bytes(bad)), codec_name, n)], spec).decode(torch.device("cpu"), None,
                                                                            nvcomp.OnDevice(True, decompress=stand_in))


def test_pinned_fetch_reads_the_same_bytes(tpch_dir):
    path = str(tpch_dir / "orders.parquet")
    md = pq.read_metadata(path)
    cols = ["o_orderkey", "o_comment", "o_orderdate"]
    a, na = fetch_chunks(path, md, [0], cols)
    b, nb = fetch_chunks(path, md, [0], cols, pinned=True)
    assert na == nb
    for c in cols:
        assert [(bytes(m), codec, n) for m, codec, n in a[c]] == [(bytes(m), codec, n) for m, codec, n in b[c]]


def test_device_bytes_reads_as_a_memoryview():
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, 1000, dtype=np.uint8)
    buf = torch.from_numpy(np.concatenate([raw, np.zeros(16, np.uint8)]))
    mv = memoryview(raw.tobytes())
    d = DeviceBytes(buf, 1000)
    d.prefetch([0, 100, 990, 5000])
    assert d.rounds == 1
    for a, b in [(0, 4), (100, 164), (99, 120), (990, 1000), (990, 1200), (500, 700), (60, 70), (63, 65), (7, 7)]:
        assert d[a:b] == bytes(mv[a:b]), (a, b)
    for k in [0, 5, 999, -1, 640]:
        assert d[k] == mv[k]
    with pytest.raises(IndexError):
        d[1000]


def test_a_query_says_where_its_pages_were_decompressed(tpch_dir, tpch_duck, monkeypatch, connect):
    from sluice.io.parquet import decoders
    init = decoders.TorchDecoder.__init__

    def with_stand_in(self, ctx):
        init(self, ctx)
        self.on_device = nvcomp.OnDevice(True, decompress=stand_in, unverified=True)
    monkeypatch.setattr(decoders.TorchDecoder, "__init__", with_stand_in)
    sql = ("select l_returnflag, count(*) as n, sum(l_extendedprice) as s, max(l_comment) as c "
           "from lineitem where l_shipdate < date '1995-01-01' group by 1 order by 1")
    con = connect(tpch_dir, decoder="device")
    from sluice.testing.oracle import compare
    compare(con.sql(sql).to_arrow(), tpch_duck.sql(sql).to_arrow_table())
    text = con.sql(sql).analyze()
    assert "on the device (nvCOMP), 0 on the host" in text, text
