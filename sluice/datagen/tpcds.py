"""TPC-DS data through ``tpcgen-cli`` (Parquet output, any scale factor, SF 0.01 in seconds)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sluice.datagen.checksums import checksum_files
from sluice.datagen.tools import generator
from sluice.errors import DataError

TPCDS_TABLES = ("call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer", "customer_address",
                "customer_demographics", "date_dim", "household_demographics", "income_band", "inventory", "item",
                "promotion", "reason", "ship_mode", "store", "store_returns", "store_sales", "time_dim",
                "warehouse", "web_page", "web_returns", "web_sales", "web_site")


def generate_tpcds(sf: float, out: str | Path, page_checksums: bool = True) -> Path:
    """Write the 24 TPC-DS tables at scale factor ``sf`` as ``OUT/NAME.parquet``, with page CRCs
    unless ``page_checksums`` is false (:mod:`sluice.datagen.checksums`)."""
    if sf <= 0:
        raise DataError(f"scale factor must be positive, not {sf}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [generator("tpcgen-cli"), "tpcds", "parquet", "-s", f"{sf:g}", "--output-dir", str(out),
           "--tables", ",".join(TPCDS_TABLES)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()
        raise DataError(f"tpcgen-cli failed: {msg[-1] if msg else res.returncode}")
    if page_checksums:
        checksum_files(out, TPCDS_TABLES)
    return out
