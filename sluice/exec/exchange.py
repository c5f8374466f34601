"""Exchange: rows move between ranks -- by hash of keys, to rank 0 (gather) or to every rank
(broadcast) -- over ``all_to_all_single`` (PystachIO §3, §5).

An exchange is a stage boundary: the driver runs every exchange of the plan to completion,
children first, in the same order on every rank, before the result is pulled
(:func:`run_exchanges`). Collectives therefore always pair up across ranks, whatever a rank's
operators skip for its data (a join whose build side is empty on one rank, a LIMIT that stops
early), and each stage's received rows are held in a Materializer -- the same budget as local
state, spilled when it must be.

One exchange of a plan may instead be *pipelined* (``exchange_receive=pipelined``, chosen when
lowered: :func:`sluice.physical.distribute.mark_pipelined`): it is no stage, its rounds run as
its consumer pulls, and each round's rows are handed on once the next round's transfer is
issued, so the consumer probes or aggregates them while it flies (PystachIO §3.3:
:class:`PipelinedReceive`). At most one round's decoded rows wait for the consumer, counted
against the budget. Its rounds still pair up on every rank: before any other collective (another
exchange's round or splitter sample, the final gather of statistics) a rank runs the pipelined
exchange's remaining rounds to their end (:func:`drain_pipelined`) -- rows it may still need
held in its Materializer, rows of a finished result dropped -- so every rank's collectives come
in the same order whatever its consumer did (stopped at a LIMIT, skipped an empty build side,
never pulled at all).

Sending is chunked: each input chunk is split by destination, serialised
(:mod:`sluice.ranks.wire`) and sent in rounds of a batch per destination, each round's message
headed by the sizes of the next, so no round waits on a header of its own
(:mod:`sluice.exec.exchange_rounds`). Rows for this rank skip the wire.

``exchange_wire`` picks how rows cross: ``arrow`` -- each part one Arrow IPC stream of host
bytes (:mod:`sluice.ranks.wire`) over gloo; ``tensor`` -- fixed-width columns as raw tensor
bytes over the data group (NCCL on CUDA: they stay on the GPU) and the rest as host bytes
(:mod:`sluice.ranks.tensor_wire`), two ``all_to_all_single`` per round. ``auto``: tensor on
CUDA when each local rank has a GPU of its own (NCCL refuses two ranks on one), else arrow.

``exchange`` picks the variant: ``deferred`` (default) packs the next batch while a round
flies; ``chunked`` waits on each round at once; ``blocking`` (the baseline) buffers its whole
input before one round. The pipelined receive side is :mod:`sluice.exec.pipelined_receive`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

import torch
import torch.distributed as dist

from sluice.chunk import Chunk, concat_chunks
from sluice.errors import InternalError, SluiceError
from sluice.exec import range_partition
from sluice.exec.exchange_rounds import ExchangeStats, Rounds, hash_rows
from sluice.exec.materialize import Materializer
from sluice.exec.ordered_pages import OrderedPages
from sluice.exec.hot_keys import split_by_destination
from sluice.exec.operators import Operator, ScanOp
from sluice.exec.pipelined_receive import PipelinedReceive, drain_pipelined
from sluice.expr.evaluate import evaluate
from sluice.kernels.hash import _srl, hash_columns
from sluice.ranks import liveness
from sluice.ranks.wire import bytes_to_chunks, chunk_to_bytes

#: The exchange reads hash bits 16..31: spill partitioning reads the top bits, so rows an
#: exchange sends to one rank still spread over that rank's spill partitions.
_DEST_SHIFT = 16


@dataclass(eq=False)
class ExchangeOp(Operator):
    child: Operator
    kind: str  # "hash" | "range" | "gather" | "broadcast"
    keys: tuple = ()  # kind "hash": the key expressions; kind "range": the SortKeys
    key_types: tuple = ()  # kind "hash": the type each key hashes as (a join's two sides agree)
    #: (build key expression, RuntimeFilterSpec): this exchange feeds a join's build side, whose
    #: probe scan lies beyond an exchange; the filter is built from every rank's input rows,
    #: merged across ranks when the stage ends (set by physical/filter_placement.py).
    publishes: list = field(default_factory=list)
    #: kind "gather": rank 0 hands on every rank's rows in rank order, each rank's as it sent
    #: them (the sorted ranges of a range-partitioned sort)
    ordered: bool = False
    #: its received rows handed to the consumer round by round (:class:`PipelinedReceive`), not
    #: run as a stage (set by physical/distribute.py's mark_pipelined)
    pipelined: bool = False
    #: kind "hash": a join's hot key values routed apart (:class:`sluice.exec.hot_keys.HotKeys`:
    #: set by physical/distribute.py when lowered), None: every row by its hash
    hot: object = None
    label = "Exchange"

    def __post_init__(self):
        self.children = (self.child,)
        if self.kind not in ("hash", "range", "gather", "broadcast"):
            raise ValueError(f"exchange kind {self.kind!r}")
        self.label = {"hash": "Exchange", "range": "Exchange", "gather": "Gather", "broadcast": "Broadcast"}[self.kind]

    def describe(self) -> str:
        if self.kind == "hash":
            hot = f", {self.hot.describe()}" if self.hot is not None else ""
            return f"Exchange hash({', '.join(map(str, self.keys))}){hot}"
        if self.kind == "range":
            keys = ", ".join(f"{k.expr} {'ASC' if k.ascending else 'DESC'}" for k in self.keys)
            return f"Exchange range({keys})"
        if self.kind == "gather":
            return "Gather to rank 0 in rank order" if self.ordered else "Gather to rank 0"
        return "Broadcast to every rank"

    # ------------------------------------------------------------------ run

    def execute(self, ctx) -> Iterator[Chunk]:
        mat = ctx.run(self).result
        if isinstance(mat, PipelinedReceive):
            yield from mat.pages()
            return
        if mat is None:
            raise InternalError("an exchange was pulled before its stage ran")
        try:
            if isinstance(mat, OrderedPages):
                yield from mat.stream()
                return
            for part in mat.partitions():
                yield from part.stream()
                mat.release(part.index)
        finally:
            mat.close()

    def run_stage(self, ctx) -> None:
        """Send this rank's input, receive every rank's rows for it (once per run)."""
        run = ctx.run(self)
        if run.result is not None:
            return
        g = ctx.dist
        stats = run.exchange = ExchangeStats(rows_to=[0] * g.world, bytes_sent=[0] * g.world)
        mstats = ctx.memory_stats(self)
        if self.ordered:
            mat = OrderedPages(ctx, f"{self.label} received", g.world, stats=mstats)
        else:
            mat = Materializer(ctx, f"{self.label} received", hash_rows, stats=mstats)
        run.result = mat
        t0 = time.perf_counter()
        try:
            for pages in self._shuffle(ctx, g, stats, lambda src, page: _store(mat, src, page)):
                for src, page in pages:
                    _store(mat, src, page)
            for slot in self.publishes:  # the whole build side's keys, on every rank
                ctx.runtime_filter(slot.spec).publish_across(g.group)
        except SluiceError:
            raise
        except RuntimeError as e:  # a collective failed: a peer died, hung or aborted
            raise g.fail(e) from None
        mat.finish()
        stats.stage_s = time.perf_counter() - t0

    def _destinations(self, chunk: Chunk, world: int, cuts=None, rank: int = 0) -> list[tuple[int, Chunk]]:
        n = chunk.num_rows
        if self.kind == "gather":
            return [(0, chunk)]
        if self.kind == "broadcast":
            return [(d, chunk) for d in range(world)]
        if self.kind == "range":
            dest = range_partition.destinations(chunk, cuts, self.keys)
        else:
            h = hash_columns([evaluate(k, chunk).expand(n) for k in self.keys], n, list(self.key_types))
            dest = (_srl(h, _DEST_SHIFT) & 0xFFFF) % world
            if self.hot is not None:
                return self.hot.destinations(chunk, dest, world, rank)
        return split_by_destination(chunk, dest, world)

    def _shuffle(self, ctx, g, st: ExchangeStats, local) -> Iterator[list[tuple[int, Chunk]]]:
        """This rank's input sent in rounds (:class:`Rounds`), each round's received pages (with
        their sender) yielded once the next round's transfer is issued. Rows for this rank go to
        ``local`` (sender, page) at once, or, where it is None (pipelined), with the round's pages."""
        if self.kind == "range":
            source, cuts = self._ranged_input(ctx, g, st)
        else:
            source, cuts = iter(self.child.stream(ctx)), None
        rounds = Rounds(self, ctx, g, st, local, lambda: drain_pipelined(ctx, keep=True, before=self))
        yield from rounds.run(source, cuts)

    def _ranged_input(self, ctx, g, st: ExchangeStats):
        """Kind ``range``: this rank's input held (spillable) while its keys are sampled, the
        samples shared, the splitters taken (the same on every rank); then the held rows as the
        input to send (:mod:`sluice.exec.range_partition`)."""
        held = Materializer(ctx, f"{self.label} input", hash_rows, stats=ctx.memory_stats(self))
        sampler = range_partition.Sampler(self.keys, g.world)
        ti = time.perf_counter()
        try:
            for chunk in self.child.stream(ctx):
                sampler.add(chunk)
                held.add(chunk)
            held.finish()
        except BaseException:
            held.close()
            raise
        st.input_s += time.perf_counter() - ti
        mine = sampler.sample()
        got: list = [None] * g.world
        drain_pipelined(ctx, keep=True, before=self)
        t0 = time.perf_counter()
        with liveness.waiting():
            dist.all_gather_object(got, None if mine is None else chunk_to_bytes(mine), group=g.group)
        st.network_s += time.perf_counter() - t0
        samples = [None if b is None else concat_chunks(bytes_to_chunks(torch.from_numpy(b), ctx.device))
                   for b in got]
        cuts = range_partition.splitters(samples, self.keys, g.world)

        def rows():
            try:
                for part in held.partitions():
                    yield from part.stream()
                    held.release(part.index)
            finally:
                held.close()
        return rows(), cuts


def _store(mat, source: int, page: Chunk) -> None:
    """Hold a received page: in its sender's order for an ordered gather."""
    if isinstance(mat, OrderedPages):
        mat.add(source, page)
    else:
        mat.add(page)


def exchanges_in_order(root: Operator) -> list[ExchangeOp]:
    """The plan's exchanges, children before parents, each once: the order every rank runs
    them in (the plan is the same on every rank)."""
    out: list[ExchangeOp] = []
    seen: set[Operator] = set()

    def visit(op: Operator) -> None:
        if op in seen:
            return
        seen.add(op)
        build = getattr(op, "build", None)  # a join's build side first: its runtime filters
        for c in sorted(op.children, key=lambda c: c is not build):  # are merged before the probe scans
            visit(c)
        if isinstance(op, ExchangeOp):
            out.append(op)

    visit(root)
    return out


def plan_fingerprint(root: Operator) -> str:
    """What must be the same on every rank: the exchanges in stage order with the runtime
    filters each merges (collectives), and the row groups each scan shares out (a rank with
    other files or another layout would read some rows twice and others never)."""
    lines = [f"{e.describe()} filters={len(e.publishes)}{' pipelined' if e.pipelined else ''}"
             for e in exchanges_in_order(root)]
    lines += sorted(str(getattr(o, "shared_from", "")) for o in root.walk() if getattr(o, "shared_from", None))
    return "\n".join(lines)


def run_exchanges(root: Operator, ctx) -> None:
    """Run every exchange stage of the plan (see the module docstring); a pipelined exchange is
    set up to run as it is pulled (before any stage: a stage's first collective drains it)."""
    order = exchanges_in_order(root)
    for i, ex in enumerate(order):
        if ex.pipelined:
            ctx.run(ex).result = PipelinedReceive(ex, ctx, order[i + 1:])
    for ex in order:
        if not ex.pipelined:
            ex.run_stage(ctx)


@dataclass(eq=False)
class OffRankOp(Operator):
    """Rows that live on rank 0 only (a gathered result, a CSV file read there): on every other
    rank this stands in for the operator and yields nothing. Its exchanges still run as
    stages (the driver walks through it)."""

    child: Operator
    label = "OffRank"

    def __post_init__(self):
        self.children = (self.child,)
        self.state_estimate = None

    def start(self, ctx) -> None:  # nothing of the child is read on this rank
        pass

    def describe(self) -> str:
        return "(on rank 0 only)"

    def execute(self, ctx) -> Iterator[Chunk]:
        return iter(())


def rank_summary(root: Operator, ctx) -> dict:
    """What this rank did, for ``--analyze`` on rank 0 (plain data, gathered once at the end):
    rows scanned and bytes read, peak memory, and each exchange's rows and bytes per
    destination, rounds and network time (plan order)."""
    scans = [o for o in root.walk() if isinstance(o, ScanOp)]
    ex = []
    for e in exchanges_in_order(root):
        st = ctx.runs[e].exchange if e in ctx.runs else None
        if st is not None:
            ex.append({"op": e.describe(), "rows_sent": st.rows_sent, "rows_to": list(st.rows_to),
                       "bytes_sent": list(st.bytes_sent), "rows_received": st.rows_received,
                       "bytes_received": st.bytes_received, "rounds": st.rounds, "network_s": st.network_s,
                       "partition_s": st.partition_s, "input_s": st.input_s, "stage_s": st.stage_s,
                       "bytes_raw": st.bytes_raw, "codec": st.codec.summary() if st.codec else "tensor"})
    runs = [r for r in (ctx.runs.get(o) for o in scans) if r is not None]
    # the timeline too, where reads are measured (--analyze, --trace, --plot): a merged trace
    events = [tuple(vars(e).values()) for e in ctx.recorder.events] if ctx.config.measure_reads else None
    return {"wall0": ctx.recorder.wall0, "events": events,
            "rows_scanned": sum(r.stats.rows for r in runs if r.stats is not None),
            "bytes_read": sum(r.reader.stats.bytes_read for r in runs if r.reader is not None),
            "peak_memory": ctx.memory.peak, "exchanges": ex, "wall_s": ctx.recorder.wall}
