"""A logical plan as text, one node per line, children indented below their parent.

For the rule fixtures (``tests/unit/rules/*.sql``): a rule's effect is read as the text of the
plan before and after it, so every field a rule may change is shown, and nothing that differs
from run to run (a shared subplan's key is numbered in order of appearance)."""

from __future__ import annotations

from sluice.expr.nodes import Col
from sluice.plan.logical import (Aggregate, AsofJoin, Filter, InnerJoins, Join, Limit, OneRow, PlanNode, Project,
                                 RecursiveUnion, Repeat, Scan, Shared, Sort, SortKey, Union, Unnest, Window,
                                 WorkTable)


def show(plan: PlanNode) -> str:
    lines: list[str] = []
    keys: dict[int, int] = {}  # a Shared / recursive key -> its number here
    _walk(plan, 0, lines, keys)
    return "\n".join(lines)


def _walk(node: PlanNode, depth: int, lines: list[str], keys: dict[int, int]) -> None:
    first = not isinstance(node, Shared) or node.key not in keys
    lines.append("  " * depth + _line(node, keys) + ("" if first else " (as above)"))
    if first:
        for c in node.children:
            _walk(c, depth + 1, lines, keys)


def _key(key: int, keys: dict[int, int]) -> str:
    return f"#{keys.setdefault(key, len(keys) + 1)}"


def _names(names) -> str:
    return "[" + ", ".join(names) + "]"


def _sort_key(k: SortKey) -> str:
    return f"{k.expr}{'' if k.ascending else ' desc'}{' nulls first' if k.nulls_first else ''}"


def _named(pairs) -> str:
    return ", ".join(n if isinstance(e, Col) and e.name == n else f"{n} := {e}" for n, e in pairs)


def _line(node: PlanNode, keys: dict[int, int]) -> str:
    if isinstance(node, Scan):
        cols = [k if k.split(".")[-1] == v else f"{k} := {v}" for k, v in node.columns.items()]
        out = f"Scan {node.table.name} {_names(cols)}"
        if node.alias != node.table.name:
            out += f" as {node.alias}"
        if node.filter is not None:
            out += f" filter={node.filter}"
        if node.outputs is not None:
            out += f" outputs={_names(node.outputs)}"
        return out
    if isinstance(node, OneRow):
        return "OneRow"
    if isinstance(node, Filter):
        return f"Filter {node.predicate}"
    if isinstance(node, Project):
        return f"Project {_named(node.exprs) or '()'}"
    if isinstance(node, Join):
        conds = [f"{a} = {b}" for a, b in zip(node.left_keys, node.right_keys)]
        out = f"Join {node.kind.value} {_names(conds)}"
        for flag in ("null_aware", "single_row"):
            if getattr(node, flag):
                out += f" {flag}"
        if node.residual is not None:
            out += f" residual={node.residual}"
        if node.mark is not None:
            out += f" mark={node.mark}"
        if node.outputs is not None:
            out += f" outputs={_names(node.outputs)}"
        return out
    if isinstance(node, AsofJoin):
        conds = [f"{a} = {b}" for a, b in zip(node.left_keys, node.right_keys)]
        conds.append(f"{node.left_on} {node.op} {node.right_on}")
        out = f"AsofJoin {node.kind.value} {_names(conds)}"
        if node.left_filter is not None:
            out += f" left_filter={node.left_filter}"
        if node.residual is not None:
            out += f" residual={node.residual}"
        if node.outputs is not None:
            out += f" outputs={_names(node.outputs)}"
        return out
    if isinstance(node, InnerJoins):
        return f"InnerJoins {_names(map(str, node.conditions))}"
    if isinstance(node, Aggregate):
        aggs = ", ".join(f"{n} := {a}" for n, a in node.aggs)
        return f"Aggregate keys=[{_named(node.keys)}] aggs=[{aggs}]"
    if isinstance(node, Sort):
        out = f"Sort {_names(map(_sort_key, node.keys))}"
        if node.limit is not None:
            out += f" limit={node.limit}"
        return out + (f" offset={node.offset}" if node.offset else "")
    if isinstance(node, Limit):
        return f"Limit {node.limit}" + (f" offset={node.offset}" if node.offset else "")
    if isinstance(node, Union):
        return "Union all"
    if isinstance(node, Window):
        calls = ", ".join(f"{n} := {c}" for n, c in node.calls)
        return (f"Window partition={_names(map(str, node.partition))} "
                f"order={_names(map(_sort_key, node.order))} [{calls}]")
    if isinstance(node, Repeat):
        return f"Repeat {node.count}"
    if isinstance(node, Unnest):
        return unnest_text(node)
    if isinstance(node, Shared):
        return f"Shared {_key(node.key, keys)}"
    if isinstance(node, WorkTable):
        return f"WorkTable {_key(node.key, keys)}{' recurring' if node.recurring else ''} " \
               f"{_names(n for n, _ in node.columns)}"
    if isinstance(node, RecursiveUnion):
        using = f" using key {_names(node.keys)}" + "".join(f" {n}={a}" for n, a in node.aggs) if node.keys else ""
        return f"RecursiveUnion {_key(node.key, keys)}{' distinct' if node.distinct else ' all'}{using}"
    raise TypeError(f"no text for plan node {type(node).__name__}")


def unnest_text(node) -> str:
    """How an Unnest (plan node or operator) shows: its lists, their columns, the options."""
    pairs = ", ".join(f"{src} as {out}" for src, out in zip(node.sources, node.outs))
    return (f"Unnest {pairs}" + (f" with ordinality as {node.ordinality}" if node.ordinality else "")
            + (" keeping rows without elements" if node.keep else ""))
