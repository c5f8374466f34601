"""The host's reads of a page buffer that lives on the device (pages nvCOMP decompressed there).

The torch decoder reads a few fields of each decompressed page on the host: a v1 page's level
length, a dictionary page's bit width, a boolean RLE run's length, a delta header. With the
pages decompressed on the host they are there already; decompressed on the GPU, each read would
be a copy back and a host synchronisation per field, per page. :class:`DeviceBytes` fetches a
window of :data:`WINDOW` bytes at every offset the decoder will read from, for all pages of a
batch in one gather and one copy (one synchronisation per round: the level lengths, then the
value starts they give), and serves the reads from them; a read outside every window (a delta
header further into a page) costs a copy of its own, counted in ``misses``. Reads behave as on a
``memoryview`` of the buffer's first ``size`` bytes: an index past it is an ``IndexError`` (the
decoder reports a corrupt page), a slice past it is cut short.
"""

from __future__ import annotations

import bisect

import torch

#: Bytes fetched at each offset: a delta header (four varints) or a level length fits.
WINDOW = 64


class DeviceBytes:
    def __init__(self, buf: torch.Tensor, size: int) -> None:
        self.buf = buf
        self.size = size
        self._starts: list[int] = []
        self._data: dict[int, bytes] = {}
        self.rounds = 0
        self.misses = 0

    def __len__(self) -> int:
        return self.size

    def prefetch(self, offsets) -> None:
        """Fetch the windows at ``offsets`` not already held, in one gather and one copy."""
        self._fetch(sorted({o for o in offsets if 0 <= o < self.size and self._window(o, o + 1) is None}))

    def _fetch(self, new: list[int]) -> None:
        if not new:
            return
        idx = torch.tensor(new, dtype=torch.long)[:, None] + torch.arange(WINDOW)
        idx.clamp_(max=self.buf.numel() - 1)
        rows = self.buf[idx.to(self.buf.device)].cpu().numpy()
        self.rounds += 1
        for o, r in zip(new, rows):
            self._data[o] = r[:max(0, min(WINDOW, self.size - o))].tobytes()
        self._starts = sorted(self._data)

    def _window(self, a: int, b: int) -> bytes | None:
        i = bisect.bisect_right(self._starts, a) - 1
        if i >= 0:
            s = self._starts[i]
            w = self._data[s]
            if b <= s + len(w):
                return w[a - s:b - s]
        return None

    def _read(self, a: int, b: int) -> bytes:
        got = self._window(a, b)
        if got is None:
            self.misses += 1
            if b - a <= WINDOW:
                self._fetch([a])
                got = self._window(a, b)
            else:
                got = self.buf[a:b].cpu().numpy().tobytes()
        return got

    def __getitem__(self, k):
        if isinstance(k, slice):
            a, b, step = k.indices(self.size)
            if step != 1:
                raise ValueError("DeviceBytes reads contiguous bytes only")
            return self._read(a, b) if b > a else b""
        if k < 0:
            k += self.size
        if not 0 <= k < self.size:
            raise IndexError("page buffer index out of range")
        return self._read(k, k + 1)[0]
