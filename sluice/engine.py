"""Connection and Relation: the Python API.

``connect(DIR)`` opens a directory of Parquet tables; ``con.sql(q)`` plans the query (cached by
SQL text) and returns a lazy :class:`Relation` that runs when a result is asked for.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import pyarrow as pa
import torch

from sluice.config import Config, auto_io_threads
from sluice.devices import resolve_device
from sluice.errors import (ConfigError, DataError, ExecutionError, InternalError, PlanError, SluiceError,
                           UnsupportedError, internal_error)
from sluice.exec.context import ExecContext
from sluice.exec.driver import explain as explain_ops, result_schema, run_batches, run_to_arrow
from sluice.physical.lower import lower_plan
from sluice.io.column_cache import ColumnCache
from sluice.io.memory import MemoryPool, configure_allocator, default_rank_host_limit
from sluice.io.spill import clean_stale
from sluice.kernels.parallel import IO_THREAD_PREFIX
from sluice.catalog import TableInfo
from sluice.io.parquet.metadata import MetadataCache, files_matching, load_table, table_files
from sluice.plan.logical import PlanNode
from sluice.plan.rules import optimize
from sluice.sql.parse import parse_sql
from sluice.sql.translate import Translator
import gc
from sluice.render import nested_text
import pyarrow.csv as pacsv
from sluice.ranks.group import current_group, device_for_rank
from sluice.ranks.local_data import union_of_ranks
from sluice.sql.commands import rewrite_command
from sluice.exec.operators import ScanOp
from sluice.analyze import analyze_report, memory_plan
from sluice.testing.oracle import compare, duckdb_connect
from sluice.testing.queries import order_by_columns
import pyarrow.parquet as pq
from sluice.io.csv import load_csv_table
import json
from sluice.launch import RankPool
from sluice.errors import ResourcesExhausted


#: Python's recursion limit while a query is parsed, translated, optimized and lowered: at the
#: default 1000, sqlglot's parser reached it at about 30 nested subqueries (DuckDB's own tests
#: nest 100). Python 3.11+ calls between Python functions do not grow the C stack.
PLANNING_RECURSION_LIMIT = 8000


@contextmanager
def room_to_nest():
    """Planning with a recursion limit for a few hundred nesting levels; deeper is one line."""
    old = sys.getrecursionlimit()
    if old < PLANNING_RECURSION_LIMIT:
        sys.setrecursionlimit(PLANNING_RECURSION_LIMIT)
    try:
        yield
    except RecursionError:
        raise UnsupportedError("query nested too deeply to plan") from None
    finally:
        if old < PLANNING_RECURSION_LIMIT:
            sys.setrecursionlimit(old)


#: Reruns of a query that ran the GPU out of memory, each under a quarter of the last budget.
OOM_RERUNS = 2


def free_device_cache() -> None:
    """Give the memory of a failed run back: collect its tensors, then empty torch's cache."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _local_ranks() -> int:
    """Ranks of this job on this machine (torchrun's LOCAL_WORLD_SIZE)."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def _compute_threads(n: int) -> None:
    """Bind torch's and pyarrow's CPU pools to ``n`` threads. Both are process-wide and stay so
    after the connection (a later ``threads=0`` connection does not undo it). pyarrow decodes
    a row group's columns on its own pool, which is every core by default: on a 16-core machine
    with ``threads=2`` its 16 decode threads held 300 MiB beyond a 64 MiB scan buffer where 2 held
    130 (tests/scan/test_pruning_cache.py)."""
    torch.set_num_threads(n)
    pa.set_cpu_count(n)


class Connection:
    """A data directory plus settings. Thread-compatible, not thread-safe."""

    def __init__(self, data: str | os.PathLike | None = None, **settings: Any) -> None:
        self.config = Config.from_settings(settings)
        configure_allocator(self.config.keep_freed_memory)
        self._settings = dict(settings)
        # Inside a torchrun job (or a rank --ranks started) this process is one rank of it.
        self.group = current_group(self.config.dist_timeout_s)
        self.root = Path(self._rank_path(str(data))) if data is not None else Path.cwd()
        if data is not None and not self.root.is_dir():
            raise DataError(f"data directory {self.root} does not exist")
        self.device = resolve_device(self.config.device)
        if self.group is not None:
            self.device = device_for_rank(self.device, self.config.device)
        if self.device.type == "cuda":
            # Calls that take no device (current_stream, libraries' probes) mean this one.
            torch.cuda.set_device(self.device)
        clean_stale(self.config.spill_dirs())  # spill folders of killed processes
        if self.config.threads:
            _compute_threads(self.config.threads)
        elif self.group is not None:  # the ranks on this machine share its cores
            _compute_threads(max(1, (os.cpu_count() or 1) // _local_ranks()))
        if self.group is not None and not self.config.host_memory_limit:  # ... and its memory
            self.config = replace(self.config, host_memory_limit=default_rank_host_limit(_local_ranks()))
        if not self.config.io_threads:
            cores = (os.cpu_count() or 1) // (_local_ranks() if self.group is not None else 1)
            self.config = replace(self.config, io_threads=auto_io_threads(self.device.type, cores))
        self.cache = MetadataCache()
        # Decoded columns kept across this connection's queries (column_cache_bytes).
        self.column_cache = ColumnCache()
        self._registered: dict[str, str] = {}
        self._tables: dict[str, tuple[TableInfo, list]] = {}
        self._pool = ThreadPoolExecutor(self.config.io_threads, thread_name_prefix=IO_THREAD_PREFIX)
        self._lock = threading.Lock()
        self._ranks = None  # the local ranks of ranks=N, kept for the connection's queries

    # ------------------------------------------------------------------ catalog

    def _rank_path(self, path: str) -> str:
        """``path`` with ``{rank}`` and ``{local_rank}`` filled in for this process (each rank's
        own folder under ``rank_data=local``)."""
        if "{rank}" not in path and "{local_rank}" not in path:
            return path
        if self.config.rank_data != "local":
            raise ConfigError(f"{path}: a {{rank}} or {{local_rank}} in a data path needs rank_data=local "
                              "(under rank_data=shared every rank reads the same files)")
        rank = self.group.rank if self.group is not None else 0
        local = int(os.environ.get("LOCAL_RANK", rank)) if self.group is not None else 0
        return path.replace("{rank}", str(rank)).replace("{local_rank}", str(local))

    def _rank_local(self, name: str, load) -> TableInfo:
        """The table ``load`` gives, or under ``rank_data=local`` in a job the union of every
        rank's (:mod:`sluice.ranks.local_data`; one collective, same order on every rank)."""
        if self.group is None or self.config.rank_data != "local":
            return load()
        return union_of_ranks(self.group, name, load)

    @property
    def rank(self) -> int:
        """This process's rank (0 outside a distributed job); results arrive on rank 0."""
        return self.group.rank if self.group is not None else 0

    @property
    def launches_ranks(self) -> bool:
        """Whether queries start ``ranks`` local ranks (not already one rank of a job)."""
        return self.config.ranks > 1 and self.group is None

    def register(self, name: str, path: str | os.PathLike) -> None:
        """Make ``name`` refer to a Parquet file or a folder of Parquet files."""
        p = Path(path)
        if not p.exists():
            raise DataError(f"cannot register {name!r}: {p} does not exist")
        self._registered[name.lower()] = str(p)
        self._tables.pop(name.lower(), None)

    def table(self, name: str) -> TableInfo:
        name = name.lower()
        return self._rank_local(name, lambda: self._own_table(name))

    def _own_table(self, name: str) -> TableInfo:
        files = table_files(self.root, name, self._registered)
        footers = [self.cache.footer(f) for f in files]  # a stat each; re-read if a file changed
        hit = self._tables.get(name)
        if hit is not None and hit[0].files == tuple(files) and all(a is b for a, b in zip(hit[1], footers)):
            return hit[0]
        # A table folder's key=value subfolders are Hive partition columns.
        folder = Path(self._registered[name]) if name in self._registered else self.root / name
        root = str(folder) if folder.is_dir() else None
        info = load_table(name, files, self.cache, hive=None if root else False, hive_root=root)
        self._tables[name] = (info, footers)
        return info

    def files(self, ref) -> TableInfo:
        """The table formed by files a query names directly (globs, folders, files): Parquet,
        with Hive partition columns when the paths have ``key=value`` folders, or CSV."""
        return self._rank_local(", ".join(ref.patterns), lambda: self._own_files(ref))

    def _own_files(self, ref) -> TableInfo:
        patterns = list(ref.patterns)
        options = dict(ref.options)
        name = ", ".join(patterns)
        if ref.format == "csv":
            return load_csv_table(name, files_matching(patterns, suffix=None), options)
        files = files_matching(patterns)
        footers = [self.cache.footer(f) for f in files]
        key = ("files", tuple(files), ref.options)
        hit = self._tables.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[1], footers)):
            return hit[0]
        info = load_table(name, files, self.cache, hive=options.get("hive_partitioning"))
        self._tables[key] = (info, footers)
        return info

    def tables(self) -> list[str]:
        names = {p.stem for p in self.root.glob("*.parquet")} | \
            {p.name for p in self.root.iterdir() if p.is_dir() and any(p.rglob("*.parquet"))}
        return sorted(names | set(self._registered))

    # ------------------------------------------------------------------ queries

    def sql(self, query: str) -> "Relation":
        with room_to_nest():
            ast = parse_sql(query)
            command = rewrite_command(ast, self)  # DESCRIBE / SHOW TABLES / SUMMARIZE
            if command is not None:
                return self.sql(command)
            try:
                rel = Translator(self.table, self.files).translate(ast)
            except SluiceError:
                raise
            except RecursionError:
                raise
            except Exception as e:  # noqa: BLE001 - a bug in translation: say so in one line
                raise internal_error("SQL translation", e) from e
            plan = optimize(rel.plan, self.config.disabled_rules)
        out = Relation(self, plan, [n for _, n in rel.outputs], [u for u, _ in rel.outputs])
        out.query = query
        return out

    def _rank_pool(self):
        """The local ranks of this connection (``ranks`` > 1), started by its first query and
        kept until it closes (:class:`sluice.launch.RankPool`)."""
        if self._ranks is None:

            settings = json.loads(json.dumps({k: v for k, v in self._settings.items() if k != "ranks"}, default=str))
            self._ranks = RankPool(self.config.ranks, {"data": str(self.root.resolve()), "settings": settings | {"ranks": 1}},
                                   self.config.spill_dirs(), self.config.dist_timeout_s)
        return self._ranks

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.column_cache.clear()
        if self._ranks is not None:
            self._ranks.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class StringCodes:
    """A string column for torch: int32 ``codes`` (-1 for NULL) into ``dictionary``."""

    codes: torch.Tensor
    dictionary: list


def _settle_reads(ctx) -> None:
    """Cancel a failed run's queued read tasks and wait for the running ones, so that what they
    hold is free before the query runs again (a running future cannot be cancelled)."""
    running = []
    for reader in ctx.readers():
        for fut, *_ in list(getattr(reader, "pending", ())):
            if not fut.cancel():
                running.append(fut)
    wait(running)


class Relation:
    """A planned query; runs on demand."""

    def __init__(self, con: Connection, plan: PlanNode, names: list[str], out_names: list[str]) -> None:
        self._con = con
        self.plan = plan
        self._names = names
        self.columns = out_names
        self.last_run: tuple | None = None  # (operator tree, context) of the latest run
        # Time each scan task's storage read apart from its decode (the ``measure_reads``
        # setting) in this relation's runs: for reports of the stages (analyze, plot, trace).
        self.measure_reads = False

    def _context(self, progress=None, op=None, device_limit: int | None = None) -> ExecContext:
        """A run's context: for the operators ``op`` (its scans share the read-ahead memory);
        ``device_limit`` overrides the device budget (a rerun after the GPU ran out)."""
        c = self._con
        scans = sum(1 for o in op.walk() if isinstance(o, ScanOp)) if op is not None else 1
        dev_pool = None if device_limit is None else MemoryPool(device_limit, "device_memory_limit", "device")
        config = c.config
        if (self.measure_reads or getattr(progress, "shows_stages", False)) and not config.measure_reads:
            config = replace(config, measure_reads=True)
        return ExecContext(config, c.device, c._pool, c.cache, progress=progress, scan_count=scans, dist=c.group,
                           device_memory=dev_pool, column_cache=c.column_cache)

    def bytes_to_scan(self, whole_job: bool = False) -> int:
        """Compressed bytes the scans of this plan will read (after row-group pruning): the
        read tasks of their specs -- this rank's share, or with ``whole_job`` every rank's (the
        plan lowered as one process reads it: the ranks' shares add up to it)."""
        c = self._con
        local = c.group is not None and c.config.rank_data == "local"
        if whole_job and not local:
            op = lower_plan(self.plan, c.config, 0, 1, device=c.device, cache=c.cache)
        else:
            op = self._lower()
        total = 0
        for o in op.walk():  # a shared subplan's scans read once
            if isinstance(o, ScanOp) and o.columns:
                mine = o.spec.reads.compressed_bytes(o.table, list(o.spec.columns), c.cache)
                if whole_job and o.table.rank_local:  # the others' files: in proportion to their footers
                    own = sum(g.nbytes for g in o.spec.row_groups)
                    every = sum(g.nbytes for g in o.table.row_groups)
                    mine = int(mine * every / own) if own else every
                total += mine
        return total

    def _lower(self):
        g = self._con.group
        c = self._con
        return lower_plan(self.plan, c.config, g.rank if g else 0, g.world if g else 1, in_job=g is not None,
                          device=c.device, cache=c.cache)

    def _execute(self, consume, progress=None):
        """Run the plan, handing its batches to ``consume``; errors become one-line errors.

        When the GPU runs out of memory (the budget is an estimate: kernels' temporaries and
        other processes are not in it), torch's cache is emptied and the query runs again, from
        the start, under a quarter of the device budget it had -- so operator state spills to
        pinned host memory and disk instead -- up to ``OOM_RERUNS`` times; then it is one line.
        Only a single-process run reruns (``consume`` starts its output afresh: a result
        collected, or a file reopened): a rank cannot rerun alone."""
        device_limit = None
        reruns = []
        while True:
            run: dict = {}  # this attempt's context (per call: a Relation may run on two threads)
            try:
                return self._execute_once(consume, progress, device_limit, reruns, run)
            except torch.cuda.OutOfMemoryError as e:
                # Keep the message only: the traceback's frames hold the failed run's tensors.
                message = str(e).splitlines()[0] if str(e) else "CUDA out of memory"
                traceback.clear_frames(e.__traceback__)
            ctx = run.pop("ctx", None)
            last = ctx.device_memory.limit if ctx is not None and ctx.device_memory is not None else None
            if ctx is not None:
                _settle_reads(ctx)  # the failed run's read tasks still running hold device memory
            del ctx
            self._con.column_cache.clear()  # decoded columns kept are device memory: the rerun starts without
            free_device_cache()  # outside the except block: nothing holds the failed run now
            if self._con.group is not None or last is None or len(reruns) >= OOM_RERUNS:
                raise ResourcesExhausted(f"device memory exhausted: {message}"
                                         f"{'' if not reruns else f' (after {len(reruns)} reruns with less)'}; "
                                         f"lower device_memory_limit")
            device_limit = max(1, last // 4)
            reruns.append(device_limit)

    def _execute_once(self, consume, progress, device_limit, reruns, run: dict):
        with room_to_nest():
            op = self._lower()
        ctx = run["ctx"] = self._context(progress, op, device_limit)
        ctx.oom_reruns.extend(reruns)
        attach = getattr(progress, "attach", None)
        if attach is not None:  # a progress display that also shows the run's stages
            attach(ctx)
        try:
            with torch.inference_mode(), room_to_nest():
                out = consume(op, ctx)
        except SluiceError:
            raise
        except torch.cuda.OutOfMemoryError:
            raise  # _execute reruns or reports it
        except MemoryError:
            raise ResourcesExhausted("host memory exhausted") from None
        except Exception as e:  # noqa: BLE001 - anything else is our bug; say so in one line
            raise InternalError(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
        self.last_run = (op, ctx)
        return out

    def to_arrow(self, progress=None) -> pa.Table:
        """The result (on rank 0 of a distributed job; an empty table on the other ranks)."""
        if self._con.launches_ranks:
            return self._on_ranks()
        return self._execute(lambda op, ctx: run_to_arrow(op, ctx, self._names, self.columns, self.plan.schema),
                             progress)

    def _on_ranks(self, write: tuple[str, str] | None = None) -> pa.Table | int:
        """Run this query on ``ranks`` local ranks (:mod:`sluice.launch`): its result, or
        with ``write`` (path, format) the rows rank 0 wrote; the ranks are the connection's,
        started by its first query."""
        c = self._con
        query = {"queries": [self.query], "registered": {k: str(v) for k, v in c._registered.items()}}
        if write is not None:
            query["write"] = list(write)
        results, status = c._rank_pool().run(query)
        return status["written"][0] if write is not None else results[0]

    def write(self, path: str | os.PathLike, fmt: str | None = None, progress=None) -> int:
        """Stream the result into a Parquet or CSV file (by ``fmt`` or the suffix), chunk by
        chunk: the result need not fit in memory. Returns the number of rows written."""
        fmt = (fmt or Path(path).suffix.lstrip(".")).lower()
        if fmt not in ("parquet", "csv"):
            raise ConfigError(f"cannot write {fmt!r} files; use .parquet or .csv")
        if self._con.launches_ranks:  # rank 0 of the local ranks writes the file
            return self._on_ranks((str(Path(path).resolve()), fmt))
        if self._con.rank != 0:  # another rank of a distributed job: its part; rank 0 writes
            self._execute(lambda op, ctx: sum(1 for _ in run_batches(op, ctx, self._names, self.columns,
                                                                     self.plan.schema)), progress)
            return 0

        def consume(op, ctx):
            rows = 0
            writer = None
            try:
                for batch in run_batches(op, ctx, self._names, self.columns, self.plan.schema):
                    if fmt == "csv":
                        batch = _csv_ready(batch)
                    if writer is None:
                        writer = _open_writer(path, fmt, batch.schema)
                    writer.write_batch(batch) if fmt == "parquet" else writer.write(batch)
                    rows += batch.num_rows
                if writer is None:
                    empty = run_to_arrow_schema(self._names, self.columns, self.plan.schema)
                    if fmt == "csv":
                        empty = _csv_ready(empty.empty_table()).schema
                    writer = _open_writer(path, fmt, empty)
            finally:
                if writer is not None:
                    writer.close()
            return rows
        return self._execute(consume, progress)

    def analyze(self) -> str:
        """Run the query and return the plan annotated with what each operator and stage did."""
        if self._con.launches_ranks:
            raise UnsupportedError("analyze() of a connection with ranks; run "
                                   "`sluice query --ranks N --analyze ...` (or analyze inside a torchrun job)")
        measured, self.measure_reads = self.measure_reads, True
        try:
            self.to_arrow()
        finally:
            self.measure_reads = measured
        op, ctx = self.last_run
        return analyze_report(op, ctx, self._con.root)

    def to_pandas(self):
        """A pandas DataFrame: dates as datetime64, decimals as Arrow-backed decimals (exact,
        not Python objects), other columns with their NumPy types (nullable ones as pandas'
        nullable dtypes)."""
        import pandas as pd  # deferred: pandas only for this call
        t = self.to_arrow()

        def dtype(at):
            if pa.types.is_decimal(at):
                return pd.ArrowDtype(at)
            if pa.types.is_integer(at):
                return {8: pd.Int8Dtype(), 16: pd.Int16Dtype(), 32: pd.Int32Dtype(), 64: pd.Int64Dtype()}[at.bit_width]
            if pa.types.is_boolean(at):
                return pd.BooleanDtype()
            if pa.types.is_string(at):
                return pd.StringDtype()
            return None
        df = t.to_pandas(types_mapper=dtype, date_as_object=False)
        return df

    def df(self):
        """Same as :meth:`to_pandas` (DuckDB's name)."""
        return self.to_pandas()

    def pl(self):
        """A Polars DataFrame (DuckDB's name), built from the Arrow result without copying
        where Polars can share it; Polars is optional (``pip install polars``)."""
        try:
            import polars  # deferred: polars only for this call
        except ImportError:
            raise ConfigError("rel.pl() needs Polars: pip install polars") from None
        return polars.from_arrow(self.to_arrow())

    query: str = ""  # the SQL text this relation was planned from

    def verify(self, result: pa.Table | None = None) -> str:
        """Run this query in DuckDB on the same files and compare: a one-line report of agreement,
        or a :class:`~sluice.errors.ExecutionError` naming the first difference (rows compared
        as multisets; in ORDER BY order for the leading ORDER BY columns). DuckDB is the optional
        ``sluicedb[verify]`` extra."""
        try:
            import duckdb  # noqa: F401 -- deferred: duckdb is optional (the verify extra), needed only here
        except ImportError:
            raise ConfigError("--verify needs DuckDB: pip install 'sluicedb[verify]'") from None
        ours = self.to_arrow() if result is None else result
        sql = self.query
        duck = duckdb_connect(self._con.root)
        try:
            theirs = duck.sql(sql).to_arrow_table()
        except Exception as e:  # noqa: BLE001 - DuckDB's own refusal: reported, not a sluice error
            raise ExecutionError(f"verify: DuckDB could not run the query: {str(e).splitlines()[0]}") from None
        try:
            compare(ours, theirs, order_by_columns(sql, ours.column_names))
        except AssertionError as e:
            first = " ".join(str(e).split())
            raise ExecutionError(f"verify: differs from DuckDB: {first}") from None
        return f"verify: agrees with DuckDB ({ours.num_rows} rows x {ours.num_columns} columns)"

    def fetchall(self) -> list[tuple]:
        """The rows as Python tuples (DuckDB's ``fetchall``)."""
        t = self.to_arrow()
        cols = [c.to_pylist() for c in t.columns]
        return list(zip(*cols)) if cols else []

    def to_torch(self, strings: str = "error") -> dict[str, object]:
        """Columns as tensors: numbers as themselves (decimals as float64, dates as int32 days).
        String columns cannot be tensors: with ``strings="codes"`` each becomes a
        :class:`StringCodes` (int32 codes, -1 for NULL, and the list of distinct strings);
        by default they are an error that names them."""
        if strings not in ("error", "codes"):
            raise PlanError(f"to_torch(strings=...) takes 'error' or 'codes', not {strings!r}")
        t = self.to_arrow()
        names = [n for n, c in zip(t.column_names, t.columns)
                 if pa.types.is_string(c.type) or pa.types.is_large_string(c.type)]
        if names and strings == "error":
            raise PlanError(f"string column(s) {', '.join(repr(n) for n in names)}: use to_torch(strings='codes') "
                            "for codes and their dictionary, or to_arrow() / df()")
        out: dict[str, object] = {}
        for name, col in zip(t.column_names, t.columns):
            arr = col.combine_chunks()
            if name in names:
                enc = arr.dictionary_encode()
                codes = enc.indices.cast(pa.int32()).fill_null(-1).to_numpy(zero_copy_only=False)
                out[name] = StringCodes(torch.from_numpy(codes.copy()), enc.dictionary.to_pylist())
                continue
            if pa.types.is_decimal(arr.type):
                arr = arr.cast(pa.float64())
            if pa.types.is_date(arr.type):
                arr = arr.cast(pa.int32())
            if pa.types.is_null(arr.type):  # a bare NULL's column: NaN, as NULLs of numbers are
                arr = pa.nulls(len(arr), pa.float64())
            out[name] = torch.from_numpy(arr.to_numpy(zero_copy_only=False).copy())
        return out

    def explain(self) -> str:
        """The physical plan, then the memory plan (estimated state per materialising operator)."""
        c = self._con
        if c.launches_ranks:  # what rank 0 of ``ranks`` runs
            op = lower_plan(self.plan, c.config, 0, c.config.ranks, in_job=True, device=c.device, cache=c.cache)
        else:
            op = self._lower()
        return "\n".join(explain_ops(op) + [""] + memory_plan(op, self._con.config))

    def __repr__(self) -> str:
        return self.explain()


def run_to_arrow_schema(names, out_names, schema) -> pa.Schema:
    return result_schema(names, out_names, schema)


def _csv_ready(batch):
    """Nested columns as the text DuckDB writes for them in a CSV file (``[1, 2]``, ``{'a': 1}``)."""
    if not any(pa.types.is_nested(t) for t in batch.schema.types):
        return batch
    cols = [nested_text(c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c)
            if pa.types.is_nested(c.type) else c for c in batch.columns]
    return type(batch).from_arrays(cols, names=batch.schema.names)


def _open_writer(path, fmt: str, schema: pa.Schema):
    if fmt == "parquet":
        return pq.ParquetWriter(str(path), schema)
    return pacsv.CSVWriter(str(path), schema)


def connect(data: str | os.PathLike | None = None, **settings: Any) -> Connection:
    """Open a directory whose tables are ``NAME.parquet`` files or ``NAME/`` folders."""
    return Connection(data, **settings)
