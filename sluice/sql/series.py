"""The table functions RANGE(...) and GENERATE_SERIES(...) in FROM, over integer constants.

DuckDB's tests (and users) make rows with ``FROM range(1000)``; sluice has no table function
operator, so a series is planned from existing nodes: one row holding the row count, repeated
(:class:`Repeat`), numbered (ROW_NUMBER over no order) and mapped to ``start + (n - 1) * step``.
Only integer constants are read (DuckDB's timestamp series with an interval step, and arguments
from columns, are refused by name); RANGE excludes its stop, GENERATE_SERIES includes it, and
the column is named after the function, as DuckDB names it.
"""

from __future__ import annotations

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.expr import build as E
from sluice.expr.nodes import Col, Lit
from sluice.plan.logical import OneRow, Project, Repeat, Window, WindowCall
from sluice.sql.scope import Rel
from sluice.types import INT64

#: A series longer than this is refused: its rows are materialised, not streamed.
MAX_SERIES_ROWS = 1 << 28


def is_series(node: exp.Expression) -> bool:
    """Whether ``node`` is RANGE / GENERATE_SERIES called as a table in FROM."""
    return isinstance(node, exp.GenerateSeries) and isinstance(node.parent, exp.Table) and node.arg_key == "this"


def _integer(node: exp.Expression | None, name: str) -> int:
    sign = 1
    while isinstance(node, exp.Neg):
        node, sign = node.this, -sign
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = sign * int(node.this)
        except ValueError:
            value = None
        if value is not None and -(1 << 63) <= value < (1 << 63):
            return value
    raise UnsupportedError(f"{name} over anything but integer constants")


def series_count(start: int, stop: int, step: int, inclusive: bool) -> int:
    """How many values ``start, start + step, ...`` stay before ``stop`` (or reach it, ``inclusive``)."""
    span = stop - start
    if (span < 0 < step) or (span > 0 > step):
        return 0
    if inclusive:
        return span // step + 1
    return -(-span // step) if span else 0


def series(node: exp.GenerateSeries, fresh) -> Rel:
    """The plan of ``range(...)`` / ``generate_series(...)``; ``fresh`` makes internal names."""
    inclusive = not node.args.get("is_end_exclusive")
    name = "generate_series" if inclusive else "range"
    what = name.upper()
    start_node, end_node = node.args.get("start"), node.args.get("end")
    if end_node is None:  # range(stop)
        start, stop = 0, _integer(start_node, what)
    else:
        start, stop = _integer(start_node, what), _integer(end_node, what)
    step = _integer(node.args["step"], what) if node.args.get("step") is not None else 1
    if step == 0:
        raise PlanError(f"{what}: the step cannot be 0")
    count = series_count(start, stop, step, inclusive)
    if count > MAX_SERIES_ROWS:
        raise UnsupportedError(f"{what} of {count} rows (at most {MAX_SERIES_ROWS}: a series is materialised)")
    times, number, out = fresh("times"), fresh("n"), fresh(name)
    plan = Repeat(Project(OneRow(), ((times, Lit(count, INT64)),)), times)
    plan = Window(plan, (), (), ((number, WindowCall("row_number", ())),))
    value = E.make_arith("+", Lit(start, INT64),
                         E.make_arith("*", E.make_arith("-", Col(number, INT64), Lit(1, INT64)), Lit(step, INT64)))
    return Rel(Project(plan, ((out, value),)), [(name, out)])
