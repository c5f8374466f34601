"""An exchange's round goes out when one destination's batch is full (issue 52 item 5): the
batch is per destination, so messages keep their size as ranks are added; all destinations
together stay within a batch each and an eighth of the memory budget."""

from sluice.exec.exchange_rounds import round_cap


def test_a_batch_per_destination_within_an_eighth_of_memory():
    mib = 1 << 20
    assert round_cap(4 * mib, 2, 8 << 30) == 4 * mib  # one other rank: one batch
    assert round_cap(4 * mib, 9, 8 << 30) == 32 * mib  # eight others: eight batches
    assert round_cap(4 * mib, 64, 1 << 30) == 128 * mib  # 63 batches > 1 GiB / 8
    assert round_cap(4 * mib, 64, 8 * mib) == 4 * mib  # never under one batch
