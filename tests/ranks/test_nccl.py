"""The NCCL data path (issue 27, on a GPU machine only): every exchanged row crosses NCCL as
tensor bytes and answers equal DuckDB's. One GPU: ``--ranks 1`` with ``exchange_loopback``, so
the rank's own rows travel through NCCL; two or more GPUs: two ranks, one GPU each."""

from __future__ import annotations

import pytest
import torch
from ranks import check_on_ranks

from sluice.testing.queries import tpch_queries

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="NCCL needs a CUDA device")

CASES = {
    "1 rank, loopback through NCCL": (1, {"exchange_loopback": True}),
    "1 rank, loopback, partitioned joins, tiny batches": (1, {"exchange_loopback": True, "broadcast_bytes": 0,
                                                              "exchange_batch_bytes": 65536}),
    "2 ranks, a GPU each": (2, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tpch_over_nccl(case, tpch_spread):
    ranks, settings = CASES[case]
    if ranks > torch.cuda.device_count():
        pytest.skip(f"{ranks} ranks need {ranks} GPUs (NCCL refuses two ranks on one)")
    check_on_ranks(tpch_spread, tpch_queries(), ranks,
                   {"device": "cuda", "exchange_wire": "tensor", **settings})
