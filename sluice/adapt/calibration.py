"""Measure this machine's bandwidths for the T_min bound and cache them.

- storage read, cold: each file's pages are dropped from the page cache first
  (``posix_fadvise(DONTNEED)``, no root needed for clean pages), then read sequentially in
  8 MiB requests;
- storage read, page-cached: the same files read again;
- host -> device: pinned 256 MiB copies (CUDA only);
- all-to-all between N local ranks (``--ranks N``): the network term of T_min
  (:mod:`sluice.ranks.bandwidth`), kept per number of ranks at the exchange's batch size.

Results are cached in ``$XDG_CACHE_HOME/sluice/calibration.json`` (default ``~/.cache``),
keyed by the data directory's real path.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
from sluice.errors import DataError
from sluice.devices import resolve_device
from sluice.io.parquet.decode_rates import measure

READ_BLOCK = 8 << 20
#: Enough data for a stable number without reading terabytes.
MAX_BYTES = 4 << 30


def cache_file() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sluice" / "calibration.json"


def _files(data: Path) -> list[Path]:
    files = sorted(p for p in data.rglob("*.parquet") if p.is_file())
    out, total = [], 0
    for f in files:
        out.append(f)
        total += f.stat().st_size
        if total >= MAX_BYTES:
            break
    return out


def _read_all(files: list[Path], drop_cache: bool) -> tuple[int, float]:
    total = 0
    buf = bytearray(READ_BLOCK)
    view = memoryview(buf)
    t0 = time.perf_counter()
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            if drop_cache and hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while True:
                n = os.readv(fd, [view])
                if n <= 0:
                    break
                total += n
        finally:
            os.close(fd)
    return total, time.perf_counter() - t0


def measure_decode(files: list[Path], device: torch.device) -> dict | None:
    """On a GPU, each decoder's rate on the largest file (what ``decoder=auto`` compares)."""
    if device.type != "cuda" or not files:
        return None
    return measure(max(files, key=lambda p: p.stat().st_size), device)


def measure_h2d(device: torch.device, nbytes: int = 256 << 20, repeats: int = 5) -> float | None:
    if device.type != "cuda":
        return None
    src = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dst = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize(device)
    return nbytes * repeats / (time.perf_counter() - t0)


def calibrate(data: str | Path, device: torch.device | None = None) -> dict:
    data = Path(data).resolve()
    files = _files(data)
    if not files:
        raise DataError(f"no Parquet files under {data} to measure")
    for f in files:  # drop first, so the cold read really reads the device
        fd = os.open(f, os.O_RDONLY)
        try:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    n, cold = _read_all(files, drop_cache=False)
    n2, warm = _read_all(files, drop_cache=False)
    if device is None:
        device = resolve_device("auto")
    result = {
        "data": str(data), "bytes": n, "files": len(files),
        "read_cold_bps": n / cold if cold > 0 else None,
        "read_cached_bps": n2 / warm if warm > 0 else None,
        "h2d_bps": measure_h2d(device),
        "decode_bps": measure_decode(files, device),
        "device": str(device), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    path = cache_file()
    try:
        allres = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        allres = {}
    old = allres.get(str(data)) or {}
    if old.get("all_to_all_bps"):
        result["all_to_all_bps"] = old["all_to_all_bps"]
    allres[str(data)] = result
    _save(path, allres)
    return result


def save_all_to_all(data: str | Path, ranks: int, rates: dict[int, float], batch_bytes: int = 4 << 20) -> float:
    """Keep the all-to-all rate of ``ranks`` ranks (at the size nearest the exchange's batch,
    one per destination) in ``data``'s calibration; returns it."""
    size = min(rates, key=lambda n: abs(n - batch_bytes))
    path = cache_file()
    try:
        allres = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        allres = {}
    rec = allres.setdefault(str(Path(data).resolve()), {})
    rec.setdefault("all_to_all_bps", {})[str(ranks)] = rates[size]
    _save(path, allres)
    return rates[size]


def _save(path: Path, allres: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(allres, indent=1))
    os.replace(tmp, path)


def load_calibration(data: str | Path) -> dict | None:
    path = cache_file()
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text()).get(str(Path(data).resolve()))
    except (OSError, ValueError):
        return None
