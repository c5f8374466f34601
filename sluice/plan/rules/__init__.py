"""Plan rewrites, applied in order by :func:`optimize`."""

from __future__ import annotations

from sluice.errors import SluiceError, internal_error
from sluice.plan.logical import PlanNode
from sluice.plan.rules.filter_shared_ctes import filter_shared_ctes
from sluice.plan.rules.order_joins import order_joins
from sluice.plan.rules.prune_columns import prune_columns
from sluice.plan.rules.push_filters import filters_into_join_runs, push_filters
from sluice.plan.rules.push_semi_joins import push_semi_joins
from sluice.plan.rules.semi_join_reduction import semi_join_reduction
from sluice.plan.rules.dependent_group_keys import dependent_group_keys
from sluice.plan.rules.struct_fields import struct_fields
from sluice.plan.rules.sum_offsets import sum_offsets
from sluice.plan.rules.simplify_outer_joins import inner_joins_below_left_joins, simplify_outer_joins

RULES = (filters_into_join_runs, simplify_outer_joins, inner_joins_below_left_joins, order_joins, push_semi_joins,
         semi_join_reduction, push_filters, filter_shared_ctes, sum_offsets, dependent_group_keys,
         prune_columns, struct_fields)


def optimize(plan: PlanNode, disabled: str = "") -> PlanNode:
    """``plan`` through every rule in order, less those named in ``disabled`` (comma-separated)."""
    off = {r.strip() for r in disabled.split(",") if r.strip()}
    for rule in RULES:
        if rule.__name__ in off:
            continue
        try:
            plan = rule(plan)
        except SluiceError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in a rule: say which one
            raise internal_error(f"planning rule {rule.__name__}", e) from e
    return plan
