"""Which decoder a scan uses (``decoder``; chosen when lowering, :mod:`sluice.physical.scan`):
pyarrow on the host, or sluice's Triton page kernels on the scan's device, by what ``sluice
calibrate`` measured (:mod:`sluice.adapt.calibration`)."""

from __future__ import annotations

import torch

from sluice.errors import UnsupportedError
from pathlib import Path
from sluice.adapt.calibration import load_calibration
from sluice.io.parquet.decode import kernels
from sluice.io.parquet.decode import nvcomp


def decoder_name(setting: str, device: torch.device | None = None, path: str | None = None) -> str:
    """``device`` and ``arrow`` are taken as set (``device`` only where the page kernels run: CUDA,
    or a CPU under ``TRITON_INTERPRET=1``, else an error). ``auto``: the kernels on a GPU where
    nvCOMP is installed *and* ``sluice calibrate`` measured it faster than pyarrow on this data
    directory (``decode_bps``, looked up by the folders above ``path``); pyarrow everywhere else.
    Uncalibrated, pyarrow: the page kernels are not measured on a GPU yet (the retired torch-op
    decoder ran at 0.13-0.29 GB/s on an H200 against pyarrow's 0.37-0.65 GB/s on 16 host cores),
    and nvCOMP documents its decoders as safe on valid input only. On a CPU the kernels run only
    in Triton's interpreter, and without nvCOMP the device decoder decompresses on the host."""
    if setting == "device":
        why = kernels.why_not(device if device is not None else torch.device("cpu"))
        if why is not None:
            raise UnsupportedError(f"decoder=device: {why}")
    if setting != "auto":
        return setting
    if device is None or device.type != "cuda":
        return "arrow"
    if not nvcomp.available() or not kernels.usable(device):
        return "arrow"
    rates = calibrated_rates(path)
    if rates and rates.get("device", 0) > rates.get("arrow", 0):
        return "device"
    return "arrow"


def calibrated_rates(path: str | None) -> dict | None:
    """The decode rates ``sluice calibrate`` kept for the data directory holding ``path``."""
    if path is None:
        return None

    for d in list(Path(path).resolve().parents)[:3]:
        cal = load_calibration(d)
        if cal and cal.get("decode_bps"):
            return cal["decode_bps"]
    return None
