"""How fast each decoder turns this machine's Parquet into columns on the scan's device: what
``decoder=auto`` compares (``sluice calibrate`` measures it on the largest file of a data
directory and keeps it with the other bandwidths).

Both sides do the whole work of a scan's decode stage on the same row groups: pyarrow decodes on
the host and the columns cross to the device; the page kernels read the column chunks, and
decompresses (nvCOMP on a GPU where installed, else the host) and decodes them on the device.
Decoded bytes per second of each, best of ``runs``."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow.parquet as pq
import torch

from sluice.arrow import arrow_to_column
from sluice.errors import SluiceError
from sluice.io.parquet.decode import nvcomp
from sluice.io.parquet.decode.column import NotDecodable, column_spec
from sluice.io.parquet.decode.kernel_column import KernelPages, check
from sluice.io.parquet.fetch import fetch_chunks
from sluice.io.pinned import columns_nbytes
from sluice.types import from_arrow

#: Row groups measured (enough for a stable rate, bounded on a large file).
ROW_GROUPS = 4


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def specs_of(md, schema, names=None) -> dict:
    """Column -> ColumnSpec for the columns (default all) the device decoder can decode."""
    specs = {}
    for name in names or schema.names:
        try:
            specs[name] = column_spec(md, name, schema.field(name).type, from_arrow(schema.field(name).type))
        except (NotDecodable, SluiceError):  # a type sluice lacks or the decoder leaves: not measured
            continue
    return specs


def device_decompression(device: torch.device, unverified: bool = False):
    """As a scan would: nvCOMP decompresses on a GPU where installed (None: on the host) the
    pages it may take (with a page CRC, or all with ``unverified``: device_decompress_unverified)."""
    return nvcomp.OnDevice(True, unverified=unverified) if device.type == "cuda" and nvcomp.available() else None


def with_arrow(f: pq.ParquetFile, row_groups: list[int], specs: dict, device: torch.device | None = None) -> dict:
    """``decoder=arrow``'s work: pyarrow decodes, the columns cross to ``device``."""
    t = f.read_row_groups(row_groups, columns=list(specs))
    return {c: arrow_to_column(t.column(c), specs[c].ltype, device) for c in specs}


def with_torch(path: str, md, row_groups: list[int], specs: dict, device: torch.device, on_device=None
               ) -> tuple[dict, int]:
    """``decoder=device``'s work: the chunks read (into pinned memory where the pages will be
    decompressed on the device), decompressed and decoded; returns the columns and bytes read."""
    chunks, nread = fetch_chunks(path, md, row_groups, list(specs), pinned=on_device is not None)
    out, errs = {}, []
    for c in specs:
        try:
            out[c], e = KernelPages(chunks[c], specs[c]).decode(device, None, on_device)
        except NotDecodable:  # plain-encoded strings: pyarrow's, in a scan
            continue
        errs += e
    check(errs)
    return out, nread


def measure(path: str | Path, device: torch.device, runs: int = 2) -> dict[str, float]:
    """{"arrow": bytes/s, "device": bytes/s} over the columns the device decoder can decode."""
    path = str(path)
    f = pq.ParquetFile(path)
    md = f.metadata
    rgs = list(range(min(ROW_GROUPS, md.num_row_groups)))
    specs = specs_of(md, f.schema_arrow)
    on_device = device_decompression(device)
    best = {"arrow": float("inf"), "device": float("inf")}
    nbytes = {}
    for _ in range(runs):
        t0 = time.perf_counter()
        out = with_arrow(f, rgs, specs, device)
        _sync(device)
        best["arrow"] = min(best["arrow"], time.perf_counter() - t0)
        nbytes["arrow"] = columns_nbytes(out)
        t0 = time.perf_counter()
        out, _ = with_torch(path, md, rgs, specs, device, on_device)
        _sync(device)
        best["device"] = min(best["device"], time.perf_counter() - t0)
        nbytes["device"] = columns_nbytes(out)
    return {k: nbytes[k] / best[k] if best[k] > 0 else 0.0 for k in best}
