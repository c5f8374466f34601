"""Logical plan nodes. Immutable; change a plan with ``reconstruct``.

Every node exposes ``schema``: the ordered (internal column name -> type) it produces.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar, Sequence

from sluice.catalog import TableInfo
from sluice.expr.nodes import Expr
from sluice.plan.aggregate_types import result_type
from sluice.types import BIT, BOOL, LType, INT64, FLOAT64, STRING, list_of, map_of


class PlanNode(abc.ABC):
    _children: ClassVar[tuple[str, ...]] = ()

    @property
    def children(self) -> tuple["PlanNode", ...]:
        out: list[PlanNode] = []
        for name in self._children:
            v = getattr(self, name)
            out.extend(v if isinstance(v, tuple) else (v,))
        return tuple(out)

    def walk(self):
        """This node and every node below it, parents first."""
        yield self
        for c in self.children:
            yield from c.walk()

    def reconstruct(self, children: Sequence["PlanNode"]):
        if self._children == ("inputs",):
            return replace(self, inputs=tuple(children))
        return replace(self, **dict(zip(self._children, children)))

    @property
    @abc.abstractmethod
    def schema(self) -> dict[str, LType]:
        """Ordered output columns: internal name -> type."""


@dataclass(frozen=True, eq=False)
class Scan(PlanNode):
    """Read ``columns`` (internal name -> file column) of a table, applying ``filter``; emit
    ``outputs`` of them (all when None: columns only the filter reads are dropped after it)."""

    table: TableInfo
    alias: str
    columns: dict[str, str]
    filter: Expr | None = None
    outputs: tuple[str, ...] | None = None

    @property
    def schema(self) -> dict[str, LType]:
        return {k: self.table.types[v] for k, v in self.columns.items()
                if self.outputs is None or k in self.outputs}


@dataclass(frozen=True, eq=False)
class OneRow(PlanNode):
    """A single row with no columns (SELECT without FROM)."""

    @property
    def schema(self) -> dict[str, LType]:
        return {}


@dataclass(frozen=True, eq=False)
class Filter(PlanNode):
    _children: ClassVar = ("child",)
    child: PlanNode
    predicate: Expr

    @property
    def schema(self):
        return self.child.schema


@dataclass(frozen=True, eq=False)
class Project(PlanNode):
    _children: ClassVar = ("child",)
    child: PlanNode
    exprs: tuple[tuple[str, Expr], ...]

    @property
    def schema(self):
        return {n: e.type for n, e in self.exprs}


class JoinKind(StrEnum):
    """What a join keeps, as SQL says it (which side builds is the physical layer's choice)."""

    INNER = "inner"
    CROSS = "cross"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    SEMI = "semi"  # left rows with a match (EXISTS / IN)
    ANTI = "anti"  # left rows without one (NOT EXISTS / NOT IN)
    MARK = "mark"  # every left row, with a boolean column: whether one matches


def _join_schema(kind, left, right, outputs, mark: str | None = None) -> dict:
    """A join's columns: the left side's (and a MARK join's flag) for SEMI / ANTI / MARK, else
    both sides'; only ``outputs`` where given."""
    if kind == JoinKind.MARK:
        full = {**left.schema, mark: BOOL}
    elif kind in (JoinKind.SEMI, JoinKind.ANTI):
        full = dict(left.schema)
    else:
        full = {**left.schema, **right.schema}
    return full if outputs is None else {k: full[k] for k in outputs}


@dataclass(frozen=True, eq=False)
class Join(PlanNode):
    """Equi-join on ``left_keys[i] = right_keys[i]`` plus an optional ``residual`` condition.

    semi/anti output the left side's columns only. ``null_aware`` makes an anti join follow
    NOT IN semantics (any NULL key on the right yields no rows). ``single_row`` makes the
    right side a scalar subquery: more than one row is an error, none gives NULLs.
    mark passes every left row with a boolean column ``mark``: whether a right row matches
    (EXISTS / IN under OR); with ``null_aware`` it follows IN: NULL instead of FALSE when the
    left key is NULL or a right key is, over a non-empty right side.
    """

    _children: ClassVar = ("left", "right")
    left: PlanNode
    right: PlanNode
    kind: JoinKind
    left_keys: tuple[Expr, ...] = ()
    right_keys: tuple[Expr, ...] = ()
    residual: Expr | None = None
    null_aware: bool = False
    single_row: bool = False
    outputs: tuple[str, ...] | None = None  # the columns it emits (None: all); set by pruning
    mark: str | None = None  # kind "mark": the left rows, each with this boolean column (a match exists)

    def __post_init__(self):
        object.__setattr__(self, "kind", JoinKind(self.kind))  # an unknown kind fails here

    @property
    def schema(self):
        return _join_schema(self.kind, self.left, self.right, self.outputs, self.mark)


@dataclass(frozen=True, eq=False)
class AsofJoin(PlanNode):
    """ASOF JOIN: each left row with the one right row of equal keys (``left_keys[i] =
    right_keys[i]``; a NULL key matches nothing) whose ``right_on`` is nearest to the row's
    ``left_on`` among those with ``left_on op right_on`` (op one of >=, >, <=, <); ties
    between right rows of the same keys and value are DuckDB's to pick, any one of them.
    ``kind`` says what is kept as for :class:`Join` (inner, left, right, full, semi, anti): a
    right row is matched when some left row picked it. A node of its own, not a Join kind:
    the rules that move filters and reorder joins must not treat it as one (a filter on the
    right side below it would change which row is nearest)."""

    _children: ClassVar = ("left", "right")
    left: PlanNode
    right: PlanNode
    kind: JoinKind
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    left_on: Expr
    right_on: Expr
    op: str
    left_filter: Expr | None = None  # left rows failing it match nothing (a condition on the left side alone)
    residual: Expr | None = None  # conditions reading both sides: the nearest right row passing them is the match
    outputs: tuple[str, ...] | None = None  # the columns it emits (None: all); set by pruning

    def __post_init__(self):
        object.__setattr__(self, "kind", JoinKind(self.kind))
        if self.op not in (">=", ">", "<=", "<"):
            raise ValueError(f"ASOF inequality {self.op!r}")

    @property
    def schema(self):
        return _join_schema(self.kind, self.left, self.right, self.outputs)


@dataclass(frozen=True)
class AggCall:
    func: str  # sum avg count count_star min max
    arg: Expr | None
    distinct: bool = False

    @property
    def type(self) -> LType:
        """The registered rule's (:mod:`sluice.plan.aggregate_types`)."""
        return result_type(self.func, None if self.arg is None else self.arg.type)

    def __str__(self) -> str:
        if self.func == "count_star":
            return "count(*)"
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{self.arg})"


@dataclass(frozen=True, eq=False)
class Aggregate(PlanNode):
    _children: ClassVar = ("child",)
    child: PlanNode
    keys: tuple[tuple[str, Expr], ...]
    aggs: tuple[tuple[str, AggCall], ...]

    @property
    def schema(self):
        return {**{n: e.type for n, e in self.keys}, **{n: a.type for n, a in self.aggs}}


@dataclass(frozen=True)
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = False


@dataclass(frozen=True, eq=False)
class Sort(PlanNode):
    """Sort by ``keys``; with ``limit`` it is a top-k."""

    _children: ClassVar = ("child",)
    child: PlanNode
    keys: tuple[SortKey, ...]
    limit: int | None = None
    offset: int = 0

    @property
    def schema(self):
        return self.child.schema


@dataclass(frozen=True, eq=False)
class Limit(PlanNode):
    _children: ClassVar = ("child",)
    child: PlanNode
    limit: int | None
    offset: int = 0

    @property
    def schema(self):
        return self.child.schema


@dataclass(frozen=True, eq=False)
class Union(PlanNode):
    """UNION ALL of inputs with identical column names (each input ends in a Project)."""

    _children: ClassVar = ("inputs",)
    inputs: tuple[PlanNode, ...] = field(default=())

    @property
    def schema(self):
        return self.inputs[0].schema


#: Window functions and the type of their result (None: the type of their first argument).
RANKING = {"row_number", "rank", "dense_rank", "ntile"}
DISTRIBUTION = {"percent_rank", "cume_dist"}
OFFSETS = {"lag", "lead"}
VALUES = {"first_value", "last_value", "nth_value"}
MOMENTS = {"stddev_samp", "stddev_pop", "var_samp", "var_pop"}
WINDOW_AGGREGATES = {"sum", "avg", "count", "count_star", "min", "max"} | MOMENTS


@dataclass(frozen=True)
class WindowCall:
    """One window function: ``params`` holds constant arguments (NTILE's buckets, LAG/LEAD's
    offset, NTH_VALUE's n); ``args`` the per-row ones (the value, LAG/LEAD's default).
    ``frame`` is (rows|range, start, end), each bound (unbounded|preceding|current|following, n),
    already resolved to the SQL default when the query gave none."""

    func: str
    args: tuple[Expr, ...]
    params: tuple = ()
    frame: tuple = ("range", ("unbounded", 0), ("unbounded", 0))
    ignore_nulls: bool = False  # FIRST_VALUE / LAST_VALUE / LAG / LEAD: skip NULL values
    #: the frame's EXCLUDE: "" (NO OTHERS), "current row", "group" (the row's peers) or "ties"
    #: (its peers but itself); aggregates only (count, sum, avg, min, max)
    exclude: str = ""
    #: the result on each partition's first row only, NULL on the others: a holistic
    #: aggregate's per-group value, which the aggregation above picks from a non-NULL row
    #: (``sql/holistic_aggregates.py``). The rows then carry a group's list once through later
    #: sorts, windows and spill pages, not once per row.
    once: bool = False

    @property
    def type(self) -> LType:
        if self.func in WINDOW_AGGREGATES:  # an aggregate's rule, over the frame
            return result_type(self.func, self.args[0].type if self.args else None)
        if self.func in RANKING:
            return INT64
        if self.func in DISTRIBUTION or self.func == "entropy":
            return FLOAT64
        if self.func == "quantile_cont" and self.args[0].type.kind not in ("decimal", "float32"):
            return FLOAT64  # (a REAL's is a REAL, as DuckDB's)
        if self.func == "string_agg":
            return STRING
        if self.func == "bitstring_agg":
            return BIT
        if self.func == "list":
            return list_of(self.args[0].type)
        if self.func == "histogram":
            return map_of(self.args[0].type, INT64)
        return self.args[0].type

    def __str__(self) -> str:
        args = ", ".join([str(a) for a in self.args] + [str(p) for p in self.params])
        kind, (s, a), (e, b) = self.frame
        def b_(w, k):
            return {"unbounded": "unbounded", "current": "current row"}.get(w, f"{k} {w}")
        nulls = " ignore nulls" if self.ignore_nulls else ""
        excl = f" exclude {self.exclude}" if self.exclude else ""
        once = " on first row" if self.once else ""
        return f"{self.func}({args}){nulls} {kind} {b_(s, a)}..{b_(e, b)}{excl}{once}"


@dataclass(frozen=True, eq=False)
class Window(PlanNode):
    """The child's rows with window function results added; rows of one partition (equal
    ``partition`` values) in ``order``. Results are computed over the rows sorted by both."""

    _children: ClassVar = ("child",)
    child: PlanNode
    partition: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    calls: tuple[tuple[str, WindowCall], ...]

    @property
    def schema(self):
        return {**self.child.schema, **{n: c.type for n, c in self.calls}}


@dataclass(frozen=True, eq=False)
class Repeat(PlanNode):
    """Each row of the child ``count`` times (an INT64 column, >= 0): INTERSECT/EXCEPT ALL."""

    _children: ClassVar = ("child",)
    child: PlanNode
    count: str

    @property
    def schema(self):
        return self.child.schema


@dataclass(frozen=True, eq=False)
class Unnest(PlanNode):
    """Each row of the child once per element of its LIST columns ``sources``, element ``k`` of
    list ``i`` as column ``outs[i]`` -- ``FROM t, UNNEST(t.l) AS u(x)`` and ``SELECT UNNEST(l)``.
    With several lists a row repeats as often as its longest list has elements, the shorter ones
    giving NULL past their end (DuckDB's alignment of several UNNESTs in one select list); a row
    whose lists are all NULL or empty gives no row, or -- ``keep``, ``LEFT JOIN UNNEST(l) ON
    TRUE`` -- one row with NULL elements. ``ordinality``: a column of each element's 1-based
    position (``WITH ORDINALITY``)."""

    _children: ClassVar = ("child",)
    child: PlanNode
    sources: tuple[str, ...]
    outs: tuple[str, ...]
    ordinality: str | None = None
    keep: bool = False

    @property
    def schema(self):
        s = dict(self.child.schema)
        for src, out in zip(self.sources, self.outs):
            s[out] = self.child.schema[src].element
        if self.ordinality is not None:
            s[self.ordinality] = INT64
        return s

    @property
    def made(self) -> set[str]:
        """The columns this node adds."""
        return set(self.outs) | ({self.ordinality} if self.ordinality is not None else set())


@dataclass(frozen=True, eq=False)
class Shared(PlanNode):
    """A subplan referenced more than once (a CTE used twice): computed once, replayed.

    ``key`` identifies it across plan rewrites; lowering maps each key to one operator.
    """

    _children: ClassVar = ("child",)
    child: PlanNode
    key: int

    @property
    def schema(self):
        return self.child.schema


@dataclass(frozen=True, eq=False)
class WorkTable(PlanNode):
    """Inside the step of recursive CTE ``key``: the rows its previous run added (the
    anchor's rows before the first run); ``recurring``: every row of the CTE so far instead
    (DuckDB's ``recurring.<name>``)."""

    key: int
    columns: tuple[tuple[str, LType], ...]
    recurring: bool = False

    @property
    def schema(self) -> dict[str, LType]:
        return dict(self.columns)


@dataclass(frozen=True, eq=False)
class RecursiveUnion(PlanNode):
    """WITH RECURSIVE: the ``anchor``'s rows, then ``step`` run again and again over the rows
    the last run added (its WorkTable ``key``) until a run adds none. ``distinct`` (UNION
    rather than UNION ALL) drops every row seen before, which also ends cycles. The step's
    output has the anchor's column names and types.

    With ``keys`` (USING KEY) the result is a table keyed by those columns: each run's rows
    update their key's row -- the columns in ``aggs`` aggregate every row of the key so far,
    the others take the last row's value -- and the next run reads the keys whose row changed
    (``distinct``) or the rows the step gave (not ``distinct``): :mod:`sluice.exec.recursive_key`.
    ``recurring``: the step reads every row so far (a WorkTable with ``recurring``)."""

    _children: ClassVar = ("anchor", "step")
    anchor: PlanNode
    step: PlanNode
    key: int
    distinct: bool
    keys: tuple[str, ...] = ()
    aggs: tuple[tuple[str, AggCall], ...] = ()
    recurring: bool = False

    @property
    def schema(self) -> dict[str, LType]:
        aggregated = dict(self.aggs)
        return {n: (aggregated[n].type if n in aggregated else t) for n, t in self.anchor.schema.items()}


@dataclass(frozen=True, eq=False)
class InnerJoins(PlanNode):
    """Relations joined by inner (and cross) joins with the conditions over them, in no order:
    the translator emits it for each run of inner joins, and the ``order_joins`` rule turns it
    into a tree of Joins (:mod:`sluice.plan.joins`) before any other rule runs."""

    _children: ClassVar = ("inputs",)
    inputs: tuple[PlanNode, ...]
    conditions: tuple[Expr, ...]

    @property
    def schema(self) -> dict[str, LType]:
        out: dict[str, LType] = {}
        for p in self.inputs:
            out.update(p.schema)
        return out
