"""Join ordering as a rule: every InnerJoins node the translator left becomes a tree of Joins,
ordered greedily by estimated size with each condition placed where its columns meet
(:func:`sluice.plan.joins.plan_inner_joins`). Runs first, so the later rules see Joins."""

from __future__ import annotations

from sluice.plan.joins import plan_inner_joins
from sluice.plan.logical import InnerJoins, PlanNode


def order_joins(plan: PlanNode) -> PlanNode:
    children = [order_joins(c) for c in plan.children]
    if children:
        plan = plan.reconstruct(children)
    if isinstance(plan, InnerJoins):
        return plan_inner_joins(list(plan.inputs), list(plan.conditions))
    return plan
