"""Shared by the benchmarks: best-of-N timing after one warm-up run, and the median of N."""

from __future__ import annotations

import time
from typing import Callable


def best_of(fn: Callable[[], object], runs: int, before: Callable[[], None] | None = None) -> tuple[float, object]:
    """Run ``fn`` once (warm-up; its result is returned for checking), then ``runs`` timed
    times, calling ``before`` (untimed) ahead of each; returns (best seconds, result)."""
    result = fn()
    best = float("inf")
    for _ in range(runs):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def median_of(fn: Callable[[], object], runs: int) -> float:
    """Seconds of the median of ``runs`` timed calls of ``fn``."""
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]
