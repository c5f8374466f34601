"""Decode benchmark: pyarrow vs sluice's torch decoder, per encoding and codec, side by side.

    python bench/decode.py --data DIR/lineitem.parquet [--device cpu|cuda] [--rows N] [--runs 3]

The table's columns are rewritten once per (encoding scheme, codec) into a temporary folder;
for each file, best-of-runs time to decode every column of every row group with pyarrow (then
to sluice columns on the host, as ``decoder=arrow`` does) and with the torch decoder on
``--device`` (``decoder=device``), the decoded GB/s of each, their ratio, and the compressed
bytes per second the device path takes in (on a GPU with nvCOMP: what crosses PCIe, the pages
decompressing there; ``--host-decompress`` decompresses them on the host first, to compare).
Every decoded column is checked equal to pyarrow's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402

from sluice.io.parquet.decode_rates import device_decompression, specs_of, with_arrow, with_torch  # noqa: E402
from sluice.io.pinned import columns_nbytes  # noqa: E402

SCHEMES = {
    "dictionary": dict(use_dictionary=True),
    "plain": dict(use_dictionary=False),
    "delta": "DELTA_BINARY_PACKED",
    "byte_stream_split": "BYTE_STREAM_SPLIT",
}


def write(table, path: Path, scheme: str, codec: str) -> None:
    kw = SCHEMES[scheme]
    if isinstance(kw, str):
        enc = {}
        for f in table.schema:
            t = str(f.type)
            if kw == "DELTA_BINARY_PACKED" and (t.startswith("int") or t.startswith("date") or t.startswith("decimal")):
                enc[f.name] = kw
            elif kw == "DELTA_BINARY_PACKED" and t == "string":
                enc[f.name] = "DELTA_LENGTH_BYTE_ARRAY"
            elif kw == "BYTE_STREAM_SPLIT" and (t.startswith("int") or t.startswith("double") or t.startswith("decimal")):
                enc[f.name] = kw
        kw = dict(use_dictionary=False, column_encoding=enc)
    # Page CRCs: without them the pages would stay on the host (device_decompress_unverified=false).
    pq.write_table(table, path, compression=codec, store_decimal_as_integer=True, row_group_size=1 << 20,
                   write_page_checksum=True, **kw)


def decode_arrow(path: Path):
    f = pq.ParquetFile(path)
    return with_arrow(f, list(range(f.metadata.num_row_groups)), specs_of(f.metadata, f.schema_arrow))


def decode_torch(path: Path, device: torch.device, on_device=None):
    """The torch decoder over every column; with ``on_device`` (nvCOMP on a GPU) the pages are
    decompressed there and the chunks read into pinned memory, as a scan does."""
    md = pq.read_metadata(path)
    out, nread = with_torch(str(path), md, list(range(md.num_row_groups)), specs_of(md, md.schema.to_arrow_schema()),
                            device, on_device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, nread


def same(a, b) -> bool:
    if a.type.kind == "string":
        return a.dictionary.take(a.data.cpu().numpy()).equals(b.dictionary.take(b.data.numpy()))
    return torch.equal(a.data.cpu(), b.data)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="a Parquet file (e.g. TPC-H lineitem)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codecs", nargs="+", default=["none", "snappy", "zstd", "lz4"])
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES))
    ap.add_argument("--host-decompress", action="store_true",
                    help="decompress on the host even where nvCOMP could on the device")
    args = ap.parse_args()
    device = torch.device(args.device)
    table = pq.read_table(args.data).slice(0, args.rows)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    on_device = None if args.host_decompress else device_decompression(device)
    print(f"decode {Path(args.data).name}: {table.num_rows:,} rows x {table.num_columns} columns; "
          f"torch decoder on {name} (pages decompressed {'by nvCOMP on the device' if on_device else 'on the host'}), "
          f"pyarrow on the host ({torch.get_num_threads()} threads)")
    print(f"{'scheme':18s} {'codec':7s} {'stored MB':>9s} {'decoded MB':>10s} {'arrow GB/s':>10s} "
          f"{'torch GB/s':>10s} {'torch/arrow':>11s} {'in GB/s':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for scheme in args.schemes:
            for codec in args.codecs:
                path = Path(tmp) / f"{scheme}-{codec}.parquet"
                write(table, path, scheme, codec)
                ref = decode_arrow(path)
                ours, nread = decode_torch(path, device, on_device)
                bad = [c for c in ref if not same(ours[c], ref[c])]
                if bad:
                    raise SystemExit(f"{scheme}/{codec}: torch decoder differs from pyarrow on {bad}")
                nbytes = columns_nbytes(ref)
                ta = tt = float("inf")
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    decode_arrow(path)
                    ta = min(ta, time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    decode_torch(path, device, on_device)
                    tt = min(tt, time.perf_counter() - t0)
                print(f"{scheme:18s} {codec:7s} {nread / 1e6:9.1f} {nbytes / 1e6:10.1f} {nbytes / ta / 1e9:10.3f} "
                      f"{nbytes / tt / 1e9:10.3f} {ta / tt:11.2f} {nread / tt / 1e9:8.3f}", flush=True)
    if on_device is not None:  # what the "in GB/s" column measured
        print(f"pages decompressed: {on_device.pages_device:,} by nvCOMP, {on_device.pages_host:,} on the host "
              f"{dict(on_device.why) or ''}")


if __name__ == "__main__":
    main()
