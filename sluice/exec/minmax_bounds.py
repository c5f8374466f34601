"""MIN / MAX bounds: an aggregation of only MIN and MAX tells the scan below it which row groups
cannot change its answer, and the scan does not decode them (``minmax_bounds``).

An aggregation ``GROUP BY k`` of MAX(x) (MIN alike) learns, chunk by chunk, every group seen so
far and each one's largest x. Once every seen group has a value, T = the smallest of them bounds
what can still matter: a row with x < T changes no seen group's MAX. So a row group whose
statistics say max(x) < T, and whose keys are all groups already seen, adds nothing -- neither a
value nor a group -- and the scan skips it after decoding its keys only (for SF 10
``MAX(l_comment) GROUP BY l_returnflag, l_linestatus`` the keys are two one-byte flags and the
comments are 1.6 GB of strings). With several MIN / MAX aggregates a row group must be ruled out
for each. Filters between do not matter: a skipped row is one that could change nothing,
whether or not a filter would have kept it.

Safe by construction where it could go wrong: the keys of both sides go through the same
conversion (:func:`key_tuples`: columns of the same types, to Python values), so a key that
compares unequal (NaN) only keeps a row group; a group with no value yet (all NULL so far)
leaves T unknown; statistics missing or of another kind keep the row group. The aggregation
stops publishing past ``MAX_GROUPS`` groups, where a bound over so many would rarely skip
anything and the bookkeeping would cost, and after ``MAX_MISSES`` tasks whose keys held new
groups (keys read twice for nothing) while those outnumber the tasks skipped.

The spec is the plan's (made when lowering); each run has its own :class:`MinMaxBound`
(``ExecContext.minmax_bound``): the aggregation writes it on the compute thread, the scan's I/O
threads read one immutable snapshot of it per task.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.arrow import column_to_arrow
from sluice.chunk import Column
from sluice.kernels.keys import first_rows, group_ids

#: Groups past which an aggregation stops publishing its bound.
MAX_GROUPS = 1024
#: Tasks whose keys held a new group although the statistics ruled them out, after which (and
#: while they outnumber the tasks skipped) the bound is dropped: each read its keys twice.
MAX_MISSES = 4


@dataclass(frozen=True, eq=False)
class MinMaxBoundSpec:
    """What lowering found: the group keys as the scan's file columns (in key order), and per
    aggregate its accumulator's key in the aggregation, MIN or MAX, and its argument's file
    column."""

    keys: tuple[str, ...]
    aggs: tuple[tuple[tuple, str, str], ...]  # (accumulator key, "min" | "max", file column)


def key_tuples(cols: list[Column], n: int, grouped: bool) -> list[tuple] | None:
    """The distinct key combinations of ``n`` rows as Python tuples (``grouped``: the rows are
    one per group already), or None where a key cannot be compared this way. No key columns:
    one empty tuple for any row. Keys are compared as stored -- strings as strings, everything
    else as its integer or float form with NULL as None -- never as Python dates or datetimes,
    which end at years 1 and 9999 where sluice's do not."""
    if n == 0:
        return []
    if not cols:
        return [()]
    if any(c.wide is not None or c.data.dim() != 1 for c in cols):
        return None
    if not grouped:
        ids, g = group_ids(cols, n)
        firsts = first_rows(ids, g)
        cols = [c.expand(n).take(firsts) for c in cols]
    return list(zip(*(_stored(c) for c in cols)))


def _stored(c: Column) -> list:
    """A column's values as Python values, NULL as None: str for strings, the stored number
    otherwise (days for dates, scaled units for decimals: as the catalog keeps statistics)."""
    if c.type.kind == "string":
        return column_to_arrow(c).to_pylist()
    values = c.data.tolist()
    if c.valid is None:
        return values
    return [v if ok else None for v, ok in zip(values, c.valid.reshape(-1).tolist())]


class MinMaxBound:
    """One run's bound: what the aggregation has seen, and the snapshot the scan reads."""

    def __init__(self, spec: MinMaxBoundSpec) -> None:
        self.spec = spec
        self.best: list[dict] = [{} for _ in spec.aggs]  # per aggregate: key tuple -> extreme
        self.seen: set = set()
        self.off = False
        # (thresholds per aggregate, frozenset of seen keys), or None while unknown
        self.snapshot: tuple[tuple, frozenset] | None = None
        self.tasks_skipped = 0
        self.misses = 0  # tasks the statistics ruled out but their keys did not
        self.groups_skipped = 0
        self.bytes_skipped = 0

    # ------------------------------------------------------------ the aggregation's side

    def observe(self, page, key_names: list[str], accs: dict) -> None:
        """Take in one page of partial states (a row per group of one chunk)."""
        if self.off:
            return
        keys = key_tuples([page.columns[k] for k in key_names], page.num_rows, grouped=True) \
            if page.num_rows <= MAX_GROUPS else None
        if keys is None:
            self.off, self.snapshot = True, None
            return
        for (acc_key, func, _), best in zip(self.spec.aggs, self.best):
            acc = accs[acc_key]
            counts = page.columns[acc.name("n")].data.reshape(-1).tolist()
            for k, cnt, v in zip(keys, counts, _stored(page.columns[acc.name("v")])):
                if cnt and v is not None:
                    cur = best.get(k)
                    if cur is None or (v > cur if func == "max" else v < cur):
                        best[k] = v
        self.seen.update(keys)
        if len(self.seen) > MAX_GROUPS:
            self.off, self.snapshot = True, None
            return
        if not self.seen or any(len(best) < len(self.seen) for best in self.best):
            return  # a group without a value yet: any row of it could be its first
        bounds = tuple(min(best.values()) if func == "max" else max(best.values())
                       for (_, func, _), best in zip(self.spec.aggs, self.best))
        self.snapshot = (bounds, frozenset(self.seen))

    # ------------------------------------------------------------ the scan's side

    def rules_out(self, task, decode_keys) -> bool:
        """Whether every row group of ``task`` can be left unread: each aggregate's statistics
        beyond its bound, and (``decode_keys()``: the task's key columns and row count) every
        key combination already seen."""
        snap = self.snapshot
        if snap is None:
            return False
        bounds, seen = snap
        for rg in task:
            for (_, func, col), t in zip(self.spec.aggs, bounds):
                lo, hi = rg.stats.get(col, (None, None))
                edge = hi if func == "max" else lo
                if edge is None or type(edge) is not type(t):
                    return False
                if not (edge < t if func == "max" else edge > t):
                    return False
        cols, n = decode_keys()
        keys = key_tuples(cols, n, grouped=False)
        if keys is None or not set(keys) <= seen:
            # new groups in row groups the statistics rule out: their keys were decoded twice
            self.misses += 1
            if self.misses >= MAX_MISSES and self.misses > self.tasks_skipped:
                self.off, self.snapshot = True, None
            return False
        self.tasks_skipped += 1
        self.groups_skipped += len(task)
        self.bytes_skipped += sum(rg.nbytes for rg in task)
        return True

    def describe(self) -> str:
        if self.off:
            return (f"MIN/MAX bound: off (more than {MAX_GROUPS} groups, keys it cannot compare, or new "
                    f"groups in {self.misses} read task(s) it ruled out)")
        keys = " after reading their keys" if self.spec.keys else ""
        return (f"MIN/MAX bound: skipped {self.groups_skipped} row group(s) in {self.tasks_skipped} task(s) "
                f"({self.bytes_skipped / 2 ** 20:.1f} MiB compressed){keys}")

