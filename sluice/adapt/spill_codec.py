"""Self-regulating compression of spilled pages (Umami §4.4), and of the exchange's rounds on
the wire (the same trade: compression time against the time spent waiting on the network).

Compressing a spilled page trades CPU time for write (and read-back) time. Which side wins
depends on the machine (one slow disk or a page cache that absorbs writes at GB/s) and on
the data. So the codec is chosen at run time: pages are compressed at the current step of one
scale -- none, lz4, zstd(1), zstd(3), zstd(9) -- and after each window of pages the measured
compression cost per raw byte is compared with the measured I/O cost per raw byte. When I/O
costs more, compression steps up; when compression costs more, it steps down. A step is
also taken back if it made pages slower to spill than storing them uncompressed did (so
compression is never slower than none, as measured).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: The scale, from cheapest to strongest (Arrow IPC codecs).
LEVELS: tuple[tuple[str, int | None], ...] = (("none", None), ("lz4", None), ("zstd", 1), ("zstd", 3),
                                              ("zstd", 9))
#: Pages per measurement window before the level may move (Umami: 2 x I/O depth).
WINDOW = 8
#: Costs within this factor of each other count as balanced (hysteresis against flapping).
BALANCE = 1.25


def level_name(level: int) -> str:
    name, lv = LEVELS[level]
    return name if lv is None else f"{name}({lv})"


@dataclass
class _Window:
    raw: int = 0
    cpu_s: float = 0.0
    io_s: float = 0.0
    pages: int = 0


@dataclass
class SpillCodec:
    """The codec policy of one query's spills: ``auto`` regulates itself, others are fixed."""

    mode: str = "auto"
    level: int = 0
    #: pages (spill) or rounds (the exchange's wire) per measurement window
    window: int = WINDOW
    pages_per_level: dict[int, int] = field(default_factory=dict)
    _win: _Window = field(default_factory=_Window)
    _rate: dict[int, float] = field(default_factory=dict)  # raw bytes/s spilled at each level (EWMA)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        fixed = {"none": 0, "lz4": 1, "zstd": 2}
        if self.mode != "auto":
            self.level = fixed[self.mode]

    def current(self) -> tuple[str, int | None]:
        return LEVELS[self.level]

    def record(self, level: int, raw: int, cpu_s: float, io_s: float) -> None:
        """One page spilled at ``level``: ``raw`` bytes, ``cpu_s`` to serialise and compress it,
        ``io_s`` to write it."""
        with self._lock:
            self.pages_per_level[level] = self.pages_per_level.get(level, 0) + 1
            if self.mode != "auto" or level != self.level:
                return
            w = self._win
            w.raw += raw
            w.cpu_s += cpu_s
            w.io_s += io_s
            w.pages += 1
            if w.pages < self.window:
                return
            rate = w.raw / max(w.cpu_s + w.io_s, 1e-9)
            prev = self._rate.get(level)
            self._rate[level] = rate if prev is None else 0.5 * prev + 0.5 * rate
            self._win = _Window()
            base = self._rate.get(0)
            if level > 0 and base is not None and self._rate[level] < base:
                self.level = level - 1  # slower than not compressing: step back
                return
            if w.io_s > BALANCE * w.cpu_s and level + 1 < len(LEVELS):
                up = self._rate.get(level + 1)
                if up is None or up >= self._rate[level]:
                    self.level = level + 1
            elif w.cpu_s > BALANCE * w.io_s and level > 0:
                self.level = level - 1

    def summary(self) -> str:
        """Pages per codec, e.g. ``lz4 x12, zstd(1) x30``."""
        return ", ".join(f"{level_name(lv)} x{n}" for lv, n in sorted(self.pages_per_level.items()))
