"""``sluice doctor``: what makes these Parquet files slow for a device, and the fix. It reads
only footers and page headers: no torch (tests/test_cli.py checks it)."""

from __future__ import annotations

from pathlib import Path

from sluice.layout.doctor import diagnose, format_report


def run(args, argv: list[str]) -> int:
    """The report for the device the files are checked for."""
    target = args.target
    if target == "auto":  # without importing torch: an NVIDIA driver with a GPU
        target = "gpu" if any(Path("/proc/driver/nvidia/gpus").glob("*")) else "cpu"
    device = "cuda" if target == "gpu" else "cpu"
    print(format_report(diagnose(args.path, device)))
    return 0
