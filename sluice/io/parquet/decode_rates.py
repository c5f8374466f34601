"""How fast each decoder turns this machine's Parquet into columns on the scan's device: what
``decoder=auto`` compares (``sluice calibrate`` measures it on the largest file of a data
directory and keeps it with the other bandwidths).

Both sides do the whole work of a scan's decode stage on the same row groups: pyarrow decodes on
the host and the columns cross to the device; the torch decoder reads the column chunks, and
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
from sluice.io.parquet.decode.column import ColumnPages, NotDecodable, column_spec
from sluice.io.parquet.ranges import fetch_chunks
from sluice.io.pinned import columns_nbytes
from sluice.types import from_arrow

#: Row groups measured (enough for a stable rate, bounded on a large file).
ROW_GROUPS = 4


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(path: str | Path, device: torch.device, runs: int = 2) -> dict[str, float]:
    """{"arrow": bytes/s, "device": bytes/s} over the columns the torch decoder can decode."""
    path = str(path)
    f = pq.ParquetFile(path)
    md = f.metadata
    rgs = list(range(min(ROW_GROUPS, md.num_row_groups)))
    schema = f.schema_arrow
    specs = {}
    for name in schema.names:
        try:
            specs[name] = column_spec(md, name, schema.field(name).type, from_arrow(schema.field(name).type))
        except (NotDecodable, SluiceError):  # a type sluice lacks or the decoder leaves: not measured
            continue
    cols = list(specs)
    # As a scan would: nvCOMP decompresses on a GPU where installed.
    on_device = nvcomp.OnDevice(True) if device.type == "cuda" and nvcomp.available() else None
    best = {"arrow": float("inf"), "device": float("inf")}
    nbytes = {}
    for _ in range(runs):
        t0 = time.perf_counter()
        t = f.read_row_groups(rgs, columns=cols)
        out = {c: arrow_to_column(t.column(c), specs[c].ltype, device) for c in cols}
        _sync(device)
        best["arrow"] = min(best["arrow"], time.perf_counter() - t0)
        nbytes["arrow"] = columns_nbytes(out)
        t0 = time.perf_counter()
        chunks, _ = fetch_chunks(path, md, rgs, cols)
        out = {c: ColumnPages(chunks[c], specs[c]).decode(device, None, on_device) for c in cols}
        _sync(device)
        best["device"] = min(best["device"], time.perf_counter() - t0)
        nbytes["device"] = columns_nbytes(out)
    return {k: nbytes[k] / best[k] if best[k] > 0 else 0.0 for k in best}
