"""Data for the multi-rank tests: the suite's TPC-H, SSB and TPC-DS at SF 0.1 rewritten with
small row groups, so that every rank scans a share of every large table (and the small ones
leave some ranks with zero row groups)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))

# A collective that does not match fails at once instead of hanging until the timeout.
os.environ.setdefault("TORCH_DISTRIBUTED_DEBUG", "DETAIL")


def spread(src: Path, dst: Path, rows: int) -> Path:
    """Copy every table of ``src`` into ``dst`` with row groups of ``rows`` rows."""
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(src.glob("*.parquet")):
        if not (dst / p.name).exists():
            pq.write_table(pq.read_table(p), dst / p.name, row_group_size=rows)
    return dst


@pytest.fixture(scope="session")
def tpch_spread(tpch_dir, data_root) -> Path:
    return spread(tpch_dir, data_root / "tpch-spread", 10_000)


@pytest.fixture(scope="session")
def ssb_spread(ssb_dir, data_root) -> Path:
    return spread(ssb_dir, data_root / "ssb-spread", 20_000)


@pytest.fixture(scope="session")
def tpcds_spread(tpcds_dir, data_root) -> Path:
    return spread(tpcds_dir, data_root / "tpcds-spread", 20_000)
