"""Run-time value checks (overflow, out-of-range casts) without a host sync per chunk.

A kernel that can overflow computes a boolean tensor of offending rows and calls
:func:`fail_if`. On the CPU the check is free and raises at once. On a GPU, reading the flag
would stall the stream every chunk, so inside :func:`deferred_checks` (which the driver opens
around a query) the flag is reduced on the device and kept; the driver reads all flags once,
when the query ends or as soon as anything else fails -- an overflowed value that went on to
break a later operator is then reported as the overflow it is.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

import torch

from sluice.errors import ExecutionError


class DeferredChecks:
    """Device-side flags of one query, one per message, read at the end.

    With ``rows`` (a CASE/COALESCE/AND/OR argument evaluated over a chunk of that many rows)
    the failing rows themselves are kept (``masks``), so that the guard can keep only the rows
    where the argument decides the result -- without reading anything back. A check that is
    not one flag per row (over a dictionary, or already reduced) sets ``unmapped``."""

    def __init__(self, rows: int | None = None, everywhere: bool = False) -> None:
        self._flags: dict[tuple[str, type], torch.Tensor] = {}
        self.rows = rows
        #: Defer on the CPU too (TRY needs each check's rows wherever it runs).
        self.everywhere = everywhere
        self.masks: list[tuple[torch.Tensor, str, type]] = []
        self.unmapped = False

    def add(self, flag: torch.Tensor, message: str, error: type = ExecutionError) -> None:
        if self.rows is not None:
            if flag.dim() == 1 and flag.numel() == self.rows:
                self.masks.append((flag, message, error))
                return
            self.unmapped = True
        if flag.dim():
            flag = flag.any()
        prev = self._flags.get((message, error))
        self._flags[(message, error)] = flag if prev is None else (prev | flag)

    def failed(self) -> list[tuple[str, type]]:
        """The checks that are not per row and failed (one host sync each)."""
        return [key for key, flag in self._flags.items() if bool(flag)]

    def raise_pending(self) -> None:
        """Raise the first failed check (one host sync per distinct message)."""
        flags, self._flags = self._flags, {}
        for (message, error), flag in flags.items():
            if bool(flag):
                raise error(message)


#: The one context variable left in sluice, on purpose: the sink is scoped to the query's
#: thread (the driver opens it), and a kernel that raises is twenty call levels below anything
#: that could carry it. A thread it does not reach (an I/O thread evaluating a pushed-down
#: predicate) raises at once instead of deferring: one sync on that thread, never a lost check.
_CHECKS: contextvars.ContextVar[DeferredChecks | None] = contextvars.ContextVar("sluice_checks", default=None)

#: Defer CPU checks too, as a GPU defers them: the tests set it so that code depending on when
#: a check raises (the CASE/COALESCE/AND/OR guards) is exercised the GPU's way on a CPU.
DEFER_ON_CPU = False


def deferring(device: torch.device) -> DeferredChecks | None:
    """The sink checks on ``device`` go to now (None: they raise at once)."""
    checks = _CHECKS.get()
    if checks is None or (device.type == "cpu" and not DEFER_ON_CPU and not checks.everywhere):
        return None
    return checks


@contextlib.contextmanager
def deferred_checks(rows: int | None = None, everywhere: bool = False) -> Iterator[DeferredChecks]:
    """Defer device-side checks within this block; the caller reads them with ``raise_pending``
    (with ``rows``: keeps each check's failing rows, see DeferredChecks; ``everywhere``: CPU
    checks too, as inside a block that does)."""
    outer = _CHECKS.get()
    checks = DeferredChecks(rows, everywhere or (outer is not None and outer.everywhere))
    token = _CHECKS.set(checks)
    try:
        yield checks
    finally:
        _CHECKS.reset(token)


def rows_wanted() -> bool:
    """Whether the checks made now are kept per row even on the CPU (inside TRY): a kernel
    that would raise at once for a whole chunk may then flag the failing rows instead."""
    checks = _CHECKS.get()
    return checks is not None and checks.everywhere


def fail_if(bad: torch.Tensor, message: str, valid: torch.Tensor | None = None,
            error: type = ExecutionError) -> None:
    """Raise ``error(message)`` if any row of ``bad`` (restricted to ``valid`` rows) is set."""
    if valid is not None:
        bad = bad & valid
    checks = _CHECKS.get()
    if checks is None or (bad.device.type == "cpu" and not DEFER_ON_CPU and not checks.everywhere):
        if bool(bad.any() if bad.dim() else bad):
            raise error(message)
        return
    checks.add(bad, message, error)
