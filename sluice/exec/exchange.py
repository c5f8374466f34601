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

Sending is chunked: each input chunk is split by destination and serialised
(:mod:`sluice.ranks.wire`); once the bytes buffered for one destination reach
``exchange_batch_bytes`` (a few MiB: smaller messages fall below the network's bandwidth,
PystachIO Fig. 7 -- a batch per destination, so that 64 ranks do not send 64 KiB messages;
all destinations together at most :func:`round_cap`) a round goes out: the
per-destination byte counts (with a "more to come" flag) in one small all-to-all, then the
bytes in one ``all_to_all_single`` with split sizes. Rows for this rank skip the wire. A rank
whose input is exhausted keeps taking part in rounds until every rank's flag is down.

``exchange_wire`` picks how rows cross: ``arrow`` -- each part one Arrow IPC stream of host
bytes (:mod:`sluice.ranks.wire`) over gloo; ``tensor`` -- fixed-width columns as raw tensor
bytes over the data group (NCCL on CUDA: they stay on the GPU) and the rest as host bytes
(:mod:`sluice.ranks.tensor_wire`), two ``all_to_all_single`` per round. ``auto``: tensor on
CUDA when each local rank has a GPU of its own (NCCL refuses two ranks on one), else arrow.

``exchange`` picks the variant: ``deferred`` (default) issues round k's transfer
asynchronously and partitions the next batch while it flies, waiting on it only before the
next transfer; ``chunked`` waits on each transfer at once; ``blocking`` (the baseline)
buffers its whole input before one transfer.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

import numpy as np
import torch
import torch.distributed as dist

from sluice.adapt.spill_codec import SpillCodec
from sluice.arrow import page_to_batch
from sluice.chunk import Chunk, Column, concat_chunks
from sluice.errors import InternalError, SluiceError
from sluice.exec import range_partition
from sluice.exec.materialize import PARTITION_BITS, Materializer
from sluice.exec.ordered_pages import OrderedPages
from sluice.exec.operators import Operator, ScanOp
from sluice.expr.evaluate import evaluate
from sluice.kernels.hash import _srl, hash_columns
from sluice.ranks import liveness
from sluice.types import INT64
from sluice.ranks.tensor_wire import Packed, pack, unpack
from sluice.ranks.wire import bytes_to_chunks, chunk_to_bytes, framed

#: The exchange reads hash bits 16..31: spill partitioning reads the top bits, so rows an
#: exchange sends to one rank still spread over that rank's spill partitions.
_DEST_SHIFT = 16


#: Rounds per measurement window of the wire's compression: an exchange has a few to tens of rounds
#: (a round holds at least one chunk), not the hundreds of pages a spill writes.
WIRE_WINDOW = 1


def sliced(chunks: Iterator[Chunk], max_bytes: int) -> Iterator[Chunk]:
    """``chunks`` in slices of at most about ``max_bytes`` (:attr:`Chunk.nbytes`): a 1 M-row
    chunk of strings is tens of MiB, and each of its copies on the way to the wire (the parts
    per destination, the joined send buffer, the receive buffer) is held outside the budget's
    spilling -- sliced, a round holds what its cap says."""
    for chunk in chunks:
        nb, n = chunk.nbytes, chunk.num_rows
        if nb <= max_bytes or n <= 1:
            yield chunk
            continue
        step = max(1, n * max_bytes // nb)
        for start in range(0, n, step):
            yield chunk.slice(start, min(n, start + step))


def round_cap(batch_bytes: int, world: int, memory_limit: int) -> int:
    """Most bytes one round buffers for all destinations together: a batch for each other rank
    (a round goes out as soon as one destination's batch is full), but at most an eighth of the
    memory budget (at least one batch): at 64 ranks 63 batches of 4 MiB would be 252 MiB of
    send buffers, and as much received."""
    return max(batch_bytes, min(batch_bytes * max(1, world - 1), memory_limit // 8))


@dataclass
class ExchangeStats:
    """What one exchange moved on this rank."""

    rows_sent: int = 0
    rows_to: list = field(default_factory=list)  # rows to each rank, itself included (a row of the size matrix)
    bytes_sent: list = field(default_factory=list)  # serialised bytes to each other rank
    bytes_received: int = 0
    rows_received: int = 0
    rounds: int = 0
    bytes_raw: int = 0  # what was sent, before the wire's compression
    codec: SpillCodec | None = None  # the Arrow wire's compression policy (rounds per level)
    network_s: float = 0.0  # time waiting in collectives
    partition_s: float = 0.0  # splitting and serialising
    input_s: float = 0.0  # pulling the input from the child (its scan and operators)
    stage_s: float = 0.0  # the whole stage: producing the input, partitioning, moving, receiving


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
            mat = Materializer(ctx, f"{self.label} received", _hash_rows, stats=mstats)
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
        counts = torch.bincount(dest, minlength=world).tolist()
        order = torch.argsort(dest, stable=True)
        out, start = [], 0
        for d, c in enumerate(counts):
            if c:
                out.append((d, chunk.take(order[start:start + c])))
            start += c
        return out

    def _shuffle(self, ctx, g, st: ExchangeStats, local) -> Iterator[list[tuple[int, Chunk]]]:
        """Send this rank's input in rounds, yielding each round's received pages (with their
        sender) once the next round's transfer is issued. Rows for this rank go to ``local``
        (sender, page) at once, or, where it is None (pipelined), with the round's pages."""
        world, rank = g.world, g.rank
        variant = ctx.config.exchange
        batch_bytes = ctx.config.exchange_batch_bytes
        tensors = wire_of(ctx) == "tensor"
        loopback = ctx.config.exchange_loopback
        data_group = g.data_group(ctx.device) if tensors else None
        res = ctx.memory.reservation(f"{self.label} send buffers")
        dres = ctx.state_pool.reservation(f"{self.label} send buffers") if tensors else None
        pending: list[list] = [[] for _ in range(world)]
        held = dheld = 0
        # The Arrow wire's compression, regulated like spilling's: packing time against the
        # time waited on the network (the tensor wire's bytes stay raw for NCCL).
        codec = st.codec = None if tensors else SpillCodec(ctx.config.exchange_compression, window=WIRE_WINDOW)
        level, raw, pack_s = (codec.level if codec else 0), 0, 0.0
        to_dest = [0] * world  # bytes buffered for each destination this round
        cap = round_cap(batch_bytes, world, ctx.memory.limit)
        inflight = None
        cuts = None
        if self.kind == "range":
            source, cuts = self._ranged_input(ctx, g, st)
        else:
            source = iter(self.child.stream(ctx))
        if variant != "blocking" and not tensors:  # a round of host bytes: about its cap, not a whole chunk
            source = sliced(source, cap)
        local_done = False
        mine: list = []  # pipelined: this rank's rows for itself, handed on with the round
        mine_bytes = 0
        try:
            while True:
                t0 = time.perf_counter()
                while not local_done:
                    ti = time.perf_counter()
                    chunk = next(source, None)
                    st.input_s += time.perf_counter() - ti
                    t0 += time.perf_counter() - ti  # producing the input is not partitioning
                    if chunk is None:
                        local_done = True
                        break
                    st.rows_sent += chunk.num_rows
                    for slot in self.publishes:
                        ctx.runtime_filter(slot.spec).add(evaluate(slot.key, chunk), chunk.num_rows)
                    wire = None
                    for d, part in self._destinations(chunk, world, cuts, rank):
                        st.rows_to[d] += part.num_rows
                        if d == rank and not loopback:  # rows for this rank skip the wire
                            if local is not None:
                                local(rank, part)
                            else:  # held until the round goes: a round's worth at most
                                mine.append((rank, part))
                                to_dest[d] += part.nbytes
                                mine_bytes += part.nbytes
                                res.force(part.nbytes)
                            continue
                        if self.kind != "broadcast" or wire is None:
                            tp = time.perf_counter()
                            wire, nraw = _pack(part, tensors, ctx.config.page_dictionaries,
                                               codec.current() if codec else ("none", None))
                            pack_s += time.perf_counter() - tp
                        raw += nraw
                        pending[d].append(wire)
                        held += wire.host.nbytes
                        dheld += wire.device_bytes
                        to_dest[d] += wire.host.nbytes + wire.device_bytes
                        res.force(wire.host.nbytes)
                        if dres is not None:
                            dres.force(wire.device_bytes)
                    if variant != "blocking" and (max(to_dest) >= batch_bytes or held + dheld >= cap):
                        break
                st.partition_s += time.perf_counter() - t0
                sizes = [sum(w.host.nbytes for w in pending[d]) for d in range(world)]
                dsizes = [sum(w.device_bytes for w in pending[d]) for d in range(world)]
                header = torch.tensor([[s, ds, 0 if local_done else 1] for s, ds in zip(sizes, dsizes)],
                                      dtype=torch.int64)
                got = torch.empty_like(header)
                drain_pipelined(ctx, keep=True, before=self)  # its rounds end first on every rank
                t1 = time.perf_counter()
                _all_to_all(got, header, g.group)
                t_header = time.perf_counter()
                st.network_s += t_header - t1
                ctx.recorder.add("wait", t1, t_header, 0, f"{self.label} counts")
                received = mine
                mine = []
                if inflight is not None:  # deferred: the previous transfer flew meanwhile
                    received += self._receive(ctx, inflight, st)
                    inflight = None
                recv_sizes, recv_dsizes = got[:, 0].tolist(), got[:, 1].tolist()
                # The round's wire buffers (the joined send buffer, the receive buffer) count
                # against the budget until its rows are received.
                wire_res = ctx.memory.reservation(f"{self.label} wire buffers")
                wire_res.force(held + sum(recv_sizes))
                dwire_res = None
                send = np.concatenate([w.host for d in range(world) for w in pending[d]]) if held else \
                    np.zeros(0, dtype=np.uint8)
                out = torch.empty(sum(recv_sizes), dtype=torch.uint8)
                t2 = time.perf_counter()
                work = _all_to_all(out, torch.from_numpy(send), g.group, recv_sizes, sizes, async_op=True)
                dwork = dsend = dout = None
                if tensors:
                    dwire_res = ctx.state_pool.reservation(f"{self.label} wire buffers")
                    dwire_res.force(dheld + sum(recv_dsizes))
                    pieces = [p for d in range(world) for w in pending[d] for p in w.pieces]
                    dsend = torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.uint8, device=ctx.device)
                    dout = torch.empty(sum(recv_dsizes), dtype=torch.uint8, device=ctx.device)
                    dwork = _all_to_all(dout, dsend, data_group, recv_dsizes, dsizes, async_op=True)
                for d in range(world):
                    st.bytes_sent[d] += sizes[d] + dsizes[d]
                st.rounds += 1
                inflight = _Round(work, out, send, t2, wire_res, recv_sizes,
                                  _DeviceRound(dwork, dout, dsend, dwire_res, recv_dsizes) if tensors else None,
                                  (level, raw, pack_s, t_header - t1))
                st.bytes_raw += raw
                level, raw, pack_s = (codec.level if codec else 0), 0, 0.0
                pending = [[] for _ in range(world)]
                res.shrink(held + mine_bytes)
                mine_bytes = 0
                if dres is not None:
                    dres.shrink(dheld)
                held = dheld = 0
                to_dest = [0] * world
                if variant != "deferred":
                    received += self._receive(ctx, inflight, st)
                    inflight = None
                if received:  # handed on while the round just issued flies
                    yield received
                more = bool(got[:, 2].any()) or not local_done
                if not more:
                    break
            if inflight is not None:
                pending_round, inflight = inflight, None
                yield self._receive(ctx, pending_round, st)
        finally:
            if inflight is not None:  # an error between issuing a round and receiving it
                inflight.free()
            res.free()
            if dres is not None:
                dres.free()

    def _receive(self, ctx, rnd: "_Round", st: ExchangeStats) -> list[tuple[int, Chunk]]:
        """Wait for a round's transfer and decode it: (sender, page) for each page received."""
        t0 = time.perf_counter()
        with liveness.waiting():
            rnd.work.wait()
            if rnd.device is not None:  # on CUDA (NCCL) this orders the stream, the host goes on
                rnd.device.work.wait()
        t1 = time.perf_counter()
        st.network_s += t1 - t0
        if st.codec is not None:  # the round: its packing time, and the time waited on its bytes
            level, raw, pack_s, header_s = rnd.measured
            st.codec.record(level, raw, pack_s, header_s + t1 - t0)
        nbytes = int(rnd.out.numel()) + (int(rnd.device.out.numel()) if rnd.device is not None else 0)
        sent = int(rnd.send.nbytes) + (int(rnd.device.send.numel()) if rnd.device is not None else 0)
        ctx.recorder.add("wait", t0, t1, 0, f"{self.label} transfer")  # this thread blocked on it
        ctx.recorder.add("network", rnd.issued, t1, nbytes + sent, self.label)
        st.bytes_received += nbytes
        out = []
        try:
            pos = dpos = 0
            for src, size in enumerate(rnd.recv_sizes):  # each sender's bytes in turn
                if rnd.device is None:
                    pages = bytes_to_chunks(rnd.out[pos:pos + size], ctx.device)
                else:
                    dsize = rnd.device.recv_sizes[src]
                    pages = unpack(rnd.out[pos:pos + size], rnd.device.out[dpos:dpos + dsize], ctx.device)
                    dpos += dsize
                pos += size
                for page in pages:
                    st.rows_received += page.num_rows
                    out.append((src, page))
        finally:
            rnd.free()
        return out


    def _ranged_input(self, ctx, g, st: ExchangeStats):
        """Kind ``range``: this rank's input held (spillable) while its keys are sampled, the
        samples shared, the splitters taken (the same on every rank); then the held rows as the
        input to send (:mod:`sluice.exec.range_partition`)."""
        held = Materializer(ctx, f"{self.label} input", _hash_rows, stats=ctx.memory_stats(self))
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


def _hash_rows(page: Chunk) -> torch.Tensor:
    """How a materializer of whole rows partitions them when it spills: by their values (any
    split serves -- its reader takes every partition -- so nested values, which have no hash,
    are left out, and rows of nested columns only split by position). A page with nested
    columns goes whole to one partition at the first level (the top bits are its first row's):
    rows sharing a list (a window's per partition) split 64 ways wrote the list once per piece
    -- 40 GB of spill for an ordered LIST over a million events on 2 ranks; deeper levels split
    it by rows as before."""
    cols = [c for c in page.columns.values() if not c.type.is_nested]
    if not cols:
        h = hash_columns([Column(torch.arange(page.num_rows, device=page.device), INT64)], page.num_rows)
    else:
        h = hash_columns(cols, page.num_rows)
    if len(cols) < len(page.columns) and page.num_rows:
        top = -(1 << (64 - PARTITION_BITS))  # the top PARTITION_BITS bits (level 0's partition)
        h = (h & ~top) | (h[:1] & top)
    return h


def _store(mat, source: int, page: Chunk) -> None:
    """Hold a received page: in its sender's order for an ordered gather."""
    if isinstance(mat, OrderedPages):
        mat.add(source, page)
    else:
        mat.add(page)


def wire_of(ctx) -> str:
    """How rows cross: ``tensor`` (fixed-width columns as raw tensor bytes over the data group:
    NCCL on CUDA) or ``arrow`` (every column in one Arrow IPC stream of host bytes)."""
    w = ctx.config.exchange_wire
    if w == "auto":  # NCCL needs a GPU of its own per rank: ranks sharing one use gloo
        shared = int(os.environ.get("LOCAL_WORLD_SIZE", "1")) > torch.cuda.device_count()
        return "tensor" if ctx.device.type == "cuda" and not shared else "arrow"
    return w


def _pack(part: Chunk, tensors: bool, dictionaries: bool, codec=("none", None)):
    """``part`` for the wire, and its bytes before compression (``codec``: the Arrow wire's)."""
    if tensors:
        packed = pack(part, dictionaries)
        return packed, packed.host.nbytes + packed.device_bytes
    batch = page_to_batch(part, dictionaries)
    return Packed(framed(batch, codec), [], 0), batch.nbytes


class _DeviceRound(NamedTuple):
    """A round's device bytes in flight over the data group (``exchange_wire=tensor``)."""

    work: object
    out: torch.Tensor
    send: torch.Tensor
    res: object
    recv_sizes: list


class _Round(NamedTuple):
    """One round's transfer in flight: its collective, buffers, issue time and reservation."""

    work: object  # the async all_to_all_single of the host bytes
    out: torch.Tensor  # the receive buffer
    send: np.ndarray  # the send buffer (kept alive until the transfer completes)
    issued: float
    res: object  # the wire buffers' reservation
    recv_sizes: list  # host bytes from each rank
    device: _DeviceRound | None
    measured: tuple = (0, 0, 0.0, 0.0)  # (codec level, raw bytes, packing s, header wait s) of this round

    def free(self) -> None:
        self.res.free()
        if self.device is not None:
            self.device.res.free()


def _all_to_all(out, inp, group, out_splits=None, in_splits=None, async_op: bool = False):
    if async_op:
        return dist.all_to_all_single(out, inp, out_splits, in_splits, group=group, async_op=True)
    with liveness.waiting():
        return dist.all_to_all_single(out, inp, out_splits, in_splits, group=group)


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


class PipelinedReceive:
    """The receive side of a pipelined exchange: its rounds run as its consumer pulls
    (:meth:`pages`), one round's pages handed on while the next round flies -- at most that
    round's pages wait, counted against the budget. :meth:`drain` runs the rounds left (every
    rank must take part in each); their rows are kept in a Materializer for a consumer that may
    still read them, or dropped once the result is complete."""

    def __init__(self, op: ExchangeOp, ctx, later: list) -> None:
        if op.ordered or op.publishes:  # an ordered gather holds senders apart; filters merge at a stage's end
            raise InternalError(f"{op.describe()} cannot be pipelined")
        g = ctx.dist
        self.op, self.ctx = op, ctx
        #: the exchanges after it in stage order: their collectives come after all its rounds
        #: (those before it have run to their end before it starts: its input may read them)
        self.later = set(later)
        self.stats = ctx.run(op).exchange = ExchangeStats(rows_to=[0] * g.world, bytes_sent=[0] * g.world)
        self.mat = Materializer(ctx, f"{op.label} received", _hash_rows, stats=ctx.memory_stats(op))
        self.res = ctx.memory.reservation(f"{op.label} received, not yet consumed")
        self.queue: deque = deque()
        self.rounds = op._shuffle(ctx, g, self.stats, None)  # starts on the first pull or drain
        self.started: float | None = None
        self.done = False

    def _step(self) -> list | None:
        """The next round's (sender, page)s, or None once every rank's rounds are over."""
        if self.done:
            return None
        if self.started is None:
            self.started = time.perf_counter()
        try:
            got = next(self.rounds, None)
        except SluiceError:
            raise
        except RuntimeError as e:  # a collective failed: a peer died, hung or aborted
            raise self.ctx.dist.fail(e) from None
        if got is None:
            self.done = True
            self.mat.finish()
            self.stats.stage_s = time.perf_counter() - self.started
        return got

    def pages(self) -> Iterator[Chunk]:
        """The received pages for the consumer: round by round, then any a drain kept."""
        while True:
            if self.queue:
                page = self.queue.popleft()
                self.res.shrink(page.nbytes)
                yield page
                continue
            got = self._step()
            if got is None:
                break
            for _, page in got:
                if page.num_rows:
                    self.res.force(page.nbytes)
                    self.queue.append(page)
        for part in self.mat.partitions():
            yield from part.stream()
            self.mat.release(part.index)

    def drain(self, keep: bool) -> None:
        """Run the rounds left to their end: their pages kept for the consumer (``keep``), or
        dropped with any still waiting (the result is complete)."""
        while (got := self._step()) is not None:
            if keep:
                for _, page in got:
                    self.mat.add(page)
        if not keep:
            self.queue.clear()
            self.res.free()

    def close(self) -> None:
        self.rounds.close()  # an in-flight round's buffers are released
        self.queue.clear()
        self.res.free()
        self.mat.close()


def _pipelined(ctx) -> list[PipelinedReceive]:
    return [r.result for r in list(ctx.runs.values()) if isinstance(r.result, PipelinedReceive)]


def drain_pipelined(ctx, keep: bool, before: ExchangeOp | None = None) -> None:
    """Before a collective of exchange ``before`` (None: the end of the run): a pipelined
    exchange earlier in stage order runs its rounds to their end on this rank (as on every
    other), kept for its consumer (``keep``) or dropped."""
    for p in _pipelined(ctx):
        if before is None or before in p.later:
            p.drain(keep)


def close_pipelined(ctx) -> None:
    """Release what a pipelined exchange holds (on success, error or interrupt)."""
    for p in _pipelined(ctx):
        p.close()


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
