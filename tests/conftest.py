"""Shared fixtures: TPC-H SF 0.1 (tpchgen-cli) and SSB derived from it, generated once per
session; ``--device`` runs the whole suite on another device (``--device cuda`` on a GPU)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# Without a GPU, ``decoder=device`` runs the Triton page kernels in Triton's interpreter: it must
# be set before triton is first imported (triton.language's own jit functions read it then).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import sluice  # noqa: E402
from sluice.datagen.ssb import derive_ssb
from sluice.datagen.tpch import generate_tpch
from sluice.testing.oracle import duckdb_connect

TEST_SF = 0.1


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", help="device for sluice in tests: cpu, cuda, auto")


@pytest.fixture(scope="session")
def device(request) -> str:
    dev = request.config.getoption("--device")
    if dev.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip("CUDA requested but not available")
    return dev



def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: a worker per core, and one more on machines of up to 4 cores. Much of the
    suite waits rather than computes -- ranks starting and meeting (torchrun's rendezvous, gloo),
    subprocesses importing torch, timeouts the fail-stop tests wait out: on CI's 2 cores, 2
    workers kept the CPUs 82 % busy (41 min user + 9 min system over 30.5 min)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return n + 1 if n <= 4 else n

@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    cached = os.environ.get("SLUICE_TEST_DATA")
    if cached:
        root = Path(cached)
        if (root / "tpch" / "lineitem.parquet").exists() and (root / "ssb" / "lineorder.parquet").exists():
            return root
    else:
        root = tmp_path_factory.mktemp("data")
    generate_tpch(TEST_SF, root / "tpch")
    derive_ssb(root / "tpch", root / "ssb")
    return root


@pytest.fixture(scope="session")
def tpch_dir(data_root) -> Path:
    return data_root / "tpch"


@pytest.fixture(scope="session")
def ssb_dir(data_root) -> Path:
    return data_root / "ssb"


#: Without a GPU, ``decoder=device`` runs in Triton's interpreter (a few thousand values a second
#: per run of pages walked): tests that force it read TPC-H at this scale factor instead, written
#: in small row groups and pages (many of each per table); on CUDA they read SF 0.1.
SMALL_SF = 0.002


def _small(data_root: Path) -> Path:
    """Made once, in a folder of its own renamed into place (test workers may race to it)."""
    import shutil
    import tempfile

    import pyarrow.parquet as pq
    root = data_root / f"tpch-sf{SMALL_SF:g}-small-pages"
    if not root.exists():
        work = Path(tempfile.mkdtemp(dir=data_root, prefix=".small-"))
        generate_tpch(SMALL_SF, work / "raw")
        (work / "tpch").mkdir()
        for f in (work / "raw").glob("*.parquet"):
            pq.write_table(pq.read_table(f), work / "tpch" / f.name, row_group_size=1000, data_page_size=4096,
                           compression="snappy")
        derive_ssb(work / "tpch", work / "ssb")
        shutil.rmtree(work / "raw")
        try:
            work.rename(root)
        except OSError:  # another worker's is in place
            shutil.rmtree(work, ignore_errors=True)
    return root


@pytest.fixture(scope="session")
def device_decoder_dirs(data_root, device) -> tuple[Path, Path]:
    """(TPC-H, SSB) for tests that force ``decoder=device``: SF 0.1 on CUDA, SF 0.002 in small
    row groups and pages without a GPU (Triton's interpreter)."""
    if device.startswith("cuda") or (device == "auto" and torch.cuda.is_available()):
        return data_root / "tpch", data_root / "ssb"
    root = _small(data_root)
    return root / "tpch", root / "ssb"


@pytest.fixture(scope="session")
def tpch_duck(tpch_dir):
    return duckdb_connect(tpch_dir)


@pytest.fixture(scope="session")
def ssb_duck(ssb_dir):
    return duckdb_connect(ssb_dir)


#: The settings an edge-case test runs under: as a user runs it, in 3-row chunks (every
#: operator sees many chunks and merges partial states), and with every buffer spilled.
EDGE_SETTINGS = {"default": {}, "chunks3": {"chunk_rows": 3},
                 "spilled": {"chunk_rows": 3, "force_spill": True}}


@pytest.fixture(params=list(EDGE_SETTINGS))
def edge_settings(request) -> dict:
    return EDGE_SETTINGS[request.param]


@pytest.fixture(scope="session")
def connect(device):
    """Open a connection on the suite's device with extra settings."""
    def make(data, **settings):
        return sluice.connect(data, device=device, **settings)
    return make


TPCDS_SF = 0.1


def _tpcds(data_root: Path, sf: float) -> Path:
    from sluice.datagen.tpcds import generate_tpcds
    root = data_root / f"tpcds-sf{sf:g}"
    if not (root / "store_sales.parquet").exists():
        generate_tpcds(sf, root)
    return root


@pytest.fixture(scope="session")
def tpcds_dir(data_root) -> Path:
    """TPC-DS SF 0.1 (tpcgen-cli), generated once next to the TPC-H data (a few seconds)."""
    return _tpcds(data_root, TPCDS_SF)


@pytest.fixture(scope="session")
def tpcds_sf1_dir(data_root) -> Path:
    """TPC-DS SF 1 for a few queries (about 15 s to generate, 0.4 GB)."""
    return _tpcds(data_root, 1)


@pytest.fixture(scope="session")
def tpcds_duck(tpcds_dir):
    return duckdb_connect(tpcds_dir)
