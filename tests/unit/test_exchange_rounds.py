"""An exchange's round goes out when one destination's batch is full (issue 52 item 5): the
batch is per destination, so messages keep their size as ranks are added; all destinations
together stay within a batch each and an eighth of the memory budget."""

import torch

from sluice.chunk import Chunk, Column
from sluice.exec.exchange_rounds import SLOW_START_MIN, batch_limits, round_cap, sliced
from sluice.types import INT64


def test_a_batch_per_destination_within_an_eighth_of_memory():
    mib = 1 << 20
    assert round_cap(4 * mib, 2, 8 << 30) == 4 * mib  # one other rank: one batch
    assert round_cap(4 * mib, 9, 8 << 30) == 32 * mib  # eight others: eight batches
    assert round_cap(4 * mib, 64, 1 << 30) == 128 * mib  # 63 batches > 1 GiB / 8
    assert round_cap(4 * mib, 64, 8 * mib) == 4 * mib  # never under one batch


def test_rounds_start_small_then_take_the_whole_batch():
    """Slow start: nothing crosses the link while the first batch is packed, and a pipelined
    consumer has nothing before it lands, so the first rounds are 1/8, 1/4, 1/2 of a batch."""
    mib = 1 << 20
    got = [batch_limits(4 * mib, 8 * mib, k, "deferred") for k in range(5)]
    assert got == [(mib // 2, mib), (mib, 2 * mib), (2 * mib, 4 * mib), (4 * mib, 8 * mib), (4 * mib, 8 * mib)]
    assert batch_limits(4 * mib, 8 * mib, 0, "blocking") == (4 * mib, 8 * mib)  # one round: the baseline
    assert batch_limits(128 << 10, 128 << 10, 0, "chunked") == (SLOW_START_MIN, SLOW_START_MIN)  # a floor
    assert batch_limits(16 << 10, 16 << 10, 0, "chunked") == (16 << 10, 16 << 10)  # never above the batch


def test_slices_follow_a_limit_that_grows():
    """The input is sliced at the limit of the round that pulls it."""
    chunk = Chunk({"x": Column(torch.arange(1000, dtype=torch.int64), INT64)}, 1000)  # 8,000 bytes
    limits = iter([800, 8000])
    out = list(sliced(iter([chunk, chunk]), lambda: next(limits)))
    assert [c.num_rows for c in out] == [100] * 10 + [1000]
    assert torch.equal(torch.cat([c.columns["x"].data for c in out[:10]]), chunk.columns["x"].data)
