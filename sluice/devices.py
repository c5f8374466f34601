"""Device names -> torch devices, in one spelling (every comparison of devices depends on it)."""

from __future__ import annotations

import torch

from sluice.errors import ConfigError


def resolve_device(name: str) -> torch.device:
    """The device a setting names, in one spelling: ``cuda`` and ``auto`` on a GPU machine become
    ``cuda:N`` (the current device), because ``torch.device("cuda") != torch.device("cuda:0")``
    and every comparison of devices (stream caches, tensors' ``.device``) needs the index."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError("device 'cuda' was asked for but no CUDA device is available")
        try:
            dev = torch.device(name)
        except RuntimeError:
            raise ConfigError(f"device {name!r} is not a device name (cpu, cuda, cuda:N or auto)") from None
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"{name} does not exist ({torch.cuda.device_count()} CUDA devices)")
        return normalize_device(dev)
    return torch.device("cpu")


def normalize_device(dev: torch.device) -> torch.device:
    """``dev`` with its index: ``cuda`` -> ``cuda:<current device>`` (what tensors report)."""
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev
