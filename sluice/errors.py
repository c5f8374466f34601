"""Error categories: each says whose fault a failure is (user SQL, plan, resources, bug).

The CLI prints ``str(err)`` as one line for every ``SluiceError``; anything else is a bug
and is reported as ``InternalError``.
"""

from __future__ import annotations


class SluiceError(Exception):
    """Base class of every error sluice raises on purpose."""

    category = "error"

    def __str__(self) -> str:
        msg = super().__str__().strip().splitlines()
        return f"{self.category}: {' '.join(s.strip() for s in msg)}"


class SqlError(SluiceError):
    """The SQL text does not parse."""

    category = "syntax error"


class PlanError(SluiceError):
    """The SQL parses but names something unknown or mixes types wrongly."""

    category = "plan error"


class UnsupportedError(SluiceError):
    """Valid SQL that sluice does not implement (yet)."""

    category = "unsupported"


class ConfigError(SluiceError):
    """An unknown setting or a bad value."""

    category = "config error"


class DataError(SluiceError):
    """A missing, unreadable or corrupt data file."""

    category = "data error"


class ExecutionError(SluiceError):
    """A failure while running a valid plan (overflow, bad cast of a value, ...)."""

    category = "execution error"


class ResourcesExhausted(SluiceError):
    """A memory budget cannot be met even after spilling."""

    category = "resources exhausted"


class InternalError(SluiceError):
    """A bug in sluice."""

    category = "internal error"


def internal_error(where: str, e: BaseException) -> SluiceError:
    """An unexpected exception as a one-line InternalError naming the planning step or operator
    (Python's recursion limit, reached by a query nested hundreds deep, is a refusal)."""
    if isinstance(e, RecursionError):
        return UnsupportedError(f"query nested too deeply (in {where})")
    msg = str(e).splitlines()[0] if str(e) else ""
    return InternalError(f"in {where}: {type(e).__name__}: {msg}")


def is_resource_error(e: BaseException) -> bool:
    """Out-of-memory errors are not bugs; they keep their type until the API reports them."""
    import torch  # deferred: keeps `sluice --help` free of torch
    return isinstance(e, MemoryError) or isinstance(e, torch.cuda.OutOfMemoryError)


class RankFailed(SluiceError):
    """Another rank of a distributed query failed (an error, a signal, lost contact); this
    rank stopped too. The launcher reports the first cause, naming the rank."""

    category = "rank failed"
