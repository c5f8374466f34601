"""HAVING's bare names as DuckDB binds them (its ``HavingBinder``): a subexpression equal to a
group key reads the key; an unqualified name that is a select-list alias and not itself a key reads
the alias (``SELECT b, sum(a) AS a ... GROUP BY b HAVING a > 0``), even where a column of that
name exists and even inside a subexpression that is a key (DuckDB qualifies names first); under
GROUP BY ALL any other column becomes one more group key. Translation asks here which
column nodes read an alias and which are plain columns, before HAVING itself is translated."""

from collections.abc import Callable

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr.nodes import Expr
from sluice.sql.syntax import _is_aggregate


def having_names(translate: Callable[[exp.Expression], Expr], having: exp.Expression,
                 grouped: Callable[[Expr], bool], aliases) -> tuple[set[int], list[exp.Column]]:
    """``(ids of the Column nodes that read a select-list alias, the plain Column nodes)`` of
    ``having`` outside aggregates, windows and subqueries, where ``translate`` gives a
    subexpression's value (raising where it cannot) and ``grouped`` says whether it is a key."""
    alias_ids: set[int] = set()
    plain: list[exp.Column] = []

    def key(n: exp.Expression) -> bool:
        try:
            return grouped(translate(n))
        except (PlanError, UnsupportedError):
            return False

    def outer(n: exp.Expression) -> bool:
        return not (isinstance(n, (exp.Subquery, exp.Exists, exp.Select, exp.Window)) or _is_aggregate(n))

    def names(n: exp.Expression) -> None:  # a name reads its alias unless it is a key itself
        if not outer(n):
            return
        if isinstance(n, exp.Column):
            if not n.table and not isinstance(n.this, exp.Star) and n.name.lower() in (aliases or {}) \
                    and not key(n):
                alias_ids.add(id(n))
            return
        for child in n.iter_expressions():
            names(child)

    def columns(n: exp.Expression) -> None:  # what is neither a key nor an alias
        if not outer(n) or id(n) in alias_ids or key(n):
            return
        if isinstance(n, exp.Column):
            plain.append(n)
            return
        for child in n.iter_expressions():
            columns(child)
    names(having)
    columns(having)
    return alias_ids, plain
