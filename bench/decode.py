"""Decode benchmark: pyarrow vs sluice's device decoder (the Triton page kernels), per encoding
and codec, side by side.

    python bench/decode.py --data DIR/lineitem.parquet [--device cpu|cuda] [--rows N] [--runs 3]
                           [--kernel-only]

The table's columns are rewritten once per (encoding scheme, codec) into a temporary folder;
for each file, best-of-runs time to decode every column of every row group with pyarrow on all
host threads (then to sluice columns on the host, as ``decoder=arrow`` does) and with the page
kernels on ``--device`` (``decoder=device``), the decoded GB/s of each, their ratio, and the
compressed bytes per second the device path takes in (on a GPU with nvCOMP: what crosses PCIe,
the pages decompressing there; ``--host-decompress`` decompresses them on the host first, to
compare). ``--kernel-only`` adds the kernels' own time: the pages already decompressed on the
device, only the launches timed (CUDA events on a GPU; the host clock elsewhere), and their
decoded GB/s. Every decoded column is checked equal to pyarrow's. On a CPU the kernels run in
Triton's interpreter (``TRITON_INTERPRET=1``): a check that the path runs, not a speed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():  # the kernels in Triton's interpreter (set before triton loads)
    os.environ.setdefault("TRITON_INTERPRET", "1")

from sluice.io.parquet.decode.column import NotDecodable  # noqa: E402
from sluice.io.parquet.decode.kernel_column import KernelPages, _launch, _layout, check, decompress_on_host  # noqa: E402
from sluice.io.parquet.decode_rates import device_decompression, specs_of, with_arrow, with_torch  # noqa: E402
from sluice.io.parquet.fetch import fetch_chunks  # noqa: E402
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


def decode_arrow(path: Path, columns=None):
    f = pq.ParquetFile(path)
    specs = specs_of(f.metadata, f.schema_arrow)
    if columns is not None:  # the same columns as the device decoder's (strings not dictionary-coded: not)
        specs = {c: specs[c] for c in columns}
    return with_arrow(f, list(range(f.metadata.num_row_groups)), specs)


def kernel_seconds(path: Path, device: torch.device) -> tuple[float, int]:
    """The page kernels alone over every column they decode: the pages decompressed and on the
    device first (not timed), then every launch of every column timed, with CUDA events on a
    GPU; returns (seconds, decoded bytes)."""
    md = pq.read_metadata(path)
    specs = specs_of(md, md.schema.to_arrow_schema())
    chunks, _ = fetch_chunks(str(path), md, list(range(md.num_row_groups)), list(specs))
    ready = []
    for c, spec in specs.items():
        try:
            pages = KernelPages(chunks[c], spec)
            pages.check_encodings()
        except NotDecodable:
            continue
        lay = _layout(pages, list(range(len(pages.idx))))
        if lay.N == 0:
            continue
        host = torch.zeros(lay.size + 16, dtype=torch.uint8)
        decompress_on_host(lay, memoryview(host.numpy()))
        ready.append((host.to(device), lay, spec))
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    t0 = time.perf_counter()
    errs, nbytes = [], 0
    for buf, lay, spec in ready:
        col = _launch(buf, lay, spec, device, errs)
        nbytes += col.data.numel() * col.data.element_size()
    if cuda:
        end.record()
        torch.cuda.synchronize(device)
        secs = start.elapsed_time(end) / 1e3
    else:
        secs = time.perf_counter() - t0
    check(errs)
    return secs, nbytes


def decode_torch(path: Path, device: torch.device, on_device=None):
    """The page kernels over every column; with ``on_device`` (nvCOMP on a GPU) the pages are
    decompressed there and the chunks read into pinned memory, as a scan does."""
    md = pq.read_metadata(path)
    out, nread = with_torch(str(path), md, list(range(md.num_row_groups)), specs_of(md, md.schema.to_arrow_schema()),
                            device, on_device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, nread


def same(a, b) -> bool:
    if a.valid is not None or b.valid is not None:
        va = a.valid.cpu() if a.valid is not None else torch.ones(len(a.data), dtype=torch.bool)
        vb = b.valid.cpu() if b.valid is not None else torch.ones(len(b.data), dtype=torch.bool)
        if not torch.equal(va, vb):
            return False
        if a.type.kind != "string":
            return torch.equal(a.data.cpu()[va], b.data.cpu()[vb])
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
    ap.add_argument("--kernel-only", action="store_true",
                    help="also time the kernels alone, the pages already on the device (CUDA events)")
    args = ap.parse_args()
    device = torch.device(args.device)
    pa.set_cpu_count(os.cpu_count() or 1)  # pyarrow on every host thread
    table = pq.read_table(args.data).slice(0, args.rows)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    on_device = None if args.host_decompress else device_decompression(device)
    print(f"decode {Path(args.data).name}: {table.num_rows:,} rows x {table.num_columns} columns; "
          f"page kernels on {name}{' (Triton interpreter)' if device.type == 'cpu' else ''} "
          f"(pages decompressed {'by nvCOMP on the device' if on_device else 'on the host'}), "
          f"pyarrow on the host ({pa.cpu_count()} threads)")
    print(f"{'scheme':18s} {'codec':7s} {'stored MB':>9s} {'decoded MB':>10s} {'arrow GB/s':>10s} "
          f"{'device GB/s':>11s} {'device/arrow':>12s} {'in GB/s':>8s}" + (f" {'kernel GB/s':>11s}" if args.kernel_only
                                                                             else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for scheme in args.schemes:
            for codec in args.codecs:
                path = Path(tmp) / f"{scheme}-{codec}.parquet"
                write(table, path, scheme, codec)
                ours, nread = decode_torch(path, device, on_device)
                ref = decode_arrow(path, list(ours))
                bad = [c for c in ours if not same(ours[c], ref[c])]
                if bad:
                    raise SystemExit(f"{scheme}/{codec}: the device decoder differs from pyarrow on {bad}")
                nbytes = columns_nbytes(ref)
                ta = tt = float("inf")
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    decode_arrow(path, list(ours))
                    ta = min(ta, time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    decode_torch(path, device, on_device)
                    tt = min(tt, time.perf_counter() - t0)
                kern = ""
                if args.kernel_only:
                    tk, kbytes = min(kernel_seconds(path, device) for _ in range(args.runs))
                    kern = f" {kbytes / tk / 1e9:11.3f}"
                print(f"{scheme:18s} {codec:7s} {nread / 1e6:9.1f} {nbytes / 1e6:10.1f} {nbytes / ta / 1e9:10.3f} "
                      f"{nbytes / tt / 1e9:11.3f} {ta / tt:12.2f} {nread / tt / 1e9:8.3f}{kern}", flush=True)
    if on_device is not None:  # what the "in GB/s" column measured
        print(f"pages decompressed: {on_device.pages_device:,} by nvCOMP, {on_device.pages_host:,} on the host "
              f"{dict(on_device.why) or ''}")


if __name__ == "__main__":
    main()
