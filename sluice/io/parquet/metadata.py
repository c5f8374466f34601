"""Tables of a data directory and their Parquet metadata, read once per file and cached.

A table is ``DIR/NAME.parquet`` or a folder ``DIR/NAME/`` of ``*.parquet`` files. Each
file's footer (schema, row groups, min/max statistics) is read on first use and kept until
the file's size or modification time changes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.errors import DataError, PlanError, UnsupportedError
from sluice.types import LType, from_arrow


@dataclass(frozen=True, slots=True)
class RowGroup:
    """One row group of one file, with per-column (min, max) statistics where present."""

    path: str
    index: int
    num_rows: int
    stats: dict[str, tuple[object, object]]
    nbytes: int


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    files: tuple[str, ...]
    arrow_schema: pa.Schema
    types: dict[str, LType]
    row_groups: tuple[RowGroup, ...]
    #: Columns of a type sluice cannot process (lists, structs, maps, binary): name -> type.
    #: The others stay queryable; naming one of these is refused.
    unsupported: dict[str, str] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return sum(rg.num_rows for rg in self.row_groups)


class MetadataCache:
    """Footers per file, keyed by (path, size, mtime) so a rewritten file is re-read."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, int], pq.FileMetaData]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def footer(self, path: str) -> pq.FileMetaData:
        try:
            st = os.stat(path)
        except OSError as e:
            raise DataError(f"cannot open {path}: {e.strerror}") from None
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._files.get(path)
            if hit is not None and hit[0] == key:
                self.hits += 1
                return hit[1]
        try:
            md = pq.read_metadata(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{path} is not a readable Parquet file ({str(e).splitlines()[0]})") from None
        with self._lock:
            self.misses += 1
            self._files[path] = (key, md)
        return md


def table_files(root: Path, name: str, registered: dict[str, str]) -> list[str]:
    """The Parquet files holding table ``name``."""
    if not name or any(ch in name for ch in "/\\") or name in (".", ".."):
        raise PlanError(f"{name!r} is not a table name")
    if name in registered:
        p = Path(registered[name])
    else:
        p = root / f"{name}.parquet"
        if not p.exists():
            p = root / name
    if p.is_file():
        return [str(p)]
    if p.is_dir():
        files = sorted(str(f) for f in p.rglob("*.parquet"))
        if not files:
            raise DataError(f"table {name!r}: folder {p} holds no .parquet files")
        return files
    raise PlanError(f"unknown table {name!r} (no {root / (name + '.parquet')} or {root / name}/)")


def files_matching(patterns: list[str]) -> list[str]:
    """The Parquet files a query names directly (``FROM 'dir/*.parquet'``, ``read_parquet([...])``):
    each pattern a file, a folder (its .parquet files, recursively) or a glob (``**`` spans
    folders), relative to the working directory; each must match something."""
    import glob
    out: list[str] = []
    for pat in patterns:
        p = Path(pat).expanduser()
        if any(ch in pat for ch in "*?["):
            hits = sorted(h for h in glob.glob(str(p), recursive=True) if Path(h).is_file())
        elif p.is_dir():
            hits = sorted(str(f) for f in p.rglob("*.parquet"))
        elif p.is_file():
            hits = [str(p)]
        else:
            raise DataError(f"no such file: {pat}")
        if not hits:
            raise DataError(f"no files match {pat!r}")
        out += [h for h in hits if h not in out]
    return out


def _stat_value(v, lt: LType):
    import datetime as dt
    import decimal as dec
    if v is None:
        return None
    if lt.kind == "date" and isinstance(v, dt.date):
        return (v - dt.date(1970, 1, 1)).days
    if lt.kind == "decimal" and isinstance(v, dec.Decimal):
        return int(v.scaleb(lt.scale))
    if lt.kind == "string":
        return v if isinstance(v, str) else None
    if isinstance(v, (int, float)):
        return v
    return None


def load_table(name: str, files: list[str], cache: MetadataCache) -> TableInfo:
    schema = None
    groups = []
    for f in files:
        md = cache.footer(f)
        s = md.schema.to_arrow_schema()
        if schema is None:
            schema = s
        elif s.names != schema.names:
            raise DataError(f"table {name!r}: {f} has columns {s.names}, expected {schema.names}")
        types = _types(schema)[0]
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            stats = {}
            nbytes = 0
            for j in range(rg.num_columns):
                cc = rg.column(j)
                nbytes += cc.total_compressed_size
                st = cc.statistics
                col = cc.path_in_schema
                if st is not None and st.has_min_max and col in types:
                    try:
                        stats[col] = (_stat_value(st.min, types[col]), _stat_value(st.max, types[col]))
                    except Exception:  # noqa: BLE001 - unreadable statistics are just not used
                        pass
            groups.append(RowGroup(f, i, rg.num_rows, stats, nbytes))
    assert schema is not None
    types, unsupported = _types(schema)
    return TableInfo(name, tuple(files), schema, types, tuple(groups), unsupported)


def _types(schema: pa.Schema) -> tuple[dict[str, LType], dict[str, str]]:
    """Logical types of the columns sluice reads, and the Arrow types of those it cannot."""
    types, unsupported = {}, {}
    for fld in schema:
        try:
            types[fld.name] = from_arrow(fld.type)
        except UnsupportedError:
            unsupported[fld.name] = str(fld.type)
    return types, unsupported
