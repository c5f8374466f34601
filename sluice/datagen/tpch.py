"""TPC-H data through ``tpchgen-cli`` (Parquet output)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sluice.datagen.checksums import checksum_files
from sluice.datagen.tools import generator
from sluice.errors import DataError

TPCH_TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


def generate_tpch(sf: float, out: str | Path, tables: tuple[str, ...] = TPCH_TABLES,
                  parts: int | None = None, quiet: bool = True, page_checksums: bool = True) -> Path:
    """Write TPC-H tables at scale factor ``sf`` as ``OUT/NAME.parquet`` (or ``OUT/NAME/`` parts),
    with page CRCs unless ``page_checksums`` is false (:mod:`sluice.datagen.checksums`)."""
    if sf <= 0:
        raise DataError(f"scale factor must be positive, not {sf}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [generator("tpchgen-cli"), "parquet", "-s", f"{sf:g}", "--output-dir", str(out), "--tables", ",".join(tables)]
    if parts:
        cmd += ["--parts", str(parts)]
    if quiet:
        cmd.append("--quiet")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()
        raise DataError(f"tpchgen-cli failed: {msg[-1] if msg else res.returncode}")
    if page_checksums:
        checksum_files(out, tables)
    return out
