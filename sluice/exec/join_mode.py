"""How a hash join runs: which side's rows it keeps, and which side it built.

A logical join kind (:class:`sluice.plan.logical.JoinKind`) becomes one of these once the
physical layer has chosen the build side (:mod:`sluice.physical.joins`): a LEFT join whose
left side builds is ``BUILD_OUTER`` -- the build rows without a match are emitted after the
probe side is exhausted.
"""

from __future__ import annotations

from enum import StrEnum


class JoinMode(StrEnum):
    INNER = "inner"
    CROSS = "cross"
    PROBE_OUTER = "probe_outer"  # probe rows without a match, null-extended
    BUILD_OUTER = "build_outer"  # build rows without a match, null-extended, after the probe side
    FULL = "full"
    SEMI = "semi"                # probe rows with a match
    BUILD_SEMI = "build_semi"    # build rows with a match, after the probe side
    ANTI = "anti"                # probe rows without a match
    BUILD_ANTI = "build_anti"    # build rows without a match, after the probe side
    MARK = "mark"                # every probe row, with a boolean column: whether one matches


#: Modes that emit build rows after the probe side is exhausted (they track matched flags).
BUILD_EMITTING = frozenset({JoinMode.BUILD_OUTER, JoinMode.FULL, JoinMode.BUILD_SEMI, JoinMode.BUILD_ANTI})

#: Modes that drop probe rows without a match: a probe row a runtime filter rules out would
#: not have been emitted (probe_outer, full, anti and mark keep or invert such rows).
DROPS_UNMATCHED_PROBE = frozenset({JoinMode.INNER, JoinMode.SEMI, JoinMode.BUILD_OUTER})
