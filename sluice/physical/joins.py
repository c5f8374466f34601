"""Join selection: the one place that decides which side of a join builds.

The smaller estimated side builds (it is materialised and indexed; the other side streams
past it). Sides stay as written where swapping would change the meaning: a scalar
subquery's single row, NOT IN's null-aware anti join and a mark join build their right
side whatever the sizes. The logical join order (:mod:`sluice.plan.joins`) does not choose
a build side; it only orders the joins.

Next (distributed runs): broadcast the build side when it is small, else partition both
sides on the keys -- decided here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.exec.join_mode import JoinMode
from sluice.plan.estimate import estimate
from sluice.plan.logical import AsofJoin, Join, JoinKind, PlanNode

#: Physical mode when the logical left side probes / when it builds.
_MODES = {
    JoinKind.INNER: (JoinMode.INNER, JoinMode.INNER),
    JoinKind.CROSS: (JoinMode.CROSS, JoinMode.CROSS),
    JoinKind.LEFT: (JoinMode.PROBE_OUTER, JoinMode.BUILD_OUTER),
    JoinKind.RIGHT: (JoinMode.BUILD_OUTER, JoinMode.PROBE_OUTER),
    JoinKind.FULL: (JoinMode.FULL, JoinMode.FULL),
    JoinKind.SEMI: (JoinMode.SEMI, JoinMode.BUILD_SEMI),
    JoinKind.ANTI: (JoinMode.ANTI, JoinMode.BUILD_ANTI),
    JoinKind.MARK: (JoinMode.MARK, JoinMode.MARK),  # never swapped
}


@dataclass(frozen=True)
class JoinChoice:
    probe: PlanNode
    build: PlanNode
    probe_keys: tuple
    build_keys: tuple
    mode: JoinMode


def choose_build_side(plan: Join) -> JoinChoice:
    """Which side of ``plan`` builds, and the mode that keeps the logical join's rows."""
    left_rows, _ = estimate(plan.left)
    right_rows, _ = estimate(plan.right)
    if plan.kind == JoinKind.MARK:
        swap = False
    elif plan.kind == JoinKind.CROSS and not plan.single_row:
        swap = left_rows < right_rows
    else:
        swap = left_rows < right_rows and bool(plan.left_keys) and not plan.null_aware and not plan.single_row
    if swap:
        return JoinChoice(plan.right, plan.left, plan.right_keys, plan.left_keys, _MODES[plan.kind][1])
    return JoinChoice(plan.left, plan.right, plan.left_keys, plan.right_keys, _MODES[plan.kind][0])


def asof_choice(plan: AsofJoin) -> JoinChoice:
    """An ASOF join's sides: the left probes (each of its rows looks for its nearest right
    row), the right builds (it is indexed by key group and value), whatever the sizes."""
    return JoinChoice(plan.left, plan.right, plan.left_keys, plan.right_keys, _MODES[plan.kind][0])
