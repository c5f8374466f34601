"""A Parquet scan as lowering decides it (docs/design.md §3, §6): a :class:`ScanSpec`.

The scan runs as stages -- plan reads -> fetch bytes -> decompress -> decode -> filter -> hand
over -- and what each stage does is decided here, once, as plain immutable data: the pushed
filter over the file's column names, the read tasks (:mod:`sluice.io.parquet.read_plan`), how
many bytes the read-ahead queue wants, the mode (direct, pushdown or staging, or adaptive) and
the decoder, and the slots for the runtime filters and the MIN / MAX bound that later lowering
passes aim at the scan. ``bytes_to_scan``, ``--explain`` and ``--analyze`` read the same spec;
a run (:meth:`sluice.exec.operators.ScanOp.reader`) adds only what exists per run: the I/O pool,
the memory reservations, the filters' contents, the policy's measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from sluice.adapt.decoder_policy import decoder_name
from sluice.catalog import RowGroup, TableInfo
from sluice.config import Config
from sluice.expr.nodes import Col, Expr, substitute
from sluice.io.parquet.metadata import MetadataCache
from sluice.io.parquet.read_plan import ReadPlan, plan_scan, slice_rows

#: scan_mode=auto adapts (samples the modes on slices, then exploits the best) only on a scan of
#: at least this many chunks' worth of rows. An adaptive scan is cut into about 64 slices, far
#: smaller than a chunk on a table of a few chunks, and every slice costs the operators above it
#: a chunk's fixed overhead: on TPC-H SF 1 (lineitem: 6 chunks, 53 slices) adapting took 1.25x
#: the time of either fixed mode (geomean of the 22 queries, 2 threads). A smaller scan takes
#: pushdown: on that run as fast as direct, and on a GPU it filters before the copy. (At SF 10,
#: where the small scans are customer, part and supplier, q01-q10 ran within noise: 0.67-1.15x.)
ADAPT_MIN_CHUNKS = 8


@dataclass(frozen=True)
class ScanSpec:
    """What a scan reads and how, decided when lowering (see the module)."""

    table: TableInfo
    #: the file columns read (sorted)
    columns: tuple[str, ...]
    #: the pushed filter over the file's column names, applied by the mode of each slice
    predicate: Expr | None
    row_groups: tuple[RowGroup, ...]
    #: the read tasks, for a read-ahead budget of :attr:`read_ahead_bytes` (a run whose budget
    #: holds less cuts them to fit: :meth:`ReadPlan.capped`)
    reads: ReadPlan
    #: the bytes the read-ahead queue asks for: the setting, no more than the whole scan decoded
    #: (a run reserves this or its share of the budget, whichever is smaller)
    read_ahead_bytes: int
    #: direct, pushdown or staging: the mode of every slice (unless adaptive)
    mode: str
    #: scan_mode=auto on a large scan: a policy picks each slice's mode by measuring them
    adaptive: bool
    #: arrow (pyarrow on the host) or device (sluice's device decoder on the scan's device)
    decoder: str
    #: RuntimeFilterSpecs of the joins and top-ks that filter this scan
    runtime_filters: tuple = ()
    #: MinMaxBoundSpecs of the aggregation above (one at most)
    minmax_bounds: tuple = ()
    #: the MIN / MAX bound the scan applies (None: none; only on a CPU, where it pays)
    bound: object = None
    #: the settings the decisions were made under (the scan's area of the config)
    config: Config | None = None

    @property
    def pred_columns(self) -> list[str]:
        """The columns the predicate reads, in the scan's order (staging decodes them first)."""
        return [c for c in self.columns if self.predicate is not None and c in self.predicate.columns()]


def scan_spec(table: TableInfo, columns: dict[str, str], filter: Expr | None, row_groups: list[RowGroup],
              config: Config, device: torch.device, cache: MetadataCache) -> ScanSpec:
    """The spec of a scan of ``columns`` (internal name -> file column) of ``row_groups``, with
    ``filter`` over the internal names; its runtime-filter and bound slots empty."""
    predicate = None
    if filter is not None:  # over the file's column names, as the reader sees them
        types = {k: table.types[v] for k, v in columns.items()}
        predicate = substitute(filter, {k: Col(v, types[k]) for k, v in columns.items()})
    files = table.files
    spec = ScanSpec(table, tuple(sorted(set(columns.values()))), predicate, tuple(row_groups),
                    reads=ReadPlan((), (), (), 0), read_ahead_bytes=0, mode="direct", adaptive=False,
                    decoder=decoder_name(config.decoder, device, str(files[0]) if files else None), config=config)
    return decide(spec, device, cache)


def aim_runtime_filter(scan, spec) -> None:
    """Fill a slot of ``scan``'s spec (a ScanOp's, while lowering): a runtime filter aimed at it."""
    scan.spec = replace(scan.spec, runtime_filters=scan.spec.runtime_filters + (spec,))


def aim_minmax_bound(scan, spec) -> None:
    """Fill a slot of ``scan``'s spec (a ScanOp's, while lowering): the aggregation's bound."""
    scan.spec = replace(scan.spec, minmax_bounds=scan.spec.minmax_bounds + (spec,))


def decide(spec: ScanSpec, device: torch.device, cache: MetadataCache) -> ScanSpec:
    """The mode, the read tasks and the bound of ``spec`` from its other fields."""
    cfg = spec.config
    filtered = spec.predicate is not None or bool(spec.runtime_filters)
    mode, adaptive = cfg.scan_mode, False
    if mode == "auto" and filtered:
        rows = sum(rg.num_rows for rg in spec.row_groups)
        # A top-k's bound narrows while the scan runs: it skips row groups only of slices not
        # yet read, so that scan keeps its slices (and adapts) at any size.
        adaptive = ((rows >= ADAPT_MIN_CHUNKS * cfg.chunk_rows and len(spec.row_groups) >= cfg.adapt_min_slices)
                    or any(s.topk for s in spec.runtime_filters))
        mode = "direct" if adaptive else "pushdown"
    if not filtered:
        mode = "direct"
    rows = slice_rows(list(spec.row_groups), cfg.chunk_rows) if adaptive else cfg.chunk_rows
    reads = spec.reads
    if reads.rows_per_task != rows:
        reads = plan_scan(spec.table, list(spec.columns), list(spec.row_groups), rows, cache)
    bound = spec.minmax_bounds[0] if spec.minmax_bounds and device.type == "cpu" and cfg.on("minmax_bounds") else None
    return replace(spec, mode=mode, adaptive=adaptive, reads=reads, bound=bound,
                   read_ahead_bytes=min(cfg.read_ahead_bytes, reads.decoded_bytes))
