"""An outer join whose ON condition holds subqueries reading both sides: joined by row ids.

``L LEFT JOIN R ON c`` where ``c``'s subqueries read columns of both ``L`` and ``R`` cannot
join a subquery to one side first (``FromClause._on_subqueries`` does that when a subquery
reads one side). The sound plan, with no operator of its own: number the rows of each side
(``row_number()`` over a ``Shared`` node, so every reference sees the same numbers), find the
matching pairs as an inner join filtered by ``c`` -- whose subqueries are decorrelated exactly
as a WHERE's over the joined pair (semi / anti / mark / scalar joins) -- keep only the pairs'
two row ids, and put the sides back around them::

    pairs = SELECT l.id, r.id FROM L' l JOIN R' r ON <c's plain conjuncts> WHERE <c's subquery conjuncts>
    LEFT:  (L' LEFT  JOIN pairs ON l.id) LEFT  JOIN R' ON r.id
    RIGHT: (L' INNER JOIN pairs ON l.id) RIGHT JOIN R' ON r.id
    FULL:  (L' LEFT  JOIN pairs ON l.id) FULL  JOIN R' ON r.id
    SEMI / ANTI: L' SEMI / ANTI JOIN pairs ON l.id  (DuckDB's ``L SEMI JOIN R ON c``)

Each pair's row ids match exactly one row of each side, so a left row appears once per pair
and, with none, once null-extended (a NULL id matches nothing); a right row likewise. ``c``
keeps a pair only where it is TRUE, as WHERE does: ON with NULL is no match.
"""

from __future__ import annotations

from sqlglot import exp

from sluice.expr.nodes import Col, Expr
from sluice.plan.logical import InnerJoins, Join, JoinKind, PlanNode, Project, Shared, Window, WindowCall
from sluice.sql.scope import Ctx
from sluice.types import INT64


class OuterJoinPairs:
    """Translator methods of this pass (mixed into :class:`sluice.sql.translate.Translator`)."""

    def _numbered(self, plan: PlanNode, what: str) -> tuple[PlanNode, Col]:
        """``plan`` with a row id column, computed once however often it is read."""
        rid = Col(self.fresh(f"{what} row id"), INT64)
        numbered = Window(plan, (), (), ((rid.name, WindowCall("row_number", ())),))
        return Shared(numbered, self.fresh(f"{what} rows")), rid

    def outer_join_by_pairs(self, plan: PlanNode, item: PlanNode, side: str, plain: list[Expr],
                            subq: list[exp.Expression], ctx: Ctx) -> PlanNode:
        """``plan`` ``side`` JOIN ``item`` ON ``plain`` AND ``subq`` (``side``: left, right,
        full, semi or anti), the subquery conjuncts decorrelated over the candidate pairs."""
        left, lid = self._numbered(plan, "left")
        right, rid = self._numbered(item, "right")
        pairs: PlanNode = InnerJoins((left, right), tuple(plain))
        for c in subq:
            pairs = self.subquery_predicate(c, pairs, ctx, where_scope=None, corr=None)
        plid, prid = Col(self.fresh("pair left id"), INT64), Col(self.fresh("pair right id"), INT64)
        pairs = Project(pairs, ((plid.name, lid), (prid.name, rid)))
        if side in ("semi", "anti"):  # the left rows with (without) a pair
            out = Join(left, pairs, JoinKind(side), (lid,), (plid,))
            return Project(out, tuple((k, Col(k, t)) for k, t in plan.schema.items()))
        first = JoinKind.INNER if side == "right" else JoinKind.LEFT
        out = Join(left, pairs, first, (lid,), (plid,))
        out = Join(out, right, JoinKind(side), (prid,), (rid,))
        keep = {**plan.schema, **item.schema}
        return Project(out, tuple((k, Col(k, t)) for k, t in keep.items()))
