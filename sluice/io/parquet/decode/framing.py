"""Parquet's deprecated LZ4 codec as Hadoop frames it: the one parser of its block headers.

Both decompressors read it: the host one (:mod:`sluice.io.parquet.decode.column`, pyarrow's
raw LZ4 per block) and nvCOMP's (:mod:`sluice.io.parquet.decode.nvcomp`, the blocks as bare
streams). A page that is not framed so is one raw LZ4 block, as pyarrow's reader takes it.
"""

from __future__ import annotations


def hadoop_lz4_blocks(mv: memoryview, size: int | None) -> list[tuple[memoryview, int]] | None:
    """The blocks of a Hadoop-framed LZ4 page: (big-endian decompressed size, compressed size,
    raw LZ4 block) filling the page exactly, adding up to ``size`` (the page header's; None: not
    checked); None when the page is not framed so."""
    n = len(mv)
    out, pos, total = [], 0, 0
    while pos + 8 <= n:
        dsize = int.from_bytes(mv[pos:pos + 4], "big")
        csize = int.from_bytes(mv[pos + 4:pos + 8], "big")
        if csize > n - pos - 8 or (csize == 0 and dsize > 0):
            return None
        out.append((mv[pos + 8:pos + 8 + csize], dsize))
        total += dsize
        pos += 8 + csize
    if not out or pos != n or (size is not None and total != size):
        return None
    return out
