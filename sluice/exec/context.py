"""What every operator can reach while running: settings, device, the shared I/O pool,
the metadata cache and per-operator metrics."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from sluice.config import Config
from sluice.io.parquet.metadata import MetadataCache


@dataclass
class OperatorMetrics:
    name: str
    rows_out: int = 0
    chunks_out: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExecContext:
    config: Config
    device: torch.device
    pool: ThreadPoolExecutor
    cache: MetadataCache
    metrics: list[OperatorMetrics] = field(default_factory=list)

    def new_metrics(self, name: str) -> OperatorMetrics:
        m = OperatorMetrics(name)
        self.metrics.append(m)
        return m


def timed(gen, m: OperatorMetrics):
    """Wrap a chunk generator: count rows/chunks and inclusive time spent producing them."""
    it = iter(gen)
    while True:
        t0 = time.perf_counter()
        try:
            chunk = next(it)
        except StopIteration:
            m.seconds += time.perf_counter() - t0
            return
        m.seconds += time.perf_counter() - t0
        m.rows_out += chunk.num_rows
        m.chunks_out += 1
        yield chunk
