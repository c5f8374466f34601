"""Triton page kernels of the device Parquet decoder (``decoder=device``).

One module per job -- :mod:`levels` (where each page's levels and values lie), :mod:`hybrid`
(the RLE/bit-packed hybrid: definition levels, dictionary indices fused with the dictionary
gather), :mod:`plain` (PLAIN fixed width, little- or big-endian), :mod:`split`
(BYTE_STREAM_SPLIT), :mod:`delta` (DELTA_BINARY_PACKED), :mod:`scatter` (values to their rows
around NULLs). Each is launched once per kernel kind and value width over all pages of a read
task's column (one program per page, or per tile of a page), with every size taken from the
page headers, so nothing waits for the device inside a decode: corrupt input sets a per-page
error code that the caller checks once, after every launch.

Triton is optional: the package imports without it, and :func:`usable` says whether the kernels
can run on a device -- CUDA, or CPU tensors under ``TRITON_INTERPRET=1`` (the tests: Triton's
interpreter runs the same kernels, slowly; it does not catch out-of-bounds loads, so every load
is masked against descriptors checked on the host or bounds read from the page).
"""

from __future__ import annotations

import importlib.util
import os

import torch

#: Error codes a kernel stores per page (0: fine); the decoder turns them into one message.
ERRORS = {
    1: "its definition levels run past the page",
    2: "a run of RLE/bit-packed values runs past its stream",
    3: "RLE/bit-packed streams hold fewer values than their pages say",
    4: "an RLE run's value does not fit its bit width",
    5: "a dictionary index past its dictionary",
    6: "values run past their page",
    7: "a decimal value does not fit in 18 digits",
    8: "corrupt DELTA_BINARY_PACKED header",
    9: "DELTA_BINARY_PACKED pages hold another number of values than their levels say",
    10: "DELTA_BINARY_PACKED values run past their page (or a miniblock is wider than 64 bits)",
    11: "a bit width above 32",
    13: "definition levels above the column's maximum",
}


def interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter (on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def why_not(device: torch.device) -> str | None:
    """Why the kernels cannot run on ``device`` (None: they can)."""
    if not installed():
        return "triton is not installed"
    if device.type == "cuda":
        return None
    if device.type == "cpu" and interpreted():
        return None
    return f"the Triton page kernels need a CUDA device (or TRITON_INTERPRET=1), not {device.type}"


def usable(device: torch.device) -> bool:
    return why_not(device) is None
