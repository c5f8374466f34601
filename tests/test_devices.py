"""Device selection and the CUDA path. CUDA tests skip cleanly where there is no GPU; on the
GPU machine they compare CUDA results with CPU results and DuckDB (run the whole suite there
with ``pytest --device cuda`` as well)."""

import pytest
import torch

import sluice
from sluice.errors import ConfigError
from sluice.testing.oracle import compare
from sluice.testing.queries import ssb_queries, tpch_queries

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_auto_picks_cpu_without_cuda(tpch_dir):
    con = sluice.connect(tpch_dir, device="auto")
    assert con.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when CUDA is absent")
def test_cuda_requested_without_cuda_is_a_clean_error(tpch_dir):
    with pytest.raises(ConfigError, match="no CUDA device"):
        sluice.connect(tpch_dir, device="cuda")


@needs_cuda
@pytest.mark.parametrize("name", sorted(tpch_queries()))
def test_tpch_cuda_equals_cpu(name, tpch_dir, tpch_duck):
    sql = tpch_queries()[name]
    gpu = sluice.connect(tpch_dir, device="cuda").sql(sql).to_arrow()
    cpu = sluice.connect(tpch_dir, device="cpu").sql(sql).to_arrow()
    compare(gpu, cpu)
    compare(gpu, tpch_duck.sql(sql).to_arrow_table())


@needs_cuda
@pytest.mark.parametrize("name", sorted(ssb_queries()))
def test_ssb_cuda_equals_cpu(name, ssb_dir):
    sql = ssb_queries()[name]
    compare(sluice.connect(ssb_dir, device="cuda").sql(sql).to_arrow(),
            sluice.connect(ssb_dir, device="cpu").sql(sql).to_arrow())
