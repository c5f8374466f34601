"""One frozen, validated configuration.

Every setting is a field of :class:`Config` and belongs to one area (:data:`AREAS`: engine,
scan, transfer, memory, spill, adapt, dist). It can be given as a keyword of
``sluice.connect(...)``, as ``--set key=value`` or ``--set area.key=value`` on the CLI, or as an
environment variable ``SLUICE__<AREA>__<KEY>`` or ``SLUICE_<KEY>`` (upper case). Precedence:
keyword / --set > environment > default.

The settings stay one flat set of distinct names (as DuckDB's): code reads ``cfg.chunk_rows``
and users type ``chunk_rows``; the area says where a setting belongs (documentation, the
environment's names) and is checked where it is given, so a setting named in the wrong area is
an error rather than ignored.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from sluice.errors import ConfigError
from sluice.setting_values import coerce_setting
import tempfile

#: Rows per chunk on a CPU. A million rows amortises Python overhead per chunk while keeping a
#: chunk of lineitem (16 columns) around 100 MiB.
DEFAULT_CHUNK_ROWS = 1 << 20
#: Rows per chunk (and read task) on a GPU: every operation of a chunk is one Python call and
#: kernel launch, so a chunk must be large for the GPU's time to dominate (five H200 runs: with
#: 1 M-row read tasks the consumer's thread was 88 % busy on q01 while the GPU idled; Sirius
#: measured 50 MB -> 1 GB batches cutting its Q1 from 0.80 to 0.29 s). 8 Mi rows is the size the
#: merged chunks (``coalesce_rows``) already reached there; the read-ahead buffer grows with it
#: (:func:`auto_scan_buffer`).
GPU_CHUNK_ROWS = 8 << 20
#: ``coalesce_rows=0`` on a GPU: merged chunks of up to this many times ``chunk_rows``, at most
#: :data:`COALESCE_MAX_ROWS` (so with GPU-sized chunks only smaller tasks -- small files, tasks
#: cut to a small budget -- are merged).
COALESCE_CHUNKS = 8
COALESCE_MAX_ROWS = 8 << 20


#: ``column_cache_bytes=-1`` on a GPU: the cache keeps up to this share of the device budget (the
#: rest stays free for operators without evicting it; they may take it all when they need it).
CACHE_SHARE = 0.5


#: The area of each setting. ``SLUICE__<AREA>__<KEY>`` variables are checked against it: an unknown
#: area or key, or a key in another area, is an error (a typo in a variable is not ignored).
AREAS: dict[str, tuple[str, ...]] = {
    "engine": ("device", "threads", "pipeline", "recursion_limit", "disabled_rules"),
    "scan": ("chunk_rows", "io_threads", "prefetch", "scan_buffer_bytes", "reader_combining", "metadata_cache",
             "integer_decimals", "plain_strings", "measure_reads", "decode_in_task", "coalesce_rows",
             "row_group_pruning", "stats_aggregates", "decoder", "strict_device", "device_decompress",
             "device_decompress_unverified", "kvikio"),
    "transfer": ("pinned_memory", "copy_stream"),
    "memory": ("host_memory_limit", "device_memory_limit", "keep_freed_memory", "column_cache_bytes"),
    "spill": ("spill_dir", "force_spill", "spill_compression", "page_dictionaries"),
    "adapt": ("scan_mode", "adapt_min_slices", "runtime_filters", "topk_filters", "selective_filters",
              "disjoint_groups", "distinct_counts", "minmax_bounds", "minmax_first_byte"),
    "dist": ("ranks", "exchange", "exchange_wire", "exchange_loopback", "exchange_receive", "exchange_batch_bytes", "exchange_compression", "broadcast_bytes", "range_sort_rows", "hot_keys", "hot_key_share", "rank_data", "dist_timeout_s"),
}
#: The plan rewrites ``disabled_rules`` may name: pure optimizations whose plans answer the same
#: without them (the other rules place filters and columns where later rules and lowering
#: expect them). ``plan.rules`` checks each is one of its rules.
OPTIONAL_RULES = ("push_semi_joins", "semi_join_reduction", "filter_shared_ctes", "sum_offsets",
                  "dependent_group_keys", "struct_fields")
#: The optimisation switches: each read through :meth:`Config.on` only (a test checks the source), so
#: ``pipeline=blocking`` -- the papers' baseline -- turns every one of them off. Settings that pick
#: a mechanism rather than switch an optimisation on (``kvikio``, ``page_dictionaries``,
#: ``device_decompress``, ``keep_freed_memory``) are read directly.
SWITCHES: tuple[str, ...] = (
    "prefetch", "reader_combining", "metadata_cache", "integer_decimals", "plain_strings", "decode_in_task",
    "pinned_memory", "copy_stream", "row_group_pruning", "stats_aggregates", "runtime_filters", "topk_filters",
    "selective_filters", "disjoint_groups", "distinct_counts", "minmax_bounds", "minmax_first_byte")
AREA_OF = {key: area for area, keys in AREAS.items() for key in keys}
ENV_PREFIX = "SLUICE__"


@dataclass(frozen=True, slots=True)
class Config:
    """Engine settings. Each field's docstring is the user documentation."""

    device: str = "auto"
    """Where operators run: ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when present)."""

    chunk_rows: int = 0
    """Rows per chunk produced by scans (and per read task); operators work a chunk at a time.
    0 (default): :func:`auto_chunk_rows` of ``device`` -- 1 Mi rows on a CPU, 8 Mi on a GPU,
    where each chunk's operations are Python calls and kernel launches that a small chunk does
    not amortise."""

    threads: int = 0
    """CPU threads for torch and for Parquet decoding; 0 means all cores. Both are process-wide:
    the first connection sets them and they stay."""

    io_threads: int = 0
    """Threads of the shared I/O pool that read and decode row groups ahead of the consumer. 0
    (default): sized to the machine by :func:`auto_io_threads` when the connection opens -- on a
    GPU half the cores (2 to 8), on a CPU 2."""

    pipeline: str = "overlapped"
    """``overlapped`` (default): storage reads, decoding, transfers and compute run at the same
    time. ``blocking``: the papers' baseline -- each scan reads its whole table synchronously,
    then computes; every optimisation switch is then off (``prefetch``, ``reader_combining``,
    ``metadata_cache``, ``integer_decimals``, ``plain_strings``, ``decode_in_task``,
    ``pinned_memory``, ``copy_stream``, ``row_group_pruning``, ``stats_aggregates``,
    ``runtime_filters``, ``topk_filters``, ``selective_filters``, ``disjoint_groups``,
    ``distinct_counts``, ``minmax_bounds``, ``minmax_first_byte``: :data:`SWITCHES`, each read
    through ``Config.on``)."""

    prefetch: bool = True
    """Read and decode row groups ahead of the consumer on the I/O pool (else: on demand, in
    the consumer's thread)."""

    scan_buffer_bytes: int = 0
    """Decoded bytes each scan may hold ahead of its consumer (bounded queue; producers wait
    when it is full). Accepts 64MiB etc.; 0 (default): 128 MiB per I/O thread, at least 256 MiB
    (:func:`auto_scan_buffer`), within the scan's share of the memory budget."""

    reader_combining: bool = True
    """All scans of a plan start reading at once on the one shared I/O pool (join build and
    probe sides together), instead of each scan starting when first pulled."""

    metadata_cache: bool = True
    """Parquet footers are read once per file and connection (else: on every read task)."""

    integer_decimals: bool = True
    """Decimals a file stores as INT64/INT32 (up to 18 digits) are decoded by pyarrow as those
    integers -- sluice's own form -- under a footer rewritten in memory without their DECIMAL
    annotation, instead of as 16-byte decimal128 values copied back out (else: the latter)."""

    plain_strings: bool = True
    """String columns a file's Arrow schema types ``string_view`` or ``large_string`` (files of
    tpchgen-cli, Polars) are decoded by pyarrow as plain strings, under a footer read without
    that schema, instead of as views the scan then copied into strings (else: the latter)."""

    measure_reads: bool = False
    """The storage read of each scan task is timed apart from its decode: the column chunks are
    read on their own first (a copy pyarrow then makes again from the page cache: 5-10 % of a
    scan-bound query's time, TPC-H SF 1 q03 123 -> 135 ms). ``--analyze``, ``--plot``,
    ``--trace``, ``Relation.analyze()`` and the progress display turn it on for their run;
    otherwise the read is part of the decode stage."""

    decode_in_task: bool = True
    """On a CPU, a scan task's columns are decoded by pyarrow on the task's own I/O thread, read
    as they are decoded, when the scan has a load in flight for each I/O thread (else, as for a
    scan's last task or tasks too big for two in its buffer: across pyarrow's thread pool, the
    column chunks pre-buffered on its I/O pool). With two cores, handing each column to another
    thread cost more than it shared out (docs/scan.md). Not used with a GPU (unmeasured there,
    where the decode pool was found idle half the time)."""

    coalesce_rows: int = 0
    """Read tasks a scan has already loaded when its consumer asks for the next chunk are
    merged into one chunk of up to this many rows (never waiting for a task still loading, so
    it adds no latency): where the consumer falls behind, the operators above pay their fixed
    cost per chunk -- on a GPU one Python call and kernel launch per operation -- once per
    merged chunk. Tasks with large string dictionaries (plain strings) are not merged: their
    bytes would be copied on the host. 0 (default): 8 x ``chunk_rows`` on a GPU, off on a CPU
    (measured no faster there: docs/scan.md); any value up to ``chunk_rows`` turns it off."""

    pinned_memory: bool = True
    """CUDA: decoded columns are staged in reusable pinned host buffers (else: pageable)."""

    copy_stream: bool = True
    """CUDA: host-to-device copies run non_blocking on a separate stream, completion tracked
    with events (deferred synchronisation) instead of synchronous copies."""

    host_memory_limit: int = field(default=0)
    """Host memory budget in bytes for everything a query buffers (scan queues, join build
    sides, aggregation state, sort runs, shared CTE results, the result). 0: 80% of the
    machine's memory less 1 GiB (at least a tenth of it), where the machine's memory is the
    container's (cgroup) limit when that is smaller. Accepts 4GiB etc. Past it, operators
    spill to ``spill_dir``. Whatever the budget, the process's anonymous resident memory is also
    held under that memory less 6 % (at least 64 MiB; shared by the ranks on one machine): near
    it, operators that can spill do."""

    device_memory_limit: int = field(default=0)
    """Device memory budget in bytes, e.g. 40GiB (0: 85% of what the process can have of the GPU
    when the query starts: free memory plus torch's cached blocks); past it device pages move to
    host memory. A CUDA out-of-memory error reruns the query under a quarter of the budget (twice
    at most), so its state spills to pinned host memory and disk."""

    keep_freed_memory: bool = True
    """glibc keeps freed memory for the next chunk's allocations (no automatic heap trim below
    1 GiB, blocks up to 32 MiB from the heap) instead of returning pages it must fault in again;
    sluice trims itself when memory nears the budget. Set once per process, by the first
    connection."""

    column_cache_bytes: int = -1
    """Decoded columns kept on the scan's device across the connection's queries (per row group
    and column, keyed by the file's size, modification time and inode, so a changed file is
    decoded anew): a repeated scan skips reading and decoding them. Charged to each query's
    device budget (the host budget on a CPU) and given back, least recently used first, as soon
    as an operator's reservation needs the room. -1 (default): on a GPU up to half the device
    budget, on a CPU off (the operating system's page cache serves repeat scans there, and a
    cache would hold the columns twice); 0: off; a size (e.g. 8GiB): at most that, on any
    device. Off with ``pipeline=blocking``. ``--analyze`` reports its hits, misses and bytes
    (docs/gpu.md)."""

    spill_dir: str = ""
    """Where spilled pages go: one directory, or several separated by commas (used
    round-robin). Default: the system temp directory. Files are removed when the query ends,
    fails or is interrupted; files left by a killed process are removed on the next start."""

    force_spill: bool = False
    """Every materialising operator partitions and spills from its first page (for tests,
    like DuckDB's debug_force_external): answers must not change."""

    spill_compression: str = "auto"
    """Compression of spilled pages: ``auto`` (self-regulating: steps along none, lz4, zstd
    levels to balance compression cost against write cost), or a fixed ``none``, ``lz4``,
    ``zstd``. ``auto``'s benefit is not measured yet: only unit tests with simulated costs
    check how it steps (docs/memory.md)."""

    page_dictionaries: bool = True
    """A spilled or exchanged page's low-cardinality string column travels as its dictionary and
    int32 codes (see ``arrow.PAGE_DICTIONARY_SHARE``); off: every string by value."""

    row_group_pruning: bool = True
    """Skip row groups whose min/max statistics cannot satisfy pushed predicates."""

    stats_aggregates: bool = True
    """``MIN`` / ``MAX`` of a column and ``COUNT(*)`` over a whole Parquet table, without GROUP BY
    or WHERE, are answered from the row groups' statistics where those are exact (signed
    integers, dates, decimals): no row is read."""

    scan_mode: str = "auto"
    """How a scan with a pushed filter moves data (A-Scan): ``direct`` (decode and ship every
    projected column, filter on the compute device), ``pushdown`` (filter on the I/O threads
    where the data is decoded, ship survivors), ``staging`` (decode and ship the filter's
    columns first, filter on the device, then decode only what survives of the others), or
    ``auto`` (sample each on a few slices, use the fastest, re-sample when the rate drifts).
    ``auto`` by default: over every SSB query at SF 10 on a 2-core CPU it took 0.71 of
    ``direct``'s time (runtime filters' Bloom filters act in pushdown and staging slices only),
    and on a GPU the modes differ by what crosses PCIe, which no fixed choice gets right."""

    adapt_min_slices: int = 16
    """``auto`` samples the modes only on a scan of at least this many row groups (a slice is at
    least one); a scan of fewer takes pushdown. TPC-DS SF 1 inventory (11.7 M rows in 6 row
    groups) spent every slice sampling: q22 190 ms against 155-159 with either mode fixed."""

    runtime_filters: bool = True
    """A join's build side, once read, gives the probe side's scan its key range (to skip row
    groups by their statistics) and a Bloom filter (to drop rows before the join), where that
    cannot change the answer (inner, semi and build-preserving joins)."""

    topk_filters: bool = True
    """ORDER BY ... LIMIT k: once k rows are known, the k-th row's leading key bounds the scan
    that key comes from: row groups whose statistics lie beyond it are skipped, and in pushdown
    slices rows beyond it are dropped on the I/O threads (DuckDB's top-N dynamic filter). At
    SF 10, ``order by l_extendedprice desc limit 5``: see docs/scan.md."""

    selective_filters: bool = True
    """A filter's conjuncts on the host run most selective first (pass rates measured on earlier
    chunks), and those after a conjunct that kept half the rows or fewer run only over the rows
    still in, when they compute more than two operations a column (else: every conjunct over
    every row). TPC-H SF 1 q19's lineitem filter: 3.9 -> 1.8 ms per million rows."""

    disjoint_groups: bool = True
    """An aggregation over input ordered by its one integer key (lineitem by l_orderkey) makes
    partial pages of key ranges that do not overlap: each group is then in one page only, and
    the pages are the answer without the final merge re-grouping every row (SF 10, 15 M groups
    by l_orderkey: docs/benchmarks.md). Checked on the pages' key ranges (else: always merged)."""

    distinct_counts: bool = True
    """COUNT(DISTINCT x) of a string, with no GROUP BY and no other aggregate of DISTINCT x:
    each hash piece of the values is deduplicated and counted, without the codes and the
    unified dictionary that grouping by the values needs (SF 10 ``count(distinct l_comment)``:
    docs/benchmarks.md). Else: the values are grouped as for any DISTINCT aggregate."""

    minmax_bounds: bool = True
    """An aggregation of only MIN / MAX over columns of a Parquet scan (grouped by columns of it)
    bounds the scan on a CPU: once every group seen has a value, a row group whose statistics
    cannot beat the weakest of them, and whose keys are all groups seen, is skipped after its
    keys are read (SF 10 ``MAX(l_comment)`` by the two flags: docs/benchmarks.md). Else every row
    group is read whole."""

    minmax_first_byte: bool = True
    """On a CPU, string MIN / MAX over plain strings (about a dictionary entry per row) in few groups
    (at most 1,024, 16 rows each or more, 4,096 rows a chunk): only rows whose first byte is
    their group's best get the 8-byte keys and the comparisons after them (SF 10
    ``MAX(l_comment)`` by the two flags: 1 row in 2,500). Else every row gets its key."""

    decoder: str = "auto"
    """Who decodes Parquet pages: ``arrow`` (pyarrow on the host's cores, then the columns cross
    to the device), ``device`` (sluice's Triton page kernels on the scan's device: on a GPU the
    pages cross as stored and decode there; a column they cannot decode, strings not
    dictionary-coded among them, goes to pyarrow, counted in ``--analyze``; it needs CUDA and
    triton, or ``TRITON_INTERPRET=1`` on a CPU, else it is refused), or ``auto``: ``device``
    only on a GPU where nvCOMP and triton are installed *and* ``sluice calibrate --data DIR``
    measured the device decoder faster than pyarrow on this data on this machine; ``arrow``
    everywhere else, calibrated or not (the kernels are not measured on a GPU yet; on a CPU
    pyarrow is the faster, and without nvCOMP the device decoder would decompress on the host
    anyway)."""

    strict_device: bool = False
    """With ``decoder=device``: a column the device decoder cannot decode, or a page it must
    decompress on the host (a codec nvCOMP lacks), is an error instead of a fallback."""

    device_decompress: bool = True
    """The device decoder on a GPU with nvCOMP: column chunks cross as stored and every page of a
    read task is decompressed there in one batch per codec. Off (or without nvCOMP): pages are
    decompressed on the host's cores, then cross."""

    device_decompress_unverified: bool = False
    """Let nvCOMP decompress pages that carry no page CRC (pyarrow leaves it out by default).
    nvCOMP's decoders trust their input: on an H200 a garbled Snappy or Zstd page made the GPU
    fault (the process is lost) or decoded to other bytes without an error, where pyarrow
    reports the file corrupt. Off (default): such pages are decompressed on the host (refused
    under ``strict_device``). On: for files you trust. Either way a page whose CRC does not
    match its bytes is a corrupt-file error."""

    kvikio: bool = True
    """The device decoder on a GPU with KvikIO installed reads column chunks with KvikIO into
    one pinned *host* buffer per read task (POSIX reads by KvikIO's threads, all ranges in
    flight at once); ``--analyze`` names the mode. These reads never use GPUDirect Storage, which
    reads only into device memory. Off: plain ``preadv`` into the same buffer."""

    disabled_rules: str = ""
    """Plan rewrites to skip, by name, comma-separated (as DuckDB's ``disabled_optimizers``):
    any of ``OPTIONAL_RULES`` -- each is an optimization, so answers
    do not change, only their cost."""

    recursion_limit: int = 100_000
    """Most iterations of a WITH RECURSIVE query before it stops with an error (a recursion
    whose stop condition never holds would otherwise run for ever)."""

    ranks: int = 1
    """Ranks to run a query on, started on this machine (``--ranks N``): each scans a share of
    the row groups, rows move between them by hash. Inside a torchrun job the job's ranks are
    used and this is ignored."""

    exchange: str = "deferred"
    """How an exchange sends between ranks: ``deferred`` (a batch's transfer flies while the
    next batch is partitioned: only the wait on the network is deferred), ``chunked`` (each
    batch waited on), ``blocking`` (the whole input buffered, then sent at once). On the one GPU
    measurement (one rank, NCCL over loopback) deferred moved 8.2 GiB/s against blocking's 11.3:
    docs/ranks.md."""

    exchange_wire: str = "auto"
    """How rows cross ranks: ``tensor`` (fixed-width columns as raw tensor bytes over the data
    group -- NCCL on CUDA, so they stay on the device; strings and the layout as host bytes over
    gloo), ``arrow`` (every column in one Arrow IPC stream of host bytes over gloo), ``auto``
    (tensor on CUDA, arrow on the CPU)."""

    exchange_loopback: bool = False
    """Send a rank's rows for itself over the wire too, instead of handing them over in memory:
    a check of the transport on one rank (``--ranks 1`` on one GPU then moves every exchanged
    row through NCCL). Slower; answers are the same."""

    exchange_receive: str = "materialized"
    """How an exchange's received rows reach their consumer: ``materialized`` (every exchange
    runs to completion and its rows are held before the consumer starts) or ``pipelined`` (one
    exchange of a plan whose consumer streams -- a join's probe side, an aggregate, a filter --
    is handed each round's rows as they land, so they are probed while the next round is on the
    wire; every rank still takes part in every round, draining what nobody reads). Pipelined
    was 1.18-1.27x faster than blocking on links throttled to 50-100 Mbit/s (2 ranks), but
    not shown to be no slower where compute is the bottleneck (1 Gbit/s on 2 cores shared with
    other jobs): bench/results/2026-12-08-exchange-pipelined-netns-2core-cpu.md."""

    exchange_batch_bytes: int = 4 << 20
    """Bytes buffered for one destination rank before a round of transfers goes out (smaller
    messages fall below the network's bandwidth); all destinations together buffer at most a
    batch each, and at most an eighth of the memory budget. The first three rounds of
    ``deferred`` and ``chunked`` take 1/8, 1/4 and 1/2 of it (slow start: the link, and a
    pipelined consumer, start before a whole batch is packed)."""

    exchange_compression: str = "auto"
    """Compression of the rows an exchange sends over the Arrow wire: ``auto`` (self-regulating,
    as spilling's: steps along none, lz4, zstd while the time waited on the network outweighs
    the time spent packing, and back when it does not -- a fast link stays uncompressed),
    ``none``, ``lz4`` or ``zstd``. The tensor wire's bytes stay raw."""

    broadcast_bytes: int = 32 << 20
    """A join's build side estimated below this many bytes is sent to every rank (the probe side
    stays where it is) when that moves fewer bytes than partitioning both sides by the keys --
    the build side times the other ranks against (build + probe) times the share that leaves a
    rank -- else both sides are partitioned. 0 always partitions, -1 always broadcasts (where
    the join allows it)."""

    range_sort_rows: int = 1 << 20
    """An ORDER BY without LIMIT over several ranks, its input estimated at this many rows or
    more, is sorted where the rows are: every rank samples its sort keys, the ranges between
    the sampled splitters are exchanged, each rank sorts one range and rank 0 gathers the
    sorted ranges in order. Below it every row is gathered to rank 0 and sorted there (fewer
    bytes on the wire). A window with ORDER BY and no PARTITION BY whose functions carry across
    ranks (ranking, PERCENT_RANK / CUME_DIST, running COUNT / SUM / AVG / MIN / MAX) runs by
    ranges from the same size, each rank adding the earlier ranks' totals. 0 always sorts by
    ranges, -1 never."""

    hot_keys: bool = True
    """A join hashing both sides over several ranks on one integer key samples the probe
    table's key column (a few row groups) when lowered; a value holding 1/(2 x ranks) of the
    sample or more is hot: its probe rows stay on the rank that read them and its build rows go
    to every rank, so no rank receives that key's rows alone (inner, left, semi and anti joins;
    the others keep the plain hash). False: every row by its hash."""

    hot_key_share: float = 0.0
    """With ``hot_keys``: the share of the sampled probe rows a key value must hold to be hot
    (at most 8 values are). 0: 1/(2 x ranks), and 64 sampled rows at least."""

    rank_data: str = "shared"
    """Where the ranks' data is: ``shared`` (default) -- every rank reads the same copy of the
    tables (one file system, or a copy on every node) and the ranks share out its row groups;
    ``local`` -- each rank's own files form its part of every table, which is the union of all
    the ranks' files (a cluster without a shared file system: each node's fragment on its own
    disk). A ``{rank}`` or ``{local_rank}`` in the data path gives each rank its own folder.
    Ranks whose columns differ, or that would read the same data twice, are refused."""

    dist_timeout_s: int = 60
    """Seconds a rank may show no sign of life before the query ends on every rank with one line
    naming it: joining the job (a peer that never joins), then, watched over the job's store
    (:mod:`sluice.ranks.liveness`), a rank that stops answering (stopped, unreachable) or is
    busy with no progress -- no chunk out of any operator -- for this long (a read that never
    returns). A rank waiting for its peers or for its caller is not hung, so ranks busy between
    two collectives for longer are not failed; one operation that itself takes longer than this
    is taken for a hang. A peer that fails or dies ends the query at once."""

    def __post_init__(self) -> None:
        if self.ranks < 1:
            raise ConfigError(f"ranks must be at least 1, not {self.ranks}")
        if self.exchange not in ("deferred", "chunked", "blocking"):
            raise ConfigError(f"exchange must be deferred, chunked or blocking, not {self.exchange!r}")
        if self.exchange_wire not in ("auto", "tensor", "arrow"):
            raise ConfigError(f"exchange_wire must be auto, tensor or arrow, not {self.exchange_wire!r}")
        if self.exchange_receive not in ("pipelined", "materialized"):
            raise ConfigError(f"exchange_receive must be pipelined or materialized, not {self.exchange_receive!r}")
        if self.exchange_compression not in ("auto", "none", "lz4", "zstd"):
            raise ConfigError(f"exchange_compression must be auto, none, lz4 or zstd, not {self.exchange_compression!r}")
        if self.exchange_batch_bytes < 1:
            raise ConfigError(f"exchange_batch_bytes must be positive, not {self.exchange_batch_bytes}")
        if self.broadcast_bytes < -1:
            raise ConfigError(f"broadcast_bytes must be -1 (always), 0 (never) or a size, not {self.broadcast_bytes}")
        if not 0 <= self.hot_key_share <= 1:
            raise ConfigError(f"hot_key_share must be a share from 0 to 1, not {self.hot_key_share}")
        if self.range_sort_rows < -1:
            raise ConfigError(f"range_sort_rows must be -1 (never), 0 (always) or a row count, not {self.range_sort_rows}")
        if self.rank_data not in ("shared", "local"):
            raise ConfigError(f"rank_data must be shared or local, not {self.rank_data!r}")
        if self.dist_timeout_s < 1:
            raise ConfigError(f"dist_timeout_s must be at least 1, not {self.dist_timeout_s}")
        dev = self.device
        if not (dev in ("auto", "cpu", "cuda") or (dev.startswith("cuda:") and dev[5:].isdigit())):
            raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, not {dev!r}")
        if self.adapt_min_slices < 1:
            raise ConfigError(f"adapt_min_slices must be at least 1, not {self.adapt_min_slices}")
        if self.scan_mode not in ("auto", "direct", "pushdown", "staging"):
            raise ConfigError(f"scan_mode must be auto, direct, pushdown or staging, not {self.scan_mode!r}")
        if self.decoder not in ("auto", "arrow", "device"):
            raise ConfigError(f"decoder must be auto, arrow or device, not {self.decoder!r}")
        if self.disabled_rules:
            unknown = [r for r in self.disabled_rules.split(",") if r.strip() not in OPTIONAL_RULES]
            if unknown:
                raise ConfigError(f"disabled_rules: {unknown[0].strip()!r} is not a rule that can be disabled "
                                  f"({', '.join(OPTIONAL_RULES)})")
        if self.recursion_limit < 1:
            raise ConfigError(f"recursion_limit must be at least 1, not {self.recursion_limit}")
        if self.coalesce_rows < 0:
            raise ConfigError(f"coalesce_rows must be 0 (automatic) or a number of rows, not {self.coalesce_rows}")
        if self.chunk_rows == 0:
            object.__setattr__(self, "chunk_rows", auto_chunk_rows(self.device))
        if self.chunk_rows < 1:
            raise ConfigError(f"chunk_rows must be at least 1 (or 0: sized to the device), not {self.chunk_rows}")
        if self.threads < 0:
            raise ConfigError(f"threads must be >= 0, not {self.threads}")
        if self.io_threads < 0:
            raise ConfigError(f"io_threads must be at least 1 (or 0: sized to the machine), not {self.io_threads}")
        if self.pipeline not in ("overlapped", "blocking"):
            raise ConfigError(f"pipeline must be overlapped or blocking, not {self.pipeline!r}")
        if self.scan_buffer_bytes and self.scan_buffer_bytes < (1 << 20):
            raise ConfigError(f"scan_buffer_bytes must be at least 1MiB (or 0: sized to the I/O threads), "
                              f"not {self.scan_buffer_bytes}")
        if self.spill_compression not in ("auto", "none", "lz4", "zstd"):
            raise ConfigError(f"spill_compression must be auto, none, lz4 or zstd, not {self.spill_compression!r}")
        for d in self.spill_dirs():
            if not os.path.isdir(d):
                raise ConfigError(f"spill_dir {d!r} is not a directory")
        if self.column_cache_bytes < -1:
            raise ConfigError(f"column_cache_bytes must be -1 (automatic), 0 (off) or a size, not {self.column_cache_bytes}")
        for name in ("host_memory_limit", "device_memory_limit"):
            v = getattr(self, name)
            if v < 0 or (0 < v < (64 << 10)):
                raise ConfigError(f"{name} must be 0 (automatic) or at least 64KiB, not {v}")

    def coalesce_target(self, device_type: str) -> int:
        """Rows a scan merges loaded tasks up to (0: it does not merge): ``coalesce_rows``, or
        its automatic value on ``device_type``."""
        auto = min(COALESCE_CHUNKS * self.chunk_rows, COALESCE_MAX_ROWS) if device_type == "cuda" else 0
        rows = self.coalesce_rows or auto
        return rows if rows > self.chunk_rows and self.on("prefetch") else 0

    def column_cache_limit(self, device_type: str, budget: int) -> int:
        """Bytes the column cache may keep on ``device_type`` under a ``budget`` of bytes (0: off):
        ``column_cache_bytes``, or its automatic value (:data:`CACHE_SHARE` of the budget on a
        GPU, off on a CPU)."""
        if self.pipeline != "overlapped" or self.column_cache_bytes == 0:
            return 0
        if self.column_cache_bytes < 0:
            return int(CACHE_SHARE * budget) if device_type == "cuda" else 0
        return min(self.column_cache_bytes, budget)

    @property
    def read_ahead_bytes(self) -> int:
        """``scan_buffer_bytes``, or its automatic size when 0."""
        return self.scan_buffer_bytes or auto_scan_buffer(self.io_threads, self.chunk_rows)

    def spill_dirs(self) -> list[str]:
        """The spill directories (the system temp directory when none is set)."""
        dirs = [d.strip() for d in self.spill_dir.split(",") if d.strip()]
        return dirs or [tempfile.gettempdir()]

    def on(self, switch: str) -> bool:
        """Whether an optimisation switch (:data:`SWITCHES`) is in effect: all are off when
        pipeline=blocking."""
        if switch not in SWITCHES:
            raise KeyError(f"{switch} is not an optimisation switch (config.SWITCHES)")
        return self.pipeline == "overlapped" and bool(getattr(self, switch))

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None = None,
                      environ: Mapping[str, str] | None = None) -> "Config":
        """Build a config from keyword settings layered over ``SLUICE__AREA__KEY`` and
        ``SLUICE_KEY`` variables."""
        environ = os.environ if environ is None else environ
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name in known:
            env = environ.get(f"SLUICE_{name.upper()}")
            if env is not None:
                values[name] = coerce_setting(name, env, known[name].type)
        given: dict[str, str] = {}  # setting -> the name that gave it
        for var, env in environ.items():
            if var.startswith(ENV_PREFIX):
                key = _area_key(var[len(ENV_PREFIX):].lower().split("__", 1), var)
                value = coerce_setting(key, env, known[key].type)
                if key in values and values[key] != value:
                    raise ConfigError(f"{var} and SLUICE_{key.upper()} give {key} two values")
                values[key] = value
        for name, value in (settings or {}).items():
            key = name.replace("-", "_")
            if "." in key:
                key = _area_key(key.split(".", 1), name)
            if key not in known:
                raise ConfigError(f"unknown setting {name!r}; known: {', '.join(known)}")
            value = coerce_setting(key, value, known[key].type)
            if key in given and values[key] != value:
                raise ConfigError(f"{given[key]} and {name} give {key} two values")
            values[key], given[key] = value, name
        return cls(**values)

    def replace(self, **changes: Any) -> "Config":
        return Config.from_settings({**dataclasses.asdict(self), **changes}, environ={})


def _area_key(parts: list[str], given: str) -> str:
    """The setting that ``area`` + ``key`` name (checked: the key must be in that area)."""
    if len(parts) != 2 or parts[0] not in AREAS:
        raise ConfigError(f"{given!r} names no settings area; areas: {', '.join(AREAS)}")
    area, key = parts
    if key not in AREA_OF:
        raise ConfigError(f"{given!r}: unknown setting {key!r} in area {area}; "
                          f"known there: {', '.join(AREAS[area])}")
    if AREA_OF[key] != area:
        raise ConfigError(f"{given!r}: {key} is a setting of area {AREA_OF[key]}, not {area}")
    return key


def auto_scan_buffer(io_threads: int, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> int:
    """``scan_buffer_bytes=0``: 128 MiB per I/O thread, at least 256 MiB (2 threads, the CPU
    default), per million rows of a read task (``chunk_rows``; GPU-sized tasks are 8x larger,
    and as many must be in flight). A fixed 256 MiB held 3 of lineitem's 80 MiB tasks in
    flight at SF 10 on an H200 with 8 I/O threads: the decode pool was 18 % busy while q01's
    consumer waited 0.84 of 1.06 s for it. The scan's share of the memory budget still caps it
    (``exec/operators.py``)."""
    return (128 << 20) * max(2, io_threads) * max(1, chunk_rows // DEFAULT_CHUNK_ROWS)


def auto_chunk_rows(device: str) -> int:
    """``chunk_rows=0``: :data:`GPU_CHUNK_ROWS` where ``device`` is (or ``auto`` finds) CUDA,
    :data:`DEFAULT_CHUNK_ROWS` on a CPU."""
    if device == "auto":
        import torch  # deferred: settings are plain data: the settings page and --set read them without torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return GPU_CHUNK_ROWS if device.startswith("cuda") else DEFAULT_CHUNK_ROWS


def auto_io_threads(device_type: str, cores: int) -> int:
    """``io_threads=0``: on a GPU, where compute leaves the host's cores to reading and decoding,
    half of them (2 to 8); on a CPU, 2 -- the compute thread and torch's own threads need the
    rest. Measured (bench/results/2026-11-27-h200-runs-1-2.md): on an H200 with 16 cores, TPC-H
    SF 10 with ``decoder=arrow`` took
    1.01 s for q06 and 1.39 s for q18 with 8 I/O threads against 1.39 and 1.81 s with 2 (q01
    even); on a 2-core CPU, 2. Many-core CPUs are not measured yet: they keep 2."""
    if device_type == "cuda":
        return max(2, min(8, cores // 2))
    return 2
