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


def answer_check(sql: str, con, duck) -> str:
    """``ok`` when sluice's answer to ``sql`` (on ``con``) equals DuckDB's (on ``duck``), else
    ``MISMATCH`` and the first difference: what a benchmark prints beside each time."""
    from sluice.testing.oracle import compare
    from sluice.testing.queries import order_by_columns
    theirs = duck.sql(sql).to_arrow_table()
    try:
        compare(con.sql(sql).to_arrow(), theirs, order_by_columns(sql, theirs.column_names))
        return "ok"
    except AssertionError as e:
        return f"MISMATCH {str(e).splitlines()[0][:60]}"

