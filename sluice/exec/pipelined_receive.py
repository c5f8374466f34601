"""The receive side of a pipelined exchange (``exchange_receive=pipelined``, PystachIO §3.3):
its rounds run as its consumer pulls, each round's rows handed on while the next round flies,
so the consumer probes or aggregates them meanwhile. Every rank must still take part in every
round, whatever its consumer did: before any other collective the rounds left are run to their
end (:func:`drain_pipelined`). Kept apart from :mod:`sluice.exec.exchange` (which sets it up)
so the stage side and the streaming side each read on their own; it drives the exchange's
rounds through the operator it is handed and imports nothing of it.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Iterator

from sluice.chunk import Chunk
from sluice.errors import InternalError, SluiceError
from sluice.exec.exchange_rounds import ExchangeStats, hash_rows
from sluice.exec.materialize import Materializer


class PipelinedReceive:
    """The receive side of a pipelined exchange: its rounds run as its consumer pulls
    (:meth:`pages`), one round's pages handed on while the next round flies -- at most that
    round's pages wait, counted against the budget. :meth:`drain` runs the rounds left (every
    rank must take part in each); their rows are kept in a Materializer for a consumer that may
    still read them, or dropped once the result is complete."""

    def __init__(self, op, ctx, later: list) -> None:
        if op.ordered or op.publishes:  # an ordered gather holds senders apart; filters merge at a stage's end
            raise InternalError(f"{op.describe()} cannot be pipelined")
        g = ctx.dist
        self.op, self.ctx = op, ctx
        #: the exchanges after it in stage order: their collectives come after all its rounds
        #: (those before it have run to their end before it starts: its input may read them)
        self.later = set(later)
        self.stats = ctx.run(op).exchange = ExchangeStats(rows_to=[0] * g.world, bytes_sent=[0] * g.world)
        self.mat = Materializer(ctx, f"{op.label} received", hash_rows, stats=ctx.memory_stats(op))
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


def drain_pipelined(ctx, keep: bool, before=None) -> None:
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

