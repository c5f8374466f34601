"""``decoder=device`` end to end: queries equal DuckDB whatever decodes the pages, every scan
mode, a column the decoder leaves to pyarrow is counted (or refused with strict_device). The
data: TPC-H / SSB SF 0.1 on CUDA, SF 0.002 in small pages in Triton's interpreter (no GPU:
``device_decoder_dirs``), where a share of the queries and scan modes run."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from sluice.errors import ConfigError, UnsupportedError
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns, ssb_queries, tpch_queries

#: the page kernels run in Triton's interpreter (no GPU)
INTERPRETED = not torch.cuda.is_available()


@pytest.fixture(scope="module")
def tpch_dir(device_decoder_dirs):
    return device_decoder_dirs[0]


@pytest.fixture(scope="module")
def ssb_dir(device_decoder_dirs):
    return device_decoder_dirs[1]


@pytest.fixture(scope="module")
def tpch_duck(tpch_dir):
    return duckdb_connect(tpch_dir)


@pytest.mark.parametrize("name", ["q01", "q03", "q06", "q09", "q13", "q18", "q22"])
def test_tpch_device_decoder_matches_duckdb(name, tpch_dir, tpch_duck, connect):
    if INTERPRETED and name not in ("q01", "q09", "q13"):
        pytest.skip("three queries in Triton's interpreter (every lineitem, orders, part, partsupp, supplier, "
                    "nation column met); all on CUDA")
    sql = tpch_queries()[name]
    ours = connect(tpch_dir, decoder="device").sql(sql).to_arrow()
    theirs = tpch_duck.sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


@pytest.mark.parametrize("mode", ["direct", "pushdown", "staging", "auto"])
@pytest.mark.parametrize("name", ["q1.1", "q2.1", "q3.1", "q4.1"])
def test_ssb_device_decoder_every_scan_mode(name, mode, ssb_dir, connect):
    if INTERPRETED and ["q1.1", "q2.1", "q3.1", "q4.1"].index(name) != ["direct", "pushdown", "staging",
                                                                      "auto"].index(mode):
        pytest.skip("each query in one scan mode in Triton's interpreter (each mode met); all on CUDA")
    sql = ssb_queries()[name]
    ours = connect(ssb_dir, decoder="device", scan_mode=mode, chunk_rows=100_000).sql(sql).to_arrow()
    theirs = duckdb_connect(ssb_dir).sql(sql).to_arrow_table()
    compare(ours, theirs, order_by_columns(sql, theirs.column_names))


@pytest.mark.parametrize("budget", [None, 48 << 20])
@pytest.mark.parametrize("decoder", ["device", "arrow"])
def test_staging_skips_pages_without_a_kept_row(decoder, budget, tpch_dir, tpch_duck, connect):
    """Staging hands the other columns' decoder the surviving rows: the device decoder leaves
    the pages without one alone (a narrow range of the sorted l_orderkey inside a row group,
    and a second, scattered predicate), and every answer is DuckDB's."""
    lo, hi, m = (4000, 4100, 700) if INTERPRETED else (100000, 103000, 5000)
    sql = ("select count(*), sum(l_quantity), max(l_comment), min(l_shipmode), count(l_receiptdate) "
           f"from lineitem where l_orderkey between {lo} and {hi} or l_orderkey % {m} = 7")
    settings = dict(decoder=decoder, scan_mode="staging", chunk_rows=2_000_000 if not INTERPRETED else 6000)
    if budget:
        settings["host_memory_limit"] = budget
    rel = connect(tpch_dir, **settings).sql(sql)
    ours = rel.to_arrow()
    compare(ours, tpch_duck.sql(sql).to_arrow_table(), [])
    _, ctx = rel.last_run
    (reader,) = ctx.readers()
    if decoder == "device":
        assert 0 < reader.stats.pages_skipped < reader.stats.pages_selected
    else:
        assert reader.stats.pages_selected == 0


def test_every_column_on_the_device_decoder(tpch_dir, tpch_duck, connect):
    """Every column but strings whose pages are not all dictionary-coded (l_comment's dictionary
    overflows at SF 0.1: those go to pyarrow, counted)."""
    sql = "select count(*), max(l_comment), sum(l_tax) from lineitem"
    rel = connect(tpch_dir, decoder="device").sql(sql)
    compare(rel.to_arrow(), tpch_duck.sql(sql).to_arrow_table(), [])
    _, ctx = rel.last_run
    (reader,) = ctx.readers()
    assert reader.stats.decoder == "device"
    assert set(reader.stats.fallbacks) <= {"l_comment"}
    assert all("not dictionary-coded" in why for why in reader.stats.fallbacks.values())


@pytest.fixture
def odd_dir(tmp_path):
    t = pa.table({"k": pa.array([1, 2, 3, None], pa.int32()),
                  "ts": pa.array([10**9, None, 3 * 10**9, 7000], pa.timestamp("ns")),
                  "s": pa.array(["a", None, "c", "d"])})
    pq.write_table(t, tmp_path / "odd.parquet", write_page_checksum=True)  # on a GPU: nvCOMP may take its pages
    return tmp_path


def test_fallback_is_counted_and_answers_stay(odd_dir, connect):
    sql = "select k, ts, s from odd order by k nulls last"
    rel = connect(odd_dir, decoder="device").sql(sql)
    ours = rel.to_arrow()
    compare(ours, duckdb_connect(odd_dir).sql(sql).to_arrow_table(), [0])
    _, ctx = rel.last_run
    (reader,) = ctx.readers()
    assert reader.stats.fallbacks == {"ts": "timestamp unit ns"}


def test_strict_device_refuses_a_fallback(odd_dir, connect):
    with pytest.raises(UnsupportedError, match=r"odd\.ts \(timestamp unit ns\)"):
        connect(odd_dir, decoder="device", strict_device=True).sql("select ts from odd").to_arrow()
    # Columns it can decode are fine under strict_device.
    assert connect(odd_dir, decoder="device", strict_device=True).sql("select sum(k) from odd").to_arrow()[0][0].as_py() == 6


def test_decoder_setting_is_checked(tpch_dir, connect):
    with pytest.raises(ConfigError, match="decoder must be auto, arrow or device"):
        connect(tpch_dir, decoder="gpu")


def test_cli_analyze_shows_fallback_and_strict_error_is_one_line(odd_dir):
    base = [sys.executable, "-m", "sluice.cli", "query", "--data", str(odd_dir)]
    r = subprocess.run(base + ["select ts, k from odd", "--set", "decoder=device", "--analyze"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "decoder device, left to pyarrow: ts (timestamp unit ns)" in r.stdout + r.stderr
    r = subprocess.run(base + ["select ts from odd", "--set", "decoder=device", "--set", "strict_device=true"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("unsupported: decoder=device cannot decode")


def test_sub_microsecond_timestamps_are_refused(tmp_path, connect):
    pq.write_table(pa.table({"ts": pa.array([1, 2], pa.timestamp("ns"))}), tmp_path / "ns.parquet")
    for decoder in ("arrow", "device"):
        with pytest.raises(UnsupportedError, match="nanoseconds"):
            connect(tmp_path, decoder=decoder).sql("select ts from ns").to_arrow()


def test_corrupt_pages_are_one_line_data_errors(tmp_path):
    """Garbage where the page headers or levels are: one line on stderr, exit 1, no output."""
    import numpy as np
    t = pa.table({"k": pa.array(np.arange(50_000, dtype=np.int64) % 977), "s": pa.array([f"v{i % 313}" for i in range(50_000)])})
    path = tmp_path / "bad.parquet"
    pq.write_table(t, path, compression="none")
    md = pq.read_metadata(path)
    cc = md.row_group(0).column(0)
    data = bytearray(path.read_bytes())
    start = cc.dictionary_page_offset or cc.data_page_offset
    data[start + 2:start + 40] = bytes(range(200, 238))  # inside the first page header and body
    path.write_bytes(bytes(data))
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "query", "--data", str(tmp_path),
                        "select sum(k), count(s) from bad", "--set", "decoder=device"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def _i32_fields(buf: bytes, pos: int) -> list[tuple[int, int]]:
    """Where each i32 field of the page header at ``pos`` lies: (offset, varint length)."""
    from sluice.io.parquet.thrift import CompactReader
    r = CompactReader(buf, pos)
    out = []

    def field(fid, ctype):
        if ctype == 5:
            a = r.pos
            r.varint()
            out.append((a, r.pos - a))
        elif ctype == 12:
            r.struct(field)
        else:
            return False
        return True

    r.struct(field)
    return out


@pytest.fixture
def decoder_errors(monkeypatch):
    """What the device decoder raised that it never should on a corrupt page, recorded before the
    reader turns it into a DataError: an IndexError or a RuntimeError out of torch (on CUDA an
    index out of bounds is a device-side assert, which kills the CUDA context for every later
    query of the process; the decoder must find the corruption before it gathers)."""
    from sluice.io.parquet import decoders
    seen: list[str] = []
    inner = decoders.KernelDecoder._decode_column

    def spy(self, *args, **kwargs):
        try:
            return inner(self, *args, **kwargs)
        except (IndexError, RuntimeError) as e:
            seen.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            raise

    monkeypatch.setattr(decoders.KernelDecoder, "_decode_column", spy)
    return seen


@pytest.mark.parametrize("codec, layout", [("snappy", "dictionary"), ("none", "dictionary"), ("none", "delta"),
                                           ("zstd", "plain"), ("none", "plain")])
def test_corrupted_files_never_answer_differently(tmp_path, connect, codec, layout, decoder_errors):
    if INTERPRETED and (codec, layout) not in (("snappy", "dictionary"), ("none", "delta"), ("zstd", "plain")):
        pytest.skip("three layouts, smaller, in Triton's interpreter; all on CUDA")
    """Bytes overwritten at random in the first pages, or a number in a page header changed:
    where both decoders answer they agree (no checksums: a changed value is read by both alike),
    and where pyarrow rejects the file the device decoder rejects it too or gives the
    uncorrupted file's answer (a header field neither needs, read past differently). The
    device decoder's rejections are its own (ValueError or DataError), never an index out of
    bounds in torch -- in every encoding, codec and page version here."""
    import random

    import numpy as np
    from sluice.errors import SluiceError
    from sluice.io.parquet.thrift import read_page_headers
    rows = 1500 if INTERPRETED else 20_000
    t = pa.table({"k": pa.array(np.arange(rows, dtype=np.int64) % 977),
                  "s": pa.array([f"v{i % 313}" for i in range(rows)]),
                  "n": pa.array([None if i % 7 == 0 else i * 1.5 for i in range(rows)])})
    src = tmp_path / "src.parquet"
    enc = {"dictionary": {}, "plain": dict(use_dictionary=False, data_page_version="2.0"),
           "delta": dict(use_dictionary=False, column_encoding={"k": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY",
                                                                "n": "BYTE_STREAM_SPLIT"})}[layout]
    pq.write_table(t, src, compression=codec, data_page_size=8192 if not INTERPRETED else 2048, **enc)
    md = pq.read_metadata(src)
    orig = src.read_bytes()
    data_dir = tmp_path / "d"
    data_dir.mkdir()
    rng = random.Random(f"{codec}-{layout}")
    sql = "select sum(k), count(s), min(s), sum(n), count(n) from bad"
    (data_dir / "bad.parquet").write_bytes(orig)
    clean = connect(data_dir, decoder="arrow", metadata_cache=False).sql(sql).to_arrow().to_pylist()

    def answer(decoder):
        try:
            return connect(data_dir, decoder=decoder, metadata_cache=False).sql(sql).to_arrow().to_pylist()
        except SluiceError as e:
            assert "internal error" not in str(e), str(e)
            return None

    chunks = []  # per column: where the chunk starts, its pages' headers
    for j in range(3):
        cc = md.row_group(0).column(j)
        start = cc.dictionary_page_offset or cc.data_page_offset
        chunks.append((start, cc.total_compressed_size, read_page_headers(orig[start:start + cc.total_compressed_size])))
    for _ in range(80 if not INTERPRETED else 12):
        data = bytearray(orig)
        start, size, headers = chunks[rng.randrange(3)]
        if rng.random() < 0.5:
            at = start + rng.randrange(0, min(size, 300))
            for k in range(rng.randrange(1, 8)):
                data[at + k] = rng.randrange(256)
        else:  # a number in a page header changed (a count, a size, an encoding, a levels' length)
            i = rng.randrange(min(len(headers), 3))
            h0 = 0 if i == 0 else headers[i - 1].body + headers[i - 1].compressed
            at, n = rng.choice(_i32_fields(orig, start + h0))
            # Another value of the same varint length: the header still reads.
            zz = rng.randrange(0 if n == 1 else 1 << 7 * (n - 1), 1 << 7 * n)
            data[at:at + n] = bytes((zz >> 7 * b) & 0x7F | (0x80 if b < n - 1 else 0) for b in range(n))
        (data_dir / "bad.parquet").write_bytes(bytes(data))
        theirs, ours = answer("arrow"), answer("device")
        if theirs is None:
            assert ours is None or ours == clean, f"pyarrow rejects the file, the device decoder answered {ours}"
        elif ours is not None:
            assert ours == theirs
    assert not decoder_errors, decoder_errors


@pytest.mark.parametrize("mode", ["direct", "pushdown", "staging"])
def test_empty_row_groups_on_the_device_decoder(tmp_path, mode, connect):
    # pyarrow writes an empty row group's data page offset as 0: read as a span, the file's
    # magic bytes became a "page header" (bad thrift type 0). Found by bench/fuzz_sql.py.
    import duckdb
    import pyarrow as pa
    from sluice.testing.oracle import compare
    schema = pa.schema([("a", pa.int32()), ("s", pa.string())])
    pq.write_table(schema.empty_table(), tmp_path / "e.parquet")
    with pq.ParquetWriter(tmp_path / "m.parquet", schema) as w:
        w.write_table(pa.table({"a": pa.array([1, None, 3], pa.int32()), "s": ["x", None, "z"]}))
        w.write_table(schema.empty_table())
        w.write_table(pa.table({"a": pa.array([4], pa.int32()), "s": ["w"]}))
    assert pq.read_metadata(tmp_path / "m.parquet").num_row_groups == 3
    con = connect(tmp_path, decoder="device", scan_mode=mode)
    duck = duckdb.connect()
    for t in ("e", "m"):
        duck.execute(f"create table {t} as select * from '{tmp_path / (t + '.parquet')}'")
    for sql in ["select a, count(*) as n from e group by a", "select count(*) as n, max(s) as m from e where a > 1",
                "select * from e", "select * from m where a > 1 or a is null", "select a, s from m"]:
        compare(con.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table())


def test_auto_decoder_choice(monkeypatch, tmp_path):
    # auto: pyarrow on a CPU and on a GPU without nvCOMP; the page kernels on a GPU with it
    # only where `sluice calibrate` measured it faster on that data directory.
    import json

    import torch

    from sluice.adapt import decoder_policy as decoders
    from sluice.io.parquet.decode import nvcomp
    cuda = torch.device("cuda", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = tmp_path / "data"
    (data / "t").mkdir(parents=True)
    f = str(data / "t" / "part-0.parquet")
    assert decoders.decoder_name("auto", torch.device("cpu"), f) == "arrow"
    assert decoders.decoder_name("device", torch.device("cpu"), f) == "device"  # (the interpreter)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(UnsupportedError, match="decoder=device: the Triton page kernels need a CUDA device"):
        decoders.decoder_name("device", torch.device("cpu"), f)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(nvcomp, "available", lambda: False)
    assert decoders.decoder_name("auto", cuda, f) == "arrow"
    monkeypatch.setattr(nvcomp, "available", lambda: True)
    assert decoders.decoder_name("auto", cuda, f) == "arrow"  # not calibrated
    cache = tmp_path / "cache" / "sluice" / "calibration.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({str(data.resolve()): {"decode_bps": {"arrow": 9e9, "device": 3e9}}}))
    assert decoders.decoder_name("auto", cuda, f) == "arrow"
    cache.write_text(json.dumps({str(data.resolve()): {"decode_bps": {"arrow": 3e9, "device": 9e9}}}))
    assert decoders.decoder_name("auto", cuda, f) == "device"
    assert decoders.decoder_name("arrow", cuda, f) == "arrow"


def test_decode_rates_measure_both_decoders(tpch_dir):
    import torch

    from sluice.io.parquet.decode_rates import measure
    rates = measure(tpch_dir / "supplier.parquet", torch.device("cpu"), runs=1)
    assert set(rates) == {"arrow", "device"} and all(v > 0 for v in rates.values())


def test_the_column_chunks_as_read_count_against_the_host_budget(tpch_dir, connect, monkeypatch):
    """The device decoder's read buffer (a task's column chunks, pinned on a GPU) is reserved
    against the host budget while the task's columns decode, and released after."""
    from sluice.io.parquet.decoders import KernelDecoder
    seen = []
    orig = KernelDecoder._decode_all

    def spy(self, ours, chunks, *args):
        pool = self.ctx.host_pool
        held = dict(pool.holders(top=100))
        seen.append((held.get("Scan orders column chunks", 0),
                     sum(len(mv) for parts in chunks.values() for mv, *_ in parts)))
        return orig(self, ours, chunks, *args)

    monkeypatch.setattr(KernelDecoder, "_decode_all", spy)
    con = connect(tpch_dir, decoder="device", chunk_rows=50_000 if not INTERPRETED else 1000)
    rel = con.sql("select count(*), max(o_comment), sum(o_totalprice) from orders")
    rel.to_arrow()
    assert len(seen) > 1
    assert all(held >= chunk_bytes > 0 for held, chunk_bytes in seen)
    _op, ctx = rel.last_run
    assert not [o for o, _ in ctx.memory.holders(top=100) if o.endswith("column chunks")]
