"""Hash aggregation over paged partial states, spilling when memory runs out (Umami §4.6).

::

    chunk --partial--> page [keys | states] --> Materializer (pages; partitioned and spilled
                                                 by the keys' value hash when memory asks)
    DISTINCT x:  chunk --dedupe--> page [keys | x] --> one Materializer per argument

1. Per input chunk: group ids of the keys, each accumulator (:mod:`sluice.exec.aggregates`)
   reduces its argument to a state per group: one page. DISTINCT arguments instead add a
   page of the chunk's distinct (keys, value) pairs.
2. Pages accumulate in a :class:`~sluice.exec.materialize.Materializer`. While unmerged pages
   hold more rows than twice the last merge left (and merging still reduces them), the
   held pages are merged -- per partition once partitioned -- so memory follows the number of
   groups, at amortised linear cost.
3. DISTINCT: each partition of (keys, value) pairs is deduplicated, reduced to states of its
   groups and added as pages to the main materializer (other states at their identity).
4. End: if nothing spilled, every page is merged at once and finalised (the fast in-memory
   algorithm); otherwise partition by partition, in-memory ones first, spilled ones read back,
   a partition still too big split again on the next hash bits.

Phases (so an exchange can sit between them, on several ranks): ``single`` does all of the
above; ``partial`` stops before finalising and emits its merged pages (keys and states: a
global aggregate always emits one page, an identity page for no rows); ``final`` takes such
pages as its input, merges and finalises them. DISTINCT aggregates without keys may run
``partial`` too, where the input is hash-partitioned by their argument (equal values on one
rank, so each rank's states are over disjoint sets of distinct values and merge exactly: a
sum of per-rank distinct counts is the distinct count); their ``final`` merges states as any.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterator

import torch

from sluice.chunk import Chunk, Column, computable, concat_chunks, used_strings
from sluice.exec.aggregate_functions import make_accumulator, registered, result
from sluice.exec.aggregates import Accumulator, StringMinMaxAcc, count_by
from sluice.expr.evaluate import evaluate
from sluice.kernels.buffers import lookup, positions
from sluice.kernels.encode import PARALLEL_MIN, count_distinct_strings, piece_hashes, unique_strings
from sluice.kernels.parallel import compute_pool
from sluice.kernels.hash import hash_columns
from sluice.kernels.keys import GroupingState, first_rows, group_ids
from sluice.exec.materialize import Materializer
from sluice.exec.operators import Operator
from sluice.expr.nodes import Expr
from sluice.plan.logical import AggCall
from sluice.types import INT64 as _INT64

#: Merging held pages needs room for about this many times their bytes (concat + states).
MERGE_FACTOR = 3
#: Held pages are merged once they exceed this many rows and twice the rows of the last merge,
#: or once this many pages arrived (small groups from many small chunks).
COMPACT_MIN_ROWS = 1 << 18
COMPACT_PAGES = 256
#: If grouping the first chunk leaves more than this share of its rows, later chunks are not
#: grouped on their own (their rows pass through to the merge at the end).
PASSTHROUGH_RATIO = 0.5


@dataclass(eq=False)
class HashAggregateOp(Operator):
    child: Operator
    keys: tuple[tuple[str, Expr], ...]
    aggs: tuple[tuple[str, AggCall], ...]
    phase: str = "single"  # "single" | "partial" | "final" (see the module docstring)
    minmax_bound: object = None  # MinMaxBoundSpec shared with the scan below (physical.minmax_bounds)
    #: ``partial`` without keys: the names of the aggregates this one computes (the others'
    #: states left at their identity), None for all. Several DISTINCT arguments run as one
    #: such partial per argument, each over rows hash-partitioned by its argument, their pages
    #: merged by one ``final`` over the same aggregates.
    computed: frozenset | None = None
    #: per key, its (lo, hi) from the scan's statistics or None (physical.key_ranges): grouping
    #: then reads no range back from the device
    key_ranges: tuple | None = None
    #: groups enough for a LIMIT above with no ORDER BY (``SELECT DISTINCT x ... LIMIT 10``, set at
    #: lowering): a single aggregate without aggregate functions stops reading its input once it
    #: holds this many (any of them answer the query), as DuckDB's does
    enough_groups: int | None = None
    label = "HashAggregate"

    def __post_init__(self):
        self.children = (self.child,)
        self.key_names = [n for n, _ in self.keys]
        # One accumulator per (function kind, argument, distinct): SUM(x) and AVG(x) share.
        self.accs: dict[tuple, Accumulator] = {}
        self.outputs: list[tuple[str, tuple, str]] = []
        for name, call in self.aggs:
            key = (registered(call.func).state, call.arg, call.distinct)
            if key not in self.accs:
                arg_type = call.arg.type if call.arg is not None else None
                self.accs[key] = make_accumulator(f"a{len(self.accs)}", call.func, arg_type)
            self.outputs.append((name, key, call.func))
        #: accumulators left at their identity (not :attr:`computed`)
        self.skipped = {key for name, key, _ in self.outputs if self.computed is not None and name not in self.computed}
        self.distinct_args = sorted({k[1] for k in self.accs if k[2] and k not in self.skipped}, key=str)
        if self.phase not in ("single", "partial", "final"):
            raise ValueError(f"aggregation phase {self.phase!r}")
        if self.phase == "final":  # states arrive merged-ready: nothing to deduplicate
            self.distinct_args = []
        if self.phase == "partial" and self.distinct_args and (self.keys or len(self.distinct_args) > 1):
            raise ValueError("DISTINCT aggregates run partial only without keys, over one argument")
        if self.computed is not None and (self.phase != "partial" or self.keys):
            raise ValueError("only a partial aggregate without keys computes some of its aggregates")
        if self.phase != "single":
            self.label = f"HashAggregate({self.phase})"

    def describe(self):
        aggs = [a for n, a in self.aggs if self.computed is None or n in self.computed]
        return (f"{self.label} keys=[" + ", ".join(str(e) for _, e in self.keys) + "] aggs=[" +
                ", ".join(str(a) for a in aggs) + "]" + (" (others at identity)" if self.skipped else ""))

    # ---------------------------------------------------------------- run

    def _hash(self, names: list[str]):
        return lambda page: hash_columns([page.columns[k] for k in names], page.num_rows)

    def execute(self, ctx):
        dev = ctx.device
        for acc in self.accs.values():
            if isinstance(acc, StringMinMaxAcc):
                # a CPU only: unmeasured on a GPU, where it adds host syncs per chunk
                acc.first_byte = dev.type == "cpu" and ctx.config.on("minmax_first_byte")
        stats = ctx.memory_stats(self)
        main = Materializer(ctx, self.label, self._hash(self.key_names), stats=stats, combine=self._merge_pages)
        # COUNT(DISTINCT string) alone, no keys: its values are only counted, partition by
        # partition (count_distinct_strings); they are spread by a cheap hash of a few of their
        # bytes, not every byte (hash_columns: SF 10 l_comment under a 2 GiB budget hashed
        # 60 M strings word by word as its pages were partitioned).
        counted = {arg: ctx.config.on("distinct_counts") and self._counts_strings(arg) for arg in self.distinct_args}
        dmats = {arg: Materializer(ctx, f"{self.label} DISTINCT",
                                   _piece_hash if counted[arg] else self._hash(self.key_names + ["__x"]),
                                   stats=stats, combine=self._dedupe_pages,
                                   compact=_unique_values if counted[arg] else None) for arg in self.distinct_args}
        mats = [main, *dmats.values()]
        try:
            unmerged, last_merged, rows_seen, compacting, pages = 0, 0, 0, True, 0
            passthrough = False
            raw: set = set()  # DISTINCT arguments whose (keys, value) pairs pass through undeduplicated
            grouping = GroupingState()
            enough = self.enough_groups if self.phase == "single" and not self.aggs else None
            for chunk in self.child.stream(ctx):
                grouped = not passthrough  # this chunk's page holds each of its groups once
                if self.phase == "final":  # partial states; one chunk may hold a group twice
                    page, dpages = self._merge_rows(chunk), {}
                else:
                    page, dpages = self._partial(chunk, dev, passthrough, grouping, raw)
                    if rows_seen == 0:
                        # Pairs nearly all distinct (count(distinct l_comment): 87 % of a
                        # chunk's): deduplicating each chunk hashed every string twice, once
                        # here and once in the final pass that must dedupe them anyway.
                        raw.update(a for a, dp in dpages.items() if dp.num_rows > PASSTHROUGH_RATIO * chunk.num_rows)
                bound = ctx.bounds.get(self.minmax_bound) if self.minmax_bound is not None else None
                if bound is not None and not passthrough:  # the scan below skips what it rules out
                    bound.observe(page, self.key_names, self.accs)
                if rows_seen == 0 and self.keys and self.phase != "final" and \
                        page.num_rows > PASSTHROUGH_RATIO * chunk.num_rows:
                    # Nearly every row its own group (l_comment, keys unique per chunk): grouping
                    # each chunk costs a hash of every key and saves nothing; later chunks pass
                    # their rows through, grouped once at the end (adaptive pre-aggregation).
                    passthrough = True
                main.add(page)
                for arg, dp in dpages.items():
                    dmats[arg].add(dp)
                unmerged += page.num_rows
                pages += 1
                rows_seen += chunk.num_rows
                if compacting and (unmerged > max(COMPACT_MIN_ROWS, 2 * last_merged) or pages > COMPACT_PAGES):
                    pages = 0
                    before = _held_rows(main)
                    main.compact_partitions(self._merge_pages)
                    unmerged, last_merged = 0, _held_rows(main)
                    # Keys that do not repeat across chunks (input ordered by them): merging
                    # gains nothing; the pages are merged once at the end (or spilled).
                    compacting = last_merged < 0.9 * before
                if enough is not None:
                    # Enough distinct groups held: one grouped page alone, or the unpartitioned
                    # pages merged (each key once; merged again only once the rows added since
                    # could make up the difference and double what is known: linear in all).
                    # Partitioned pages are not counted: a key may sit in two of them.
                    if grouped and page.num_rows >= enough:
                        break
                    if main.parts is None and unmerged >= max(enough - last_merged, last_merged, 1):
                        main.compact_partitions(self._merge_pages)
                        unmerged, last_merged = 0, _held_rows(main)
                        if main.parts is None and last_merged >= enough:
                            break
            if rows_seen == 0 and self.keys:
                return
            for arg, dm in dmats.items():
                dm.finish()
                if counted[arg]:
                    main.add(self._count_page(arg, self._count_distinct(dm.partitions()), dev))
                    dm.close()
                    continue
                for part in dm.partitions():
                    for page in self._distinct_states(part, arg, dev):
                        main.add(page)
                dm.close()
            if rows_seen == 0:
                main.add(self._identity_page(1, dev))
            main.finish()
            # Pages of partial states hold each of their groups once, unless rows passed through.
            disjoint = not passthrough and ctx.config.on("disjoint_groups")
            yield from self._final(main, dev, self._finalize if self.phase != "partial" else _as_is, disjoint)
        finally:
            for m in mats:
                m.close()

    def _final(self, mat: Materializer, dev, finish, disjoint: bool = False) -> Iterator[Chunk]:
        # (Pages split into hash partitions: merged a partition at a time, where the pieces of
        # consecutive key ranges stay apart; all of them at once, their ranges interleave.)
        if not mat.spilled and mat.held_bytes * MERGE_FACTOR <= mat.held_bytes + mat.pool.available \
                and not (disjoint and mat.parts is not None):
            out = finish(self._merge_final(mat.pages(), disjoint))
            mat.release(-1)
            yield from _slices(out, mat.ctx.config.chunk_rows)
            return
        mat.ensure_partitioned()  # too big to merge at once: one partition at a time
        yield from self._by_partition(mat, dev, finish, disjoint)

    def _by_partition(self, mat: Materializer, dev, finish, disjoint: bool = False) -> Iterator[Chunk]:
        for part in mat.partitions():
            if not part.fits(MERGE_FACTOR):
                sub = part.split()
                try:
                    yield from self._by_partition(sub, dev, finish, disjoint)
                finally:
                    sub.close()
                continue
            with mat.pool.reservation(f"{self.label} partition") as res:
                pages = part.load(res)
                out = finish(self._merge_final(pages, disjoint))
                del pages
            mat.release(part.index)
            yield from _slices(out, mat.ctx.config.chunk_rows)

    # ---------------------------------------------------------------- pages

    def _partial(self, chunk: Chunk, dev, passthrough: bool = False,
                 grouping: GroupingState | None = None, raw: set = frozenset()) -> tuple[Chunk, dict[Expr, Chunk]]:
        n = chunk.num_rows
        memo: dict = {}  # sub-expressions shared by keys and arguments, computed once
        kcols = [evaluate(e, chunk, memo).expand(n) for _, e in self.keys]
        if passthrough:  # each row a group of its own
            ids, g = torch.arange(n, device=dev), n
            rows = torch.ones(n, dtype=torch.int64, device=dev)
            cols: dict[str, Column] = dict(zip(self.key_names, kcols))
        else:
            ids, g = group_ids(kcols, n, dev, state=grouping, known=self.key_ranges)
            ids = ids.to(dev)
            rows = count_by(ids, g)
            cols = {}
            if self.keys:
                firsts = first_rows(ids, g)
                cols = {name: c.take(firsts) for name, c in zip(self.key_names, kcols)}
        for key, acc in self.accs.items():
            kind, arg, distinct = key
            if distinct or key in self.skipped:
                cols.update(acc.identity(g, dev))
                continue
            col = computable(evaluate(arg, chunk, memo)).expand(n) if arg is not None else None
            cols.update(acc.update(col, ids, g, rows))
        dpages = {}
        for arg in self.distinct_args:
            x = evaluate(arg, chunk, memo).expand(n)
            if arg in raw:  # every row's pair as it is: the final pass deduplicates
                dcols = dict(zip(self.key_names, kcols))
                dcols["__x"] = x
                dpages[arg] = Chunk(dcols, n, home=dev)
                continue
            # (group, value) pairs; with one group, the values alone
            pair_ids, k = group_ids([x] if g == 1 else [Column(ids.contiguous(), _INT64), x], n, determining=False)
            firsts = first_rows(pair_ids.to(dev), k)
            dcols = {name: c.take(firsts) for name, c in zip(self.key_names, kcols)}
            dcols["__x"] = x.take(firsts)
            dpages[arg] = Chunk(dcols, int(firsts.numel()), home=dev)
        return Chunk(cols, g, home=dev), dpages

    def _merge_final(self, pages: list[Chunk], disjoint: bool) -> Chunk:
        """The last merge of pages that each hold a group once (``disjoint``: no row passed
        through): where their one integer key's ranges overlap at most at their ends (input
        ordered by the key), only the rows of the keys at those ends are merged -- every other
        group is in one page only -- and the pages are otherwise the answer as they are."""
        split = _range_split(pages, self.key_names) if disjoint and len(pages) > 1 else None
        if split is None:
            return self._merge_pages(pages)
        alone, shared = split
        if shared:
            alone.append(self._merge_pages(shared))
        return concat_chunks(alone, unify=False) if len(alone) > 1 else alone[0]

    def _merge_pages(self, pages: list[Chunk]) -> Chunk:
        """Merge partial pages (each already one row per group) into one page with one row
        per group."""
        if len(pages) == 1:
            return pages[0]
        # String keys' dictionaries appended, not deduplicated: where one key determines the
        # others (TPC-H q10 groups by c_custkey and five of customer's strings) equal codes need
        # no hashing and only differing ones are compared; otherwise grouping dedupes the one
        # dictionary. Unifying them hashed every string of every page (q10 at SF 10: 0.4 of 1.9 s).
        return self._merge_rows(concat_chunks(pages, unify=False))

    def _merge_rows(self, data: Chunk) -> Chunk:
        """One row per group from rows of partial states (rows of one group merged)."""
        n = data.num_rows
        kcols = [data.columns[k] for k in self.key_names]
        ids, g = group_ids(kcols, n, data.device, known=self.key_ranges)
        ids = ids.to(data.device)
        cols: dict[str, Column] = {}
        if self.keys:
            firsts = first_rows(ids, g)
            cols = {k: c.take(firsts) for k, c in zip(self.key_names, kcols)}
        for acc in self.accs.values():
            state = {k: v for k, v in data.columns.items() if k.startswith(acc.prefix + "#")}
            cols.update(acc.merge(state, ids, g))
        return Chunk(cols, g, home=data.device)

    def _dedupe_pages(self, pages: list[Chunk]) -> Chunk:
        """(keys, value) pages as one page of distinct pairs."""
        data = concat_chunks(pages)
        cols = [data.columns[k] for k in self.key_names] + [data.columns["__x"]]
        pair_ids, k = group_ids(cols, data.num_rows, determining=False)
        return data.take(first_rows(pair_ids.to(data.device), k))

    def _identity_page(self, g: int, dev) -> Chunk:
        cols: dict[str, Column] = {}
        for acc in self.accs.values():
            cols.update(acc.identity(g, dev))
        return Chunk(cols, g, home=dev)

    def _counts_strings(self, arg: Expr) -> bool:
        """Whether ``arg`` is a string whose only DISTINCT aggregate is COUNT, with no keys:
        its distinct values need counting only (:func:`count_distinct_strings`)."""
        return not self.keys and arg.type.kind == "string" and \
            all(kind == "count" for kind, a, distinct in self.accs if distinct and a == arg)

    def _count_page(self, arg: Expr, k: int, dev) -> Chunk:
        """The states of one group: COUNT(DISTINCT arg) is ``k``, every other state its identity."""
        cols = {}
        for (kind, a, distinct), acc in self.accs.items():
            cols.update(acc.identity(1, dev))
            if distinct and a == arg:
                cols[acc.name("n")] = Column(torch.full((1,), k, dtype=torch.int64, device=dev), _INT64)
        return Chunk(cols, 1, home=dev)

    def _count_distinct(self, parts) -> int:
        """The distinct values of a counted DISTINCT string (:meth:`_counts_strings`) in the
        partitions ``parts`` (each value in one of them), counted partition by partition --
        those of fewer than PARALLEL_MIN values (one Arrow call each, on one thread: SF 10
        l_comment's 64 partitions were a third of the query) several at a time on the compute
        pool, each held and reserved until counted."""
        total, pending = 0, deque()
        width = max(1, torch.get_num_threads())
        try:
            for part in parts:
                mat = part.mat
                if not part.fits(MERGE_FACTOR):
                    sub = part.split()
                    try:
                        total += self._count_distinct(sub.partitions())
                    finally:
                        sub.close()
                    continue
                res = mat.pool.reservation(f"{self.label} DISTINCT partition")
                pages = part.load(res)
                held = sum(p.nbytes for p in part.held)
                mat.release(part.index)
                res.force(held)  # (still held here until counted)
                arrs = used_strings([p.columns["__x"].expand(p.num_rows) for p in pages])
                del pages
                if sum(len(a) for a in arrs) >= PARALLEL_MIN:  # it uses the pool itself
                    total += count_distinct_strings(arrs)
                    res.free()
                    continue
                # Arrow's table of the values and their copy: about as large as they are. Where
                # that is not free, the partitions in flight are counted first.
                work = sum(a.nbytes for a in arrs)
                grown = res.try_grow(work)
                while not grown and pending:
                    f, r = pending.popleft()
                    total += f.result()
                    r.free()
                    grown = res.try_grow(work)
                if not grown:  # nothing else in flight: this one goes ahead (its values are here)
                    res.force(work)
                pending.append((compute_pool().submit(count_distinct_strings, arrs), res))
                while len(pending) > width:
                    f, r = pending.popleft()
                    total += f.result()
                    r.free()
            while pending:
                f, r = pending.popleft()
                total += f.result()
                r.free()
        finally:
            for f, r in pending:
                f.cancel()
                r.free()
        return total

    def _distinct_states(self, part, arg: Expr, dev) -> Iterator[Chunk]:
        """Pages of group states of the DISTINCT aggregates over ``arg`` from one partition of
        (keys, value) pairs: equal pairs are all in this partition."""
        mat = part.mat
        if not part.fits(MERGE_FACTOR):
            sub = part.split()
            try:
                for p in sub.partitions():
                    yield from self._distinct_states(p, arg, dev)
            finally:
                sub.close()
            return
        with mat.pool.reservation(f"{self.label} DISTINCT partition") as res:
            pages = part.load(res)
            mat.release(part.index)
            data = concat_chunks(pages)
            if data is None:  # no rows at all (an empty input)
                return
            n = data.num_rows
            kcols = [data.columns[k] for k in self.key_names]
            x = data.columns["__x"]
            pair_ids, k = group_ids(kcols + [x], n, determining=False)
            firsts = first_rows(pair_ids.to(data.device), k)
            kcols = [c.take(firsts) for c in kcols]
            x = x.take(firsts)
            ids, g = group_ids(kcols, int(firsts.numel()), data.device)
            ids = ids.to(data.device)
            rows = count_by(ids, g)
            cols: dict[str, Column] = {}
            if self.keys:
                f2 = first_rows(ids, g)
                cols = {name: c.take(f2) for name, c in zip(self.key_names, kcols)}
            for (kind, a, distinct), acc in self.accs.items():
                if distinct and a == arg:
                    cols.update(acc.update(x, ids, g, rows))
                else:
                    cols.update(acc.identity(g, dev))
        yield Chunk(cols, g, home=data.device)

    def _finalize(self, page: Chunk) -> Chunk:
        cols = {k: page.columns[k] for k in self.key_names}
        for (name, key, func), (_, call) in zip(self.outputs, self.aggs):
            acc = self.accs[key]
            state = {k: v for k, v in page.columns.items() if k.startswith(acc.prefix + "#")}
            cols[name] = result(func, acc, state, call.type)
        return Chunk(cols, page.num_rows, home=page.device)


_RANGED_KINDS = frozenset({"int8", "int16", "int32", "int64", "decimal", "date", "timestamp", "timestamptz"})


def _range_split(pages: list[Chunk], keys: list[str]) -> tuple[list[Chunk], list[Chunk]] | None:
    """Pages of partial states (each group once in a page) split by their one integer key (no
    NULLs): (the pages' rows whose group is in no other page, the rows of the groups that are),
    or None when two pages' key ranges overlap past a shared end. Input ordered by the key
    (lineitem by l_orderkey: 15 M groups at SF 10) makes pages of consecutive ranges, which
    share at most the key a chunk boundary cut (re-grouping every row at the end was half of
    such a query). A key in two pages is then the end of one range and the start of the
    next (pages in between hold it alone), so only those keys' rows need merging."""
    if len(keys) != 1:
        return None
    pages = [p for p in pages if p.num_rows]
    if len(pages) < 2:
        return pages, []
    cols = [p.columns[keys[0]] for p in pages]
    if any(c.type.kind not in _RANGED_KINDS or c.valid is not None or c.wide is not None or c.data.dim() != 1
           or c.data.numel() != p.num_rows for c, p in zip(cols, pages)):
        return None  # (a broadcast constant key: one group, cheap to merge anyway)
    bounds = torch.stack([torch.stack(torch.aminmax(c.data)).long() for c in cols]).tolist()  # one read-back
    order = sorted(range(len(pages)), key=lambda i: bounds[i])
    ends = set()
    for a, b in zip(order, order[1:]):
        if bounds[a][1] > bounds[b][0]:
            return None
        if bounds[a][1] == bounds[b][0]:
            ends.add(bounds[a][1])
    if not ends:
        return pages, []
    alone, shared = [], []
    for p, c, (lo, hi) in zip(pages, cols, bounds):
        at = [k for k in (lo, hi) if k in ends]
        if not at:
            alone.append(p)
            continue
        mask = c.data == at[0]
        if len(at) > 1 and at[1] != at[0]:
            mask |= c.data == at[1]
        inside = positions(~mask)
        if inside.numel():
            alone.append(p.take(inside))
        shared.append(p.take(positions(mask)))
    return alone, shared


def _unique_values(pages: list[Chunk]) -> Chunk:
    """Pages of a counted DISTINCT string (the value alone) as one page of its distinct values:
    what is kept of a partition when memory runs out, before spilling it (SF 10 l_comment: 60 M
    values, 34 M distinct)."""
    d = unique_strings(used_strings([p.columns["__x"].expand(p.num_rows) for p in pages]))
    home = pages[0].home
    codes = torch.arange(len(d), dtype=torch.int32, device=pages[0].columns["__x"].data.device)
    return Chunk({"__x": Column(codes, pages[0].columns["__x"].type, None, d)}, len(d), home=home)


def _piece_hash(page: Chunk) -> torch.Tensor:
    """The spill partitioner of a counted DISTINCT string's pages (no keys: the value alone):
    :func:`piece_hashes` of its strings, NULLs as 0."""
    col = page.columns["__x"].expand(page.num_rows)
    codes = col.data.reshape(-1)
    d = col.dictionary
    h = lookup(piece_hashes(d).to(codes.device), codes) if len(d) else torch.zeros(codes.numel(), dtype=torch.int64,
                                                                                      device=codes.device)
    if col.valid is not None:
        h = torch.where(col.valid.reshape(-1), h, torch.zeros_like(h))
    return h


def _as_is(page: Chunk) -> Chunk:
    return page


def _held_rows(mat: Materializer) -> int:
    rows = sum(p.num_rows for p, _ in mat.unpart) + mat.stage_rows
    if mat.parts is not None:
        rows += sum(p.num_rows for lst in mat.parts for p, _ in lst)
    return rows


def _slices(chunk: Chunk, rows: int) -> Iterator[Chunk]:
    n = chunk.num_rows
    if n == 0:
        return
    if n <= rows:
        yield chunk
        return
    for s in range(0, n, rows):
        yield chunk.slice(s, min(n, s + rows))
