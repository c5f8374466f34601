"""Window functions are one registry (exec/window_functions.py), not an if-chain: every name
the binder and the aggregate rewrites make has a computation, and aggregates run over frames."""

import re
from pathlib import Path

from sluice.exec.window_functions import WINDOW_FUNCTIONS
from sluice.plan.logical import DISTRIBUTION, OFFSETS, RANKING, VALUES, WINDOW_AGGREGATES
from sluice.sql.syntax import WINDOW_FUNCS


def test_every_window_function_the_planner_makes_is_registered():
    sql = Path(__file__).resolve().parents[2] / "sluice" / "sql"
    made = set(re.findall(r'WindowCall\("(\w+)"', "".join(p.read_text() for p in sql.glob("*.py"))))
    names = RANKING | DISTRIBUTION | OFFSETS | VALUES | WINDOW_AGGREGATES | set(WINDOW_FUNCS.values()) | made
    assert made and names <= set(WINDOW_FUNCTIONS), names - set(WINDOW_FUNCTIONS)


def test_aggregates_and_values_are_framed_ranking_and_offsets_are_not():
    assert all(WINDOW_FUNCTIONS[f].framed for f in WINDOW_AGGREGATES | VALUES)
    assert not any(WINDOW_FUNCTIONS[f].framed for f in RANKING | DISTRIBUTION | OFFSETS)
