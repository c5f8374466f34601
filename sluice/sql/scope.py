"""Name resolution: what each SELECT can see. A column resolves in the innermost scope that
has it; a reference to an enclosing SELECT's column makes the subquery correlated (recorded in
a :class:`Correlation` for the decorrelation pass in :mod:`sluice.sql.subqueries`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.catalog import TableInfo
from sluice.expr.nodes import Col, Expr
from sluice.plan.logical import (PlanNode)


Catalog = Callable[[str], TableInfo]


@dataclass
class Source:
    alias: str
    cols: dict[str, Col]  # lower-case column name -> internal column
    unreadable: dict[str, str] = field(default_factory=dict)  # lower-case name -> its type
    shown: dict[str, str] = field(default_factory=dict)  # lower-case name -> as written, where they differ

    def refuse(self, name_l: str):
        raise UnsupportedError(f"column {name_l} of type {self.unreadable[name_l]} (binary columns "
                               "cannot be read; the other columns can)")


@dataclass
class Scope:
    parent: "Scope | None"
    sources: list[Source] = field(default_factory=list)
    local: set[str] = field(default_factory=set)
    #: JOIN ... USING / NATURAL JOIN columns: an unqualified name means the merged column (one
    #: column, not an ambiguous pair: the left side's, the right side's after a RIGHT JOIN,
    #: COALESCE of both after a FULL JOIN), and ``*`` shows it once.
    merged: dict[str, Col] = field(default_factory=dict)
    #: the left side's column whose place ``*`` gives a merged column (its value is ``merged``'s:
    #: the right side's after a RIGHT JOIN, COALESCE of both after a FULL JOIN)
    merged_at: dict[str, Col] = field(default_factory=dict)
    hidden: set[tuple[str, str]] = field(default_factory=set)  # (alias, name) left out of *

    def add(self, src: Source) -> None:
        if any(s.alias == src.alias for s in self.sources):
            raise PlanError(f"table name {src.alias!r} is used twice in one FROM clause; use aliases")
        self.sources.append(src)
        self.local.update(c.name for c in src.cols.values())

    def remove(self, src: Source) -> None:
        """Take ``src`` out of sight (a SEMI / ANTI JOIN's right side outside its ON)."""
        self.sources.remove(src)
        self.local.difference_update(c.name for c in src.cols.values())

    def has_local(self, name: str) -> bool:
        """Whether a source of this scope itself (not an enclosing one) has column ``name``."""
        name_l = name.lower()
        return name_l in self.merged or any(name_l in s.cols or name_l in s.unreadable for s in self.sources)

    def resolve(self, table: str | None, name: str) -> Col:
        name_l = name.lower()
        if table:
            t = table.lower()
            for s in self.sources:
                if s.alias == t:
                    if name_l in s.cols:
                        return s.cols[name_l]
                    if name_l in s.unreadable:
                        s.refuse(name_l)
                    raise PlanError(f"table {table!r} has no column {name!r}")
        else:
            if name_l in self.merged:
                return self.merged[name_l]
            hits = [s.cols[name_l] for s in self.sources if name_l in s.cols]
            if len(hits) > 1:
                raise PlanError(f"column reference {name!r} is ambiguous")
            if hits:
                return hits[0]
            for s in self.sources:
                if name_l in s.unreadable:
                    s.refuse(name_l)
        if self.parent is not None:
            return self.parent.resolve(table, name)
        if table:
            raise PlanError(f"unknown table or alias {table!r} in {table}.{name}")
        raise PlanError(f"unknown column {name!r}")


class Outer(Scope):
    """The enclosing query as a subquery sees it: every column it resolves there is recorded
    (``seen``), and those in ``bound`` answer as the domain's columns instead (the subquery
    is then translated over the distinct values of its outer references: see
    :mod:`sluice.sql.dependent`)."""

    def __init__(self, parent: Scope, bound: dict[str, Col] | None = None) -> None:
        super().__init__(parent)
        self.bound = dict(bound or {})
        self.seen: dict[str, Col] = {}
        self.uses: dict[str, int] = {}  # how many references resolved to each

    def resolve(self, table: str | None, name: str) -> Col:
        c = self.parent.resolve(table, name)
        self.seen.setdefault(c.name, c)
        self.uses[c.name] = self.uses.get(c.name, 0) + 1
        return self.bound.get(c.name, c)


@dataclass
class Domain:
    """A correlated subquery translated over ``plan``: the distinct values of its outer
    references (``cols``: outer column name -> the domain's column), cross-joined into its
    FROM clause, added to its GROUP BY and to its outputs."""

    plan: PlanNode
    cols: dict[str, Col]


@dataclass
class EmptyGroup:
    """Filled by a scalar aggregate subquery (aggregates, no GROUP BY) for its caller: what it
    gives for an outer row none of its rows match, where SQL aggregates over no rows (COUNT
    is 0, SUM is NULL, and the select expression is computed from those). Its plan then keeps
    the groups HAVING rejects, with HAVING's verdict in column ``having`` and a constant TRUE
    in ``present`` (NULL after an outer join that found no group)."""

    values: list[Expr] = field(default_factory=list)  # each output over no rows (domain columns as such)
    having: Expr | None = None  # HAVING over no rows (None: no HAVING)
    present: str = ""
    having_col: str = ""


@dataclass
class Correlation:
    """Filled while translating a correlated subquery: equality pairs and other conditions."""

    pairs: list[tuple[Expr, Expr]] = field(default_factory=list)  # (outer expr, inner expr)
    residual: list[Expr] = field(default_factory=list)
    inner_key_cols: list[str] = field(default_factory=list)


@dataclass
class Rel:
    plan: PlanNode
    outputs: list[tuple[str, str]]  # (user-visible name, internal name)


@dataclass
class Ctx:
    scope: Scope
    aggs: dict[int, Col] | None = None        # id(agg AST) -> aggregate output (post-agg)
    group_map: dict[Expr, Col] | None = None  # group key expr -> key output (post-agg)
    subs: dict[int, Col] = field(default_factory=dict)  # id(subquery AST) -> value column
    aliases: dict[str, exp.Expression] | None = None  # select-list aliases -> their expressions
    alias_columns: frozenset[int] = frozenset()  # id(Column AST) that reads its alias (HAVING: having_names)
