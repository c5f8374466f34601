"""``--analyze`` names what KvikIO really did (issue 49): the torch decoder reads column chunks
into a pinned *host* buffer, so its reads never use GPUDirect Storage, in compat mode or not."""

from __future__ import annotations

import inspect

import pytest

from sluice.io import kvikio_read
from sluice.io.parquet import decoders


@pytest.mark.parametrize("compat", [True, False, None])
def test_a_read_into_host_memory_never_claims_gds(compat):
    label = kvikio_read.reads_label(compat, into_device=False)
    assert label.startswith("kvikio into pinned host memory")
    assert "no GPUDirect Storage" in label
    assert ("compat mode" in label) == (compat is not None)
    assert ("not in compat mode" in label) == (compat is False)


def test_only_a_device_read_out_of_compat_mode_may_use_gds():
    assert "GPUDirect Storage where" in kvikio_read.reads_label(False, into_device=True)
    for compat in (True, None):
        label = kvikio_read.reads_label(compat, into_device=True)
        assert label.startswith("kvikio into device memory") and "no GPUDirect Storage" in label


def test_the_torch_decoder_labels_its_reads_as_host_reads():
    src = inspect.getsource(decoders.KernelDecoder.__init__)
    assert "reads_label(kvikio_read.compat_mode(), into_device=False)" in src
    assert "(GPUDirect Storage)" not in inspect.getsource(decoders)
