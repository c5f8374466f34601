"""The exchange's round loop: one rank's input split by destination, packed for the wire and
sent in rounds over ``all_to_all_single``; what each round brings handed back (PystachIO §3.3).

A round goes out once the bytes buffered for one destination reach ``exchange_batch_bytes``
(a batch per destination: smaller messages fall below the network's bandwidth, PystachIO Fig.
7) or all destinations together reach :func:`round_cap`. Rows for this rank skip the wire. A
rank whose input is exhausted keeps taking part in rounds until every rank's flag is down.

No round waits on a header of its own. A receiver must know how many bytes each sender sends
before it posts the transfer, so each round's message to a destination starts with a fixed
prefix (:data:`PREFIX`: host bytes, device bytes and the "more to come" flag) describing the
*next* round's message: the sender packs batch k+1 before round k goes (batches are packed one
round ahead), and a rank issues round k+1 as soon as round k has landed. Only the first round's
sizes travel alone, in a small all-to-all posted asynchronously while batch 1 is packed. A rank
is thus held back only by round k-1 of its peers while it packs, not by their round k: the
round trip of a header per round and the lock-step it forced are gone.

Variants (``exchange``): ``deferred`` receives round k only after batch k+1 is packed (the
transfer flies meanwhile); ``chunked`` waits on each round at once; ``blocking`` (the baseline)
buffers its whole input before one round.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

import numpy as np
import torch
import torch.distributed as dist

from sluice.adapt.spill_codec import SpillCodec
from sluice.arrow import page_to_batch
from sluice.chunk import Chunk, Column
from sluice.exec.materialize import PARTITION_BITS
from sluice.expr.evaluate import evaluate
from sluice.kernels.hash import hash_columns
from sluice.ranks import liveness
from sluice.ranks.tensor_wire import Packed, pack, unpack
from sluice.ranks.wire import bytes_to_chunks, framed
from sluice.types import INT64

#: Rounds per measurement window of the wire's compression: an exchange has a few to tens of rounds
#: (a round holds at least one chunk), not the hundreds of pages a spill writes.
WIRE_WINDOW = 1

#: int64s heading each round's message to a destination: the next round's host bytes, device
#: bytes and "more to come" flag from this sender
PREFIX = 3
PREFIX_BYTES = PREFIX * 8

#: Rounds whose batch starts small (slow start, ``deferred`` and ``chunked``): round k's batch is
#: ``exchange_batch_bytes >> (SLOW_START - k)``, the full batch from round SLOW_START on. Nothing
#: crosses the link while the first batch is packed, and nothing is consumed before it lands:
#: at 4 MiB a destination and 2 ranks, TPC-H SF 1's lineitem went in 4 rounds, the first a
#: quarter of the scan with the link idle (bench/results/2026-12-08-exchange-pipelined-netns-2core-cpu.md).
SLOW_START = 3
#: The smallest slow-start batch: below it a message falls far below the link's rate.
SLOW_START_MIN = 64 << 10


def sliced(chunks: Iterator[Chunk], max_bytes) -> Iterator[Chunk]:
    """``chunks`` in slices of at most about ``max_bytes`` (:attr:`Chunk.nbytes`; a callable: the
    limit when each chunk is pulled): a 1 M-row chunk of strings is tens of MiB, and each of its
    copies on the way to the wire (the parts per destination, the joined send buffer, the
    receive buffer) is held outside the budget's spilling -- sliced, a round holds what its cap
    says."""
    limit = max_bytes if callable(max_bytes) else (lambda: max_bytes)
    for chunk in chunks:
        max_bytes = limit()
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


def batch_limits(batch_bytes: int, cap: int, filled: int, variant: str) -> tuple[int, int]:
    """Batch ``filled``'s (bytes for one destination, bytes for all destinations): smaller for
    the first :data:`SLOW_START` rounds (slow start), so the link and the consumer start early;
    ``blocking`` sends its whole input in one round."""
    shift = max(0, SLOW_START - filled) if variant != "blocking" else 0
    batch = max(min(batch_bytes, SLOW_START_MIN), batch_bytes >> shift)
    return batch, max(batch, cap >> shift)


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


def hash_rows(page: Chunk) -> torch.Tensor:
    """How a materializer of received rows partitions them when it spills: by their values (any
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


class _Batch:
    """One round's input, packed per destination (and this rank's own rows, pipelined)."""

    def __init__(self, world: int, level: int) -> None:
        self.pending: list[list] = [[] for _ in range(world)]
        self.to_dest = [0] * world  # bytes buffered for each destination
        self.held = self.dheld = 0  # host and device bytes packed
        self.mine: list = []  # pipelined: this rank's rows for itself, handed on with the round
        self.mine_bytes = 0
        self.raw, self.pack_s, self.level = 0, 0.0, level
        self.more = False  # the sender's input goes on after this batch

    def sizes(self) -> list[int]:
        return [sum(w.host.nbytes for w in p) for p in self.pending]

    def dsizes(self) -> list[int]:
        return [sum(w.device_bytes for w in p) for p in self.pending]

    def header(self) -> np.ndarray:
        """What heads the round before this batch's, to each destination (:data:`PREFIX`)."""
        h = np.zeros((len(self.pending), PREFIX), dtype=np.int64)
        h[:, 0], h[:, 1], h[:, 2] = self.sizes(), self.dsizes(), int(self.more)
        return h


class _DeviceRound(NamedTuple):
    """A round's device bytes in flight over the data group (``exchange_wire=tensor``)."""

    work: object
    out: torch.Tensor
    send: torch.Tensor
    res: object
    recv_sizes: list


class _Round(NamedTuple):
    """One round's transfer in flight (or the first round's sizes alone: ``header``)."""

    work: object  # the async all_to_all_single of the host bytes
    out: torch.Tensor  # the receive buffer
    send: object  # the send buffer (kept alive until the transfer completes)
    issued: float
    res: object  # the wire buffers' reservation (None: the first sizes)
    recv_sizes: list  # host bytes from each rank, its prefix included
    device: _DeviceRound | None
    measured: tuple = (0, 0, 0.0)  # (codec level, raw bytes, packing s) of this round
    header: bool = False

    def free(self) -> None:
        if self.res is not None:
            self.res.free()
        if self.device is not None:
            self.device.res.free()


class Rounds:
    """One exchange's rounds on this rank (see the module docstring). ``op`` says where rows go
    (``_destinations``), what it publishes and its label; ``local(sender, page)`` takes this
    rank's rows for itself at once, or, where it is None (pipelined), they come with the round;
    ``before_collective()`` runs before each collective (a pipelined exchange earlier in stage
    order ends its rounds first, on every rank)."""

    def __init__(self, op, ctx, g, st: ExchangeStats, local, before_collective) -> None:
        self.op, self.ctx, self.g, self.st = op, ctx, g, st
        self.local, self.before_collective = local, before_collective
        self.variant = ctx.config.exchange
        self.batch_bytes = ctx.config.exchange_batch_bytes
        self.tensors = wire_of(ctx) == "tensor"
        self.loopback = ctx.config.exchange_loopback
        self.data_group = g.data_group(ctx.device) if self.tensors else None
        # The Arrow wire's compression, regulated like spilling's: packing time against the
        # time waited on the network (the tensor wire's bytes stay raw for NCCL).
        self.codec = st.codec = None if self.tensors else SpillCodec(ctx.config.exchange_compression,
                                                                      window=WIRE_WINDOW)
        self.cap = round_cap(self.batch_bytes, g.world, ctx.memory.limit)
        self.expect: np.ndarray | None = None  # (sender, PREFIX): what the next round brings
        self.header_s = 0.0
        self.filled = 0  # batches packed so far (slow start)

    def _limits(self) -> tuple[int, int]:
        return batch_limits(self.batch_bytes, self.cap, self.filled, self.variant)

    def run(self, source: Iterator[Chunk], cuts=None) -> Iterator[list[tuple[int, Chunk]]]:
        """Send ``source`` in rounds, yielding each round's received (sender, page)s once the
        next round's transfer is issued."""
        ctx, label = self.ctx, self.op.label
        self.res = ctx.memory.reservation(f"{label} send buffers")
        self.dres = ctx.state_pool.reservation(f"{label} send buffers") if self.tensors else None
        if self.variant != "blocking" and not self.tensors:  # a round of host bytes: about its cap
            source = sliced(source, lambda: self._limits()[1])
        self.cuts = cuts
        inflight = None
        try:
            cur = self._fill(source)
            self.before_collective()
            inflight = self._first_sizes(cur)
            while True:
                nxt = self._fill(source) if cur.more else self._empty()  # the last round flies meanwhile
                received, cur.mine = cur.mine, []
                if inflight is not None:  # its prefixes say what this round brings
                    got, inflight = inflight, None
                    received += self._receive(got)
                last = not self.expect[:, 2].any()  # no sender has more after this round
                self.before_collective()
                inflight = self._issue(cur, nxt)
                if self.variant != "deferred":
                    got, inflight = inflight, None
                    received += self._receive(got)
                if received:  # handed on while the round just issued flies
                    yield received
                if last:
                    break
                cur = nxt
            if inflight is not None:
                got, inflight = inflight, None
                yield self._receive(got)
        finally:
            if inflight is not None:  # an error between issuing a round and receiving it
                inflight.free()
            self.res.free()
            if self.dres is not None:
                self.dres.free()

    def _empty(self) -> _Batch:
        return _Batch(self.g.world, self.codec.level if self.codec else 0)

    def _fill(self, source: Iterator[Chunk]) -> _Batch:
        """The next batch: input pulled, split by destination and packed until one
        destination's batch or the round's cap is full (``blocking``: the whole input)."""
        ctx, st, op, world, rank = self.ctx, self.st, self.op, self.g.world, self.g.rank
        b = self._empty()
        batch_bytes, cap = self._limits()
        t0 = time.perf_counter()
        while True:
            ti = time.perf_counter()
            chunk = next(source, None)
            st.input_s += time.perf_counter() - ti
            t0 += time.perf_counter() - ti  # producing the input is not partitioning
            if chunk is None:
                break
            st.rows_sent += chunk.num_rows
            for slot in op.publishes:
                ctx.runtime_filter(slot.spec).add(evaluate(slot.key, chunk), chunk.num_rows)
            wire = None
            for d, part in op._destinations(chunk, world, self.cuts, rank):
                st.rows_to[d] += part.num_rows
                if d == rank and not self.loopback:  # rows for this rank skip the wire
                    if self.local is not None:
                        self.local(rank, part)
                    else:  # held until the round goes: a round's worth at most
                        b.mine.append((rank, part))
                        b.to_dest[d] += part.nbytes
                        b.mine_bytes += part.nbytes
                        self.res.force(part.nbytes)
                    continue
                if op.kind != "broadcast" or wire is None:
                    tp = time.perf_counter()
                    wire, nraw = _pack(part, self.tensors, ctx.config.page_dictionaries,
                                       self.codec.current() if self.codec else ("none", None))
                    b.pack_s += time.perf_counter() - tp
                b.raw += nraw
                b.pending[d].append(wire)
                b.held += wire.host.nbytes
                b.dheld += wire.device_bytes
                b.to_dest[d] += wire.host.nbytes + wire.device_bytes
                self.res.force(wire.host.nbytes)
                if self.dres is not None:
                    self.dres.force(wire.device_bytes)
            if self.variant != "blocking" and (max(b.to_dest) >= batch_bytes or b.held + b.dheld >= cap):
                b.more = True
                break
        st.partition_s += time.perf_counter() - t0
        self.filled += 1
        return b

    def _first_sizes(self, first: _Batch) -> _Round:
        """The first round's sizes from every rank, posted to fly while batch 1 is packed."""
        header = torch.from_numpy(first.header())
        out = torch.empty_like(header)
        t = time.perf_counter()
        work = dist.all_to_all_single(out, header, group=self.g.group, async_op=True)
        return _Round(work, out, header, t, None, [], None, header=True)

    def _issue(self, cur: _Batch, nxt: _Batch) -> _Round:
        """Round ``cur``'s transfer, each destination's part headed by ``nxt``'s sizes."""
        ctx, st, world, label = self.ctx, self.st, self.g.world, self.op.label
        sizes, dsizes = cur.sizes(), cur.dsizes()
        prefix = nxt.header()
        recv_sizes = [int(s) + PREFIX_BYTES for s in self.expect[:, 0]]
        recv_dsizes = [int(s) for s in self.expect[:, 1]]
        # The round's wire buffers (the joined send buffer, the receive buffer) count
        # against the budget until its rows are received.
        wire_res = ctx.memory.reservation(f"{label} wire buffers")
        wire_res.force(cur.held + sum(recv_sizes) + world * PREFIX_BYTES)
        parts = []
        for d in range(world):
            parts.append(prefix[d].view(np.uint8))
            parts += [w.host for w in cur.pending[d]]
        send = np.concatenate(parts)
        out = torch.empty(sum(recv_sizes), dtype=torch.uint8)
        t = time.perf_counter()
        work = dist.all_to_all_single(out, torch.from_numpy(send), recv_sizes, [s + PREFIX_BYTES for s in sizes],
                                      group=self.g.group, async_op=True)
        device = None
        if self.tensors:
            dwire_res = ctx.state_pool.reservation(f"{label} wire buffers")
            dwire_res.force(cur.dheld + sum(recv_dsizes))
            pieces = [p for d in range(world) for w in cur.pending[d] for p in w.pieces]
            dsend = torch.cat(pieces) if pieces else torch.zeros(0, dtype=torch.uint8, device=ctx.device)
            dout = torch.empty(sum(recv_dsizes), dtype=torch.uint8, device=ctx.device)
            dwork = dist.all_to_all_single(dout, dsend, recv_dsizes, dsizes, group=self.data_group, async_op=True)
            device = _DeviceRound(dwork, dout, dsend, dwire_res, recv_dsizes)
        for d in range(world):
            st.bytes_sent[d] += sizes[d] + dsizes[d]
        st.rounds += 1
        st.bytes_raw += cur.raw
        self.res.shrink(cur.held + cur.mine_bytes)
        if self.dres is not None:
            self.dres.shrink(cur.dheld)
        cur.pending = []
        return _Round(work, out, send, t, wire_res, recv_sizes, device, (cur.level, cur.raw, cur.pack_s))

    def _receive(self, rnd: _Round) -> list[tuple[int, Chunk]]:
        """Wait for a round and decode it: (sender, page) for each page received; the prefixes
        it brings become what the next round expects."""
        ctx, st, label = self.ctx, self.st, self.op.label
        t0 = time.perf_counter()
        with liveness.waiting():
            rnd.work.wait()
            if rnd.device is not None:  # on CUDA (NCCL) this orders the stream, the host goes on
                rnd.device.work.wait()
        t1 = time.perf_counter()
        st.network_s += t1 - t0
        if rnd.header:
            ctx.recorder.add("wait", t0, t1, 0, f"{label} counts")
            self.expect, self.header_s = rnd.out.numpy(), t1 - t0
            return []
        if self.codec is not None:  # the round: its packing time, and the time waited on its bytes
            level, raw, pack_s = rnd.measured
            self.codec.record(level, raw, pack_s, self.header_s + t1 - t0)
            self.header_s = 0.0
        nbytes = int(rnd.out.numel()) + (int(rnd.device.out.numel()) if rnd.device is not None else 0)
        sent = int(rnd.send.nbytes) + (int(rnd.device.send.numel()) if rnd.device is not None else 0)
        ctx.recorder.add("wait", t0, t1, 0, f"{label} transfer")  # this thread blocked on it
        ctx.recorder.add("network", rnd.issued, t1, nbytes + sent, label)
        st.bytes_received += nbytes
        out = []
        expect = np.zeros((len(rnd.recv_sizes), PREFIX), dtype=np.int64)
        try:
            buf = rnd.out.numpy()
            pos = dpos = 0
            for src, size in enumerate(rnd.recv_sizes):  # each sender's bytes in turn
                expect[src] = np.frombuffer(buf[pos:pos + PREFIX_BYTES].tobytes(), dtype=np.int64)
                body = rnd.out[pos + PREFIX_BYTES:pos + size]
                if rnd.device is None:
                    pages = bytes_to_chunks(body, ctx.device)
                else:
                    dsize = rnd.device.recv_sizes[src]
                    pages = unpack(body, rnd.device.out[dpos:dpos + dsize], ctx.device)
                    dpos += dsize
                pos += size
                for page in pages:
                    st.rows_received += page.num_rows
                    out.append((src, page))
        finally:
            rnd.free()
        self.expect = expect
        return out
