"""Read only the struct fields a query uses: ``user.address.city`` scans that leaf, not ``user``.

A STRUCT column of a Parquet scan that the plan reads only through field accesses
(``struct_extract`` chains: ``s.a``, ``s.a.b``, ``s['a']``) is replaced, in the scan, by one
column per field path used -- the shortest ones: ``s.a`` when both ``s.a`` and ``s.a.b`` are
used -- and each access by a reference to that column (``s.a.b`` over the column ``s.a`` stays a
field access). The reader reads such a path as the leaves below it (pyarrow's column paths)
and hands the field over with the struct's NULLs applied (:mod:`sluice.io.parquet.decoders`),
so a query of two leaves of a wide struct reads and decodes those two leaves only, and every
operator above sees a plain column of the field's type.

Conservative by construction: a column named anywhere else than at the bottom of such a chain
(a bare reference, a name a node lists -- UNNEST sources, a union's inputs, the result's
columns -- or anything inside a lambda's body) is read whole, as is a column whose path would
be ambiguous (a field name holding a dot, a top-level column named like the path). Row groups
are never pruned on a path: the footer's statistics are taken for top-level leaves only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from sluice.expr.nodes import Col, Expr, Func
from sluice.plan.logical import PlanNode, RecursiveUnion, Scan, Union, WorkTable
from sluice.types import LType

#: A use of the whole column (no field path).
_WHOLE = None


def struct_fields(plan: PlanNode) -> PlanNode:
    """``plan`` with each scan's struct columns used only by field accesses read as those fields."""
    uses: dict[str, set | None] = {}
    _collect_plan(plan, uses)
    for n in plan.schema:  # the result's columns
        uses[n] = _WHOLE
    targets = _targets(plan, uses)
    if not targets:
        return plan
    return _rewrite_plan(plan, targets, {})


# ---------------------------------------------------------------- what each column is used as


def _chain(e: Expr) -> tuple[Expr, list[Func]]:
    """The base under a chain of field accesses by name, and the accesses (innermost first)."""
    steps: list[Func] = []
    while isinstance(e, Func) and e.op == "struct_extract" and len(e.args) == 1 \
            and e.params and isinstance(e.params[0], str):
        steps.append(e)
        e = e.args[0]
    steps.reverse()
    return e, steps


def _field_path(base: LType, steps: list[Func]) -> tuple[str, ...] | None:
    """The fields' names as the struct type spells them (accesses are case-insensitive)."""
    out = []
    t = base
    for s in steps:
        if t.kind != "struct":
            return None
        names = [n for n, _ in t.args]
        low = [n.lower() for n in names]
        want = s.params[0].lower()
        if want not in low:
            return None
        name = names[low.index(want)]
        out.append(name)
        t = t.args[low.index(want)][1]
    return tuple(out)



def _use(uses: dict, name: str, path: tuple[str, ...] | None) -> None:
    if path is None or not path:
        uses[name] = _WHOLE
    elif name not in uses:
        uses[name] = {path}
    elif uses[name] is not _WHOLE:
        uses[name].add(path)


def _collect_expr(e: Expr, uses: dict, whole: bool = False) -> None:
    if isinstance(e, Col):
        _use(uses, e.name, None)
        return
    if not isinstance(e, Func):
        return
    base, steps = _chain(e)
    if steps and isinstance(base, Col) and not whole:
        _use(uses, base.name, _field_path(base.type, steps))
        return
    if steps:
        _collect_expr(base, uses, whole)
        return
    for a in e.args:
        _collect_expr(a, uses, whole)
    for p in e.params:  # a lambda's body (its outer columns are arguments; anything here: whole)
        _collect_value(p, uses, whole=True)


def _collect_value(v, uses: dict, whole: bool = False) -> None:
    if isinstance(v, Expr):
        _collect_expr(v, uses, whole)
    elif isinstance(v, str):
        _use(uses, v, None)  # a name a node lists (UNNEST's sources, a mark, ...): the whole column
    elif isinstance(v, (tuple, list, frozenset, set)):
        for x in v:
            _collect_value(x, uses, whole)
    elif isinstance(v, dict):
        for k, x in v.items():
            _collect_value(k, uses, whole)
            _collect_value(x, uses, whole)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type) and not isinstance(v, PlanNode):
        for f in dataclasses.fields(v):
            _collect_value(getattr(v, f.name), uses, whole)


def _collect_plan(plan: PlanNode, uses: dict) -> None:
    for node in plan.walk():
        if isinstance(node, Scan):
            if node.filter is not None:
                _collect_expr(node.filter, uses)
            continue
        if isinstance(node, (Union, RecursiveUnion, WorkTable)):  # columns matched by position
            for c in node.children:
                for n in c.schema:
                    _use(uses, n, None)
        for f in dataclasses.fields(node):
            if f.name in node._children or f.name in ("outputs", "table"):
                continue
            _collect_value(getattr(node, f.name), uses)


def _targets(plan: PlanNode, uses: dict) -> dict[str, dict[tuple[str, ...], tuple[str, object]]]:
    """Scan column name -> {field path: (its column's name, its type)}, for the columns to split."""
    names = {n for node in plan.walk() for n in node.schema}
    out: dict = {}
    seen: dict[str, tuple] = {}  # a name two scans give (of other files or columns) is left whole
    for node in plan.walk():
        if isinstance(node, Scan):
            for name, file_col in node.columns.items():
                sig = (node.table.files, file_col, node.table.types.get(file_col))
                if seen.setdefault(name, sig) != sig:
                    uses[name] = _WHOLE
    for node in plan.walk():
        if not isinstance(node, Scan) or node.table.format != "parquet":
            continue
        for name, file_col in node.columns.items():
            paths = uses.get(name, _WHOLE)
            t = node.table.types.get(file_col)
            if paths is _WHOLE or t is None or t.kind != "struct" or file_col in node.table.partitions \
                    or "." in file_col:
                continue
            kept = []
            for p in sorted(paths, key=lambda p: (len(p), p)):  # (one order: every rank plans alike)
                if not any(p[:len(q)] == q for q in kept):
                    kept.append(p)
            split = {}
            for p in kept:
                ft = _type_at(t, p)
                new = f"{name}.{'.'.join(p)}"
                if ft is None or any("." in x for x in p) or f"{file_col}.{'.'.join(p)}" in node.table.types \
                        or new in names:
                    break
                split[p] = (new, ft)
            else:
                out[name] = split
    return out


def _type_at(t, path: tuple[str, ...]):
    for x in path:
        if t.kind != "struct":
            return None
        t = t.field_type(x)
        if t is None:
            return None
    return t


# ---------------------------------------------------------------- the rewrite


def _rewrite_expr(e: Expr, targets: dict) -> Expr:
    if not isinstance(e, Func):
        return e
    base, steps = _chain(e)
    if steps and isinstance(base, Col) and base.name in targets:
        path = _field_path(base.type, steps)
        split = targets[base.name]
        for p, (new, ft) in split.items():
            if path[:len(p)] == p:
                out: Expr = Col(new, ft)
                for s in steps[len(p):]:
                    out = Func(s.op, (out,), s.type, s.params)
                return out
        raise AssertionError(f"no split column for {base.name} {path}")  # _targets saw every path
    if steps:
        inner = _rewrite_expr(base, targets)
        for s in steps:
            inner = Func(s.op, (inner,), s.type, s.params)
        return inner
    args = tuple(_rewrite_expr(a, targets) for a in e.args)
    if all(a is b for a, b in zip(args, e.args)):
        return e
    return Func(e.op, args, e.type, e.params)


def _rewrite_value(v, targets: dict):
    if isinstance(v, Expr):
        return _rewrite_expr(v, targets)
    if isinstance(v, tuple):
        new = tuple(_rewrite_value(x, targets) for x in v)
        return v if all(a is b for a, b in zip(new, v)) else new
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and not isinstance(v, PlanNode):
        changes = {}
        for f in dataclasses.fields(v):
            old = getattr(v, f.name)
            new = _rewrite_value(old, targets)
            if new is not old:
                changes[f.name] = new
        return replace(v, **changes) if changes else v
    return v


def _split_names(names, targets: dict):
    out = []
    for n in names:
        out.extend(new for new, _ in targets[n].values()) if n in targets else out.append(n)
    return tuple(out)


def _rewrite_scan(scan: Scan, targets: dict) -> Scan:
    mine = {n: f for n, f in scan.columns.items() if n in targets}
    if not mine:
        return scan
    columns: dict[str, str] = {}
    types = dict(scan.table.types)
    for n, f in scan.columns.items():
        if n not in mine:
            columns[n] = f
            continue
        for p, (new, ft) in targets[n].items():
            path = f"{f}.{'.'.join(p)}"
            columns[new] = path
            types[path] = ft
    table = replace(scan.table, types=types)
    filt = _rewrite_expr(scan.filter, targets) if scan.filter is not None else None
    outputs = _split_names(scan.outputs, targets) if scan.outputs is not None else None
    return replace(scan, table=table, columns=columns, filter=filt, outputs=outputs)


def _rewrite_plan(plan: PlanNode, targets: dict, memo: dict) -> PlanNode:
    got = memo.get(id(plan))
    if got is not None:
        return got
    if isinstance(plan, Scan):
        out = _rewrite_scan(plan, targets)
    else:
        kids = [_rewrite_plan(c, targets, memo) for c in plan.children]
        out = plan.reconstruct(kids) if plan.children else plan
        changes = {}
        for f in dataclasses.fields(out):
            if f.name in out._children:
                continue
            old = getattr(out, f.name)
            new = _split_names(old, targets) if f.name == "outputs" and old is not None else _rewrite_value(old, targets)
            if new is not old and new != old:
                changes[f.name] = new
        if changes:
            out = replace(out, **changes)
    memo[id(plan)] = out
    return out
