"""Plan rewrites, applied in order by :func:`optimize`."""

from __future__ import annotations

from sluice.plan.logical import PlanNode
from sluice.plan.rules.prune_columns import prune_columns
from sluice.plan.rules.push_filters import push_filters

RULES = (push_filters, prune_columns)


def optimize(plan: PlanNode) -> PlanNode:
    for rule in RULES:
        plan = rule(plan)
    return plan
