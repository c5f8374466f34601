"""Tables formed by every rank's own files (``rank_data=local``): the usual layout of a cluster
without a shared file system, where each node holds its fragment of the data on a local disk
(cudf-polars' SPMD mode, Spark's executors reading local shards).

Each rank reads its own files' footers; one object collective then gives every rank the same
union -- every rank's row groups in rank order, each tagged with the rank whose disk holds it --
so every rank plans the same query over the same statistics and row counts (estimates,
broadcast choices, range sorts and the plan fingerprint agree), and each scan reads only its
own rank's row groups (:func:`sluice.physical.distribute.share`). A rank that cannot load the
table (no files, a corrupt footer) ends the query on every rank with its one line; ranks whose
columns differ, or that would read the same data twice (one file seen by two ranks of one
machine, or a file whose footers equal another rank's file -- a copy of the data on every node,
which ``rank_data=shared`` is for), are refused in one line rather than answered over a mixture.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import replace

from sluice import errors
from sluice.catalog import TableInfo
from sluice.errors import DataError, SluiceError, UnsupportedError


def _file_ids(files: tuple[str, ...]) -> list[tuple]:
    """(host, device, inode) of each file: one file reached by two ranks of one machine."""
    host = socket.gethostname()
    out = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        out.append((host, st.st_dev, st.st_ino, f))
    return out


def _file_contents(info: TableInfo) -> dict[tuple, str]:
    """Each non-empty file's row-group digests (what its footers say of its content) -> path."""
    by_file: dict[str, list] = {}
    for g in info.row_groups:
        by_file.setdefault(g.path, []).append((g.num_rows, g.digest))
    return {tuple(v): p for p, v in by_file.items() if any(n for n, _ in v)}


def _raise_from(rank: int, world: int, err: tuple[str, str]) -> None:
    """The same error on every rank (the launchers print one line for identical errors)."""
    kind, msg = err
    cls = getattr(errors, kind, DataError)
    if not (isinstance(cls, type) and issubclass(cls, SluiceError)):
        cls = DataError
    raise cls(msg if world == 1 else f"{msg} (on rank {rank})")


def union_of_ranks(group, name: str, load: Callable[[], TableInfo]) -> TableInfo:
    """Table ``name`` as every rank's own files together (``load`` reads this rank's), the same
    on every rank; see the module docstring. One collective: every rank must call it for the
    same tables in the same order (planning the same query does)."""
    try:
        info = load()
        if info.format != "parquet":
            raise UnsupportedError(f"table {name!r} is {info.format.upper()}: rank_data=local reads Parquet tables")
        mine = (info, _file_ids(info.files), _file_contents(info))
        err = None
    except SluiceError as e:
        mine, err = None, (type(e).__name__, " ".join(str(a) for a in e.args) or type(e).__name__)
    everyone = group.all_objects((mine, err))
    for r, (_, e) in enumerate(everyone):
        if e is not None:
            _raise_from(r, group.world, e)
    first = everyone[0][0][0]
    seen_files: dict[tuple, int] = {}
    seen_content: dict[tuple, tuple[int, str]] = {}
    for r, ((t, ids, contents), _) in enumerate(everyone):
        if t.types != first.types or t.unsupported != first.unsupported:
            diff = next((c for c in first.types if t.types.get(c) != first.types[c]), None)
            what = (f"column {diff!r} is {first.types[diff]} on rank 0 but {t.types.get(diff, 'missing')} on rank {r}"
                    if diff else f"rank {r} has columns {list(t.types)}, rank 0 {list(first.types)}")
            raise DataError(f"rank_data=local: table {name!r} differs between ranks: {what}")
        for host, dev, ino, path in ids:
            other = seen_files.setdefault((host, dev, ino), r)
            if other != r:
                raise DataError(f"rank_data=local: ranks {other} and {r} both read {path} on {host} -- each rank's "
                                "files must be its own (a {local_rank} in the data path gives each rank its folder)")
        for key, path in contents.items():
            other, where = seen_content.setdefault(key, (r, path))
            if other != r:
                raise DataError(f"rank_data=local: rank {r}'s {path} has the same footers as rank {other}'s {where} "
                                "-- the same data on two ranks would be counted twice (rank_data=shared is for a "
                                "copy of the tables every rank can read)")
    groups = tuple(replace(g, rank=r) for r, ((t, _, _), _) in enumerate(everyone) for g in t.row_groups)
    partitions: dict[str, dict] = {}
    for r, ((t, _, _), _) in enumerate(everyone):  # this rank's own values win for its own paths
        if r != group.rank:
            for k, v in t.partitions.items():
                partitions.setdefault(k, {}).update(v)
    for k, v in info.partitions.items():
        partitions.setdefault(k, {}).update(v)
    return replace(info, row_groups=groups, partitions=partitions)
