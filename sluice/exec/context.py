"""What every operator can reach while running: settings, device, the shared I/O pool,
the metadata cache, the timeline recorder and per-operator statistics."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import torch

from sluice.config import Config
from sluice.errors import SluiceError, internal_error, is_resource_error
from sluice.io.parquet.metadata import MetadataCache
from sluice.metrics import OperatorStats, Recorder


@dataclass
class ExecContext:
    config: Config
    device: torch.device
    pool: ThreadPoolExecutor
    cache: MetadataCache
    recorder: Recorder = field(default_factory=Recorder)
    stats: dict[int, OperatorStats] = field(default_factory=dict)  # id(operator) -> stats
    readers: dict[int, object] = field(default_factory=dict)       # id(scan operator) -> ScanReader
    progress: Callable[[int], None] | None = None


def chunk_nbytes(chunk) -> int:
    n = 0
    for c in chunk.columns.values():
        if not c.is_const:
            n += c.data.numel() * c.data.element_size()
    return n


def timed(gen, st: OperatorStats):
    """Wrap a chunk generator: count rows/chunks/bytes and inclusive time producing them.

    An unexpected exception leaves as an InternalError naming the operator that raised it (the
    innermost one: its parents see a SluiceError and let it pass)."""
    it = iter(gen)
    while True:
        t0 = time.perf_counter()
        try:
            chunk = next(it)
        except StopIteration:
            st.inclusive_s += time.perf_counter() - t0
            return
        except SluiceError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in this operator: say which one
            if is_resource_error(e):
                raise
            raise internal_error(f"operator {st.name}", e) from e
        st.inclusive_s += time.perf_counter() - t0
        st.rows += chunk.num_rows
        st.chunks += 1
        st.nbytes += chunk_nbytes(chunk)
        yield chunk
