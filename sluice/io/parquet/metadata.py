"""Tables of a data directory and their Parquet metadata, read once per file and cached.

A table is ``DIR/NAME.parquet`` or a folder ``DIR/NAME/`` of ``*.parquet`` files. Each
file's footer (schema, row groups, min/max statistics) is read on first use and kept until
the file's size or modification time changes.
"""

from __future__ import annotations

import hashlib

import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sluice.catalog import RowGroup, TableInfo
from sluice.errors import DataError, PlanError, UnsupportedError
from sluice.types import LType, from_arrow, has_null_leaf
import glob
import datetime as dt
import decimal as dec
from urllib.parse import unquote
from sluice.io.parquet.int_decimals import integer_metadata


class MetadataCache:
    """Footers per file, keyed by (path, size, mtime, inode, ctime) so a rewritten file is re-read."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[int, ...], pq.FileMetaData]] = {}
        # per (decimals, plain strings): path -> ((size, mtime), integer_metadata)
        self._rewritten: dict[tuple[bool, bool], dict[str, tuple[tuple[int, ...], object]]] = {}
        self._lock = threading.Lock()
        self._computing: dict[tuple[int, str], threading.Lock] = {}  # one computation per entry at once
        # per (row group, column): path -> ((size, mtime), PageIndex) -- the device decoder's pages
        self._pages: dict[tuple[int, str], dict] = {}
        self.hits = 0
        self.misses = 0

    def footer(self, path: str) -> pq.FileMetaData:
        def read(p: str) -> pq.FileMetaData:
            try:
                return pq.read_metadata(p)
            except (pa.ArrowInvalid, OSError) as e:
                raise DataError(f"{p} is not a readable Parquet file ({str(e).splitlines()[0]})") from None
        return self._cached(self._files, path, read, count=True)

    def integer_footer(self, path: str, md: pq.FileMetaData, decimals: bool = True, plain_strings: bool = False):
        """``integer_metadata`` of the file whose footer is ``md`` (once per file version and
        choice of rewrites)."""
        with self._lock:
            store = self._rewritten.setdefault((decimals, plain_strings), {})
        return self._cached(store, path, lambda p: integer_metadata(p, md, decimals, plain_strings))

    def page_index(self, path: str, row_group: int, column: str, compute):
        """The page headers of one column chunk (``compute(path)``: a
        :class:`~sluice.io.parquet.decode.page_index.PageIndex`), once per file version."""
        with self._lock:
            store = self._pages.setdefault((row_group, column), {})
        return self._cached(store, path, compute)

    def _cached(self, store: dict, path: str, compute, count: bool = False):
        """``compute(path)`` once per version of the file (its size and modification time)."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise DataError(f"cannot open {path}: {e.strerror}") from None
        # The status-change time and inode too: a file rewritten with the same size and its
        # modification time put back is another version (ctime cannot be set).
        key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        with self._lock:
            hit = store.get(path)
            if hit is not None and hit[0] == key:
                self.hits += count
                return hit[1]
            busy = self._computing.setdefault((id(store), path), threading.Lock())
        # The scan's I/O threads all start on the same file: one computes, the others wait for it
        # (two threads each parsed TPC-H SF 10 lineitem's footer, 0.13 s, at every query start).
        with busy:
            with self._lock:
                hit = store.get(path)
                if hit is not None and hit[0] == key:
                    self.hits += count
                    return hit[1]
            value = compute(path)
            with self._lock:
                self.misses += count
                store[path] = (key, value)
                self._computing.pop((id(store), path), None)  # (a waiter holds it; later calls hit)
        return value


def _other_case(root: Path, name: str) -> Path | None:
    """The one file ``<name>.parquet`` or folder ``<name>`` that differs from ``name`` in case only
    (SQL names are case-insensitive: ``FROM Sales`` reads ``Sales.parquet``); several are ambiguous."""
    low = name.lower()
    try:
        hits = [q for q in root.iterdir() if q.name.lower() in (f"{low}.parquet", low)
                and (q.is_dir() or q.name.lower().endswith(".parquet"))]
    except OSError:
        return None
    if len(hits) > 1:
        raise PlanError(f"table {name!r} is ambiguous: " + ", ".join(sorted(q.name for q in hits)) + " differ in case only")
    return hits[0] if hits else None


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
        if not p.exists():
            p = _other_case(root, name) or p
    if p.is_file():
        return [str(p)]
    if p.is_dir():
        files = sorted(str(f) for f in p.rglob("*.parquet"))
        if not files:
            raise DataError(f"table {name!r}: folder {p} holds no .parquet files")
        return files
    raise PlanError(f"unknown table {name!r} (no {root / (name + '.parquet')} or {root / name}/)")


def files_matching(patterns: list[str], suffix: str | None = ".parquet") -> list[str]:
    """The files a query names directly (``FROM 'dir/*.parquet'``, ``read_parquet([...])``):
    each pattern a file, a folder (its ``suffix`` files, recursively) or a glob (``**`` spans
    folders), relative to the working directory; each must match something."""
    out: list[str] = []
    for pat in patterns:
        p = Path(pat).expanduser()
        if any(ch in pat for ch in "*?["):
            hits = sorted(h for h in glob.glob(str(p), recursive=True) if Path(h).is_file())
        elif p.is_dir():
            if suffix is None:
                raise DataError(f"{pat} is a folder: name its files, e.g. '{pat.rstrip('/')}/*.csv'")
            hits = sorted(str(f) for f in p.rglob("*" + suffix))
        elif p.is_file():
            hits = [str(p)]
        else:
            raise DataError(f"no such file: {pat}")
        if not hits:
            raise DataError(f"no files match {pat!r}")
        out += [h for h in hits if h not in out]
    return out


def _stat_value(v, lt: LType):
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


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def hive_values(path: str, root: str | None = None) -> list[tuple[str, str]]:
    """The ``key=value`` folders of a file's path (below ``root`` when given), outermost
    first (values URL-decoded)."""
    out = []
    parent = Path(path).parent
    if root is not None:
        parent = parent.relative_to(root)
    for part in parent.parts:
        if "=" in part and not part.startswith("="):
            k, v = part.split("=", 1)
            out.append((k, unquote(v)))
    return out


def _hive_type(values: list[str | None]) -> tuple[pa.DataType, list]:
    """The type DuckDB's autocast gives partition values (BIGINT, DOUBLE, DATE, else VARCHAR)
    and the values converted to it."""
    present = [v for v in values if v is not None]
    for typ, conv in ((pa.int64(), int), (pa.float64(), float), (pa.date32(), dt.date.fromisoformat)):
        try:
            if typ == pa.date32() and not all(len(v) == 10 for v in present):
                continue
            return typ, [None if v is None else conv(v) for v in values]
        except ValueError:
            continue
    return pa.string(), list(values)


def hive_partitions(files: list[str], hive: bool | None, columns: list[str],
                    root: str | None = None) -> dict[str, tuple[pa.DataType, dict]]:
    """Partition columns of ``files``: name -> (type, {path: value}). ``hive`` None detects
    them (every file under the same ``key=value`` folders), True requires them."""
    if hive is False:
        return {}
    found = [hive_values(f, root) for f in files]
    keys = [k for k, _ in found[0]]
    consistent = bool(keys) and all([k for k, _ in kv] == keys for kv in found)
    if not consistent:
        if hive:
            raise DataError("hive_partitioning: the files are not all under the same key=value folders")
        return {}
    out = {}
    for i, k in sorted(enumerate(keys), key=lambda ik: ik[1]):  # by name, as DuckDB orders them
        if k in columns:
            continue  # the files' own column wins
        raw = [None if kv[i][1] == HIVE_NULL else kv[i][1] for kv in found]
        typ, vals = _hive_type(raw)
        out[k] = (typ, dict(zip(files, vals)))
    return out


def load_table(name: str, files: list[str], cache: MetadataCache, hive: bool | None = None,
               hive_root: str | None = None) -> TableInfo:
    """A table's schema and row groups from its files' footers; with Hive partition columns
    from ``key=value`` folders (below ``hive_root`` when given) unless ``hive`` is False."""
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
        flat = _flat_leaves(schema)
        if s is not schema:  # every file is read (and its statistics taken) as the first file's types
            mine = _types(s)[0]
            for col, t in types.items():
                if col in mine and (mine[col].kind, mine[col].scale) != (t.kind, t.scale):
                    raise UnsupportedError(
                        f"table {name!r}: column {col!r} is {t} in {files[0]} but {mine[col]} in {f} "
                        "(the files of one table must agree on column types)")
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            stats = {}
            nbytes = 0
            facts: list = [rg.num_rows]  # what the row group's digest covers
            for j in range(rg.num_columns):
                cc = rg.column(j)
                nbytes += cc.total_compressed_size
                st = cc.statistics
                facts.append((cc.total_compressed_size, cc.total_uncompressed_size, None if st is None else
                              (st.null_count, st.min_raw if st.has_min_max else None,
                               st.max_raw if st.has_min_max else None)))
                col = flat.get(j)  # never a nested column's leaf (s.a may also be a column's name)
                if st is not None and st.has_min_max and col in types:
                    try:
                        stats[col] = (_stat_value(st.min, types[col]), _stat_value(st.max, types[col]))
                    except Exception:  # noqa: BLE001 - unreadable statistics are just not used
                        pass
            groups.append(RowGroup(f, i, rg.num_rows, stats, nbytes,
                                   hashlib.sha1(repr(facts).encode()).hexdigest()[:16]))
    assert schema is not None
    parts = hive_partitions(files, hive, schema.names, hive_root)
    for k, (typ, _) in parts.items():
        schema = schema.append(pa.field(k, typ))
    types, unsupported = _types(schema)
    if parts:  # a partition value is each row group's min and max: filters on it prune files
        groups = [RowGroup(g.path, g.index, g.num_rows,
                           {**g.stats, **{k: (_stat_value(v[g.path], types[k]),) * 2 for k, (_, v) in parts.items()}},
                           g.nbytes, g.digest + "".join(f"/{v[g.path]}" for _, v in parts.values())) for g in groups]
    return TableInfo(name, tuple(files), schema, types, tuple(groups), unsupported,
                     partitions={k: v for k, (_, v) in parts.items()})


def _leaves(t: pa.DataType) -> int:
    """The Parquet leaf columns of an Arrow type."""
    if pa.types.is_struct(t):
        return sum(_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaves(t.key_type) + _leaves(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaves(t.value_type)
    return 1


def _flat_leaves(schema: pa.Schema) -> dict[int, str]:
    """Leaf column index -> name, for the top-level columns that are one leaf (not nested):
    the only columns whose statistics are taken (pruning never reads a nested path's)."""
    out, j = {}, 0
    for fld in schema:
        n = _leaves(fld.type)
        if not (pa.types.is_struct(fld.type) or pa.types.is_map(fld.type) or pa.types.is_list(fld.type)
                or pa.types.is_large_list(fld.type) or pa.types.is_fixed_size_list(fld.type)):
            out[j] = fld.name
        j += n
    return out


def _types(schema: pa.Schema) -> tuple[dict[str, LType], dict[str, str]]:
    """Logical types of the columns sluice reads, and the Arrow types of those it cannot."""
    types, unsupported = {}, {}
    for fld in schema:
        try:
            t = from_arrow(fld.type)
        except UnsupportedError:
            unsupported[fld.name] = str(fld.type)
            continue
        if has_null_leaf(t):  # (the NULL type maps for spilled pages of [], not for files)
            unsupported[fld.name] = str(fld.type)
        else:
            types[fld.name] = t
    return types, unsupported
