"""Process-level allocator settings that keep host memory bounded.

Decoded columns are allocated on the I/O threads and freed on the consumer's thread. glibc
gives each thread its own arena and returns freed blocks to the owner's arena, where they
stay: measured on a 64 MiB-bounded lineitem scan (SF 1), peak RSS growth varied between 190
and 420 MiB from run to run with default arenas, and stayed at 190-240 MiB with at most two
arenas. sluice therefore caps the arena count once, when the first connection opens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_ARENA_MAX = -8
ARENAS = 2
_done = False


def configure_allocator() -> None:
    global _done
    if _done or not sys.platform.startswith("linux"):
        return
    _done = True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if hasattr(libc, "mallopt"):
            libc.mallopt(_M_ARENA_MAX, ARENAS)
    except OSError:  # not glibc (musl, ...): nothing to tune
        pass
