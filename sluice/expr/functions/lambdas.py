"""LIST_TRANSFORM, LIST_FILTER and LIST_REDUCE: DuckDB's lambda functions over lists
(``lambda x: x + 1``, ``lambda x, i: ...`` with ``i`` the 1-based position), and the list
comprehension ``[f(x) for x in l if c(x)]`` that translates to them (:mod:`sluice.sql.lambdas`).

The lambda's body is an ordinary plan expression kept in the call's ``params``; it reads its
parameters and the outer columns it captured through placeholder columns, the captured
columns themselves being the call's arguments after the list (so every plan walker sees what
the body needs, and the body never names a column of the plan). A kernel evaluates the body
once over a chunk of all the elements of the chunk's lists -- the element, its position and
each captured value taken to its element's row -- so the work is whole-column, never a loop
over rows. LIST_REDUCE folds position by position (a loop over list positions, each step over
the rows still holding that many elements: a prefix of the rows ordered longest first)."""

from __future__ import annotations

import torch

from sluice.chunk import Chunk, Column, NestedValues, concat_columns, entry_rows, nested_column, row_values
from sluice.errors import ExecutionError
from sluice.expr.constants import literal_column
from sluice.expr.functions import registry
from sluice.expr.functions.registry import register
from sluice.expr.nodes import Lit
from sluice.types import INT64


def _result_type(args, params):
    return params[-1]


def _element_chunk(lst: Column, captured: list[Column], names: tuple, capture_names: tuple, n: int):
    """(row-ordered values of ``lst``, the chunk of its elements: the element, its 1-based
    position and each captured column at its element's row)."""
    rv = row_values(lst.expand(n))
    child = rv.children[0]
    rows = entry_rows(rv.offsets)
    m = len(child)
    cols = {names[0]: child}
    if len(names) > 1:
        pos = torch.arange(m, dtype=torch.int64, device=rv.offsets.device) - rv.offsets[:-1][rows] + 1
        cols[names[1]] = Column(pos, INT64)
    for name, c in zip(capture_names, captured):
        cols[name] = c.expand(n).take(rows)
    return rv, rows, Chunk(cols, m, home=rv.offsets.device)


def _evaluate_body(body, chunk: Chunk) -> Column:
    return registry.evaluator(body, chunk).expand(chunk.num_rows)


@register("list_transform", result=_result_type)
def list_transform(e, args, chunk) -> Column:
    """Each element replaced by the body's value for it; a NULL list stays NULL.
    ``params``: (body, parameter names, captured names, result type)."""
    body, names, capture_names, _ = e.params
    n = chunk.num_rows
    lst = args[0].expand(n)
    rv, _, elements = _element_chunk(lst, args[1:], names, capture_names, n)
    out = _evaluate_body(body, elements)
    return nested_column(e.type, NestedValues((out,), rv.offsets, n), lst.valid)


@register("list_filter", result=_result_type)
def list_filter(e, args, chunk) -> Column:
    """The elements for which the body (cast to BOOLEAN at translation) is TRUE, in order."""
    body, names, capture_names, _ = e.params
    n = chunk.num_rows
    lst = args[0].expand(n)
    rv, rows, elements = _element_chunk(lst, args[1:], names, capture_names, n)
    keep = _evaluate_body(body, elements)
    mask = keep.data if keep.valid is None else keep.data & keep.valid
    sizes = torch.zeros(n, dtype=torch.int64, device=mask.device)
    sizes.scatter_add_(0, rows, mask.to(torch.int64))
    offsets = torch.zeros(n + 1, dtype=torch.int64, device=mask.device)
    torch.cumsum(sizes, 0, out=offsets[1:])
    child = rv.children[0].take(mask.nonzero().squeeze(1))
    return nested_column(e.type, NestedValues((child,), offsets, n), lst.valid)


@register("list_reduce", result=_result_type)
def list_reduce(e, args, chunk) -> Column:
    """The body folded over the elements left to right: the accumulator starts at the first
    element (or the initial value, then every element is folded in); an empty list without an
    initial value is an error (DuckDB's), a NULL list gives NULL. ``params``: (body, (acc, x[, i])
    names, captured names, whether an initial value is the last argument, result type).

    The rows are ordered longest list first, so the rows still folding at position k are a
    prefix of that order that only shrinks: each step evaluates the body over that prefix, and
    the rows that have ended keep their value -- the work is the elements', not rows times the
    longest list (one list of 10,000 among a million short ones is 10,000 short steps)."""
    body, names, capture_names, has_initial, first_cast, _ = e.params
    n = chunk.num_rows
    lst = args[0].expand(n)
    captured = [c.expand(n) for c in (args[1:len(args) - 1] if has_initial else args[1:])]
    rv = row_values(lst)
    child = rv.children[0]
    dev = rv.offsets.device
    starts, sizes = rv.offsets[:-1], rv.offsets[1:] - rv.offsets[:-1]
    live = torch.ones(n, dtype=torch.bool, device=dev) if lst.valid is None else lst.valid.reshape(-1).expand(n)
    if has_initial:
        acc = args[-1].expand(n)
        first = 0
    else:
        if bool((live & (sizes == 0)).any()):
            raise ExecutionError("Cannot perform list_reduce on an empty input list")
        firsts = Chunk({names[1]: _take_clamped(child, starts, n)}, n, home=dev)
        acc = _evaluate_body(first_cast, firsts)
        first = 1
    steps = torch.where(live, sizes, 0)
    order = torch.argsort(steps, descending=True, stable=True)
    # rows still folding at each position k: how many lists are longer than k (one sync)
    longest = int(steps.max()) if n else 0
    going = torch.zeros(longest + 1, dtype=torch.int64, device=dev)
    going.index_add_(0, steps, torch.ones_like(steps))
    going = (going.flip(0).cumsum(0).flip(0)[1:]).tolist() if longest else []
    active, done, done_rows = acc.take(order), [], []
    for k in range(first, longest):  # over list positions; each step over the rows still going
        c = going[k]
        if c < len(active):  # rows whose lists ended: their values are final
            done.append(active.take(torch.arange(c, len(active), device=dev)))
            done_rows.append(order[c:len(active)])
            active = active.take(torch.arange(c, device=dev))
        rows = order[:c]
        cols = {names[0]: active, names[1]: child.take(starts[rows] + k)}
        if len(names) > 2:
            cols[names[2]] = Column(torch.full((c,), k + 1, dtype=torch.int64, device=dev), INT64)
        for name, col in zip(capture_names, captured):
            cols[name] = col.take(rows)
        active = _as_type(_evaluate_body(body, Chunk(cols, c, home=dev)), acc)
    done.append(active)
    done_rows.append(order[:len(active)])
    out = concat_columns(done) if len(done) > 1 else done[0]
    back = torch.empty(n, dtype=torch.int64, device=dev)
    back[torch.cat(done_rows)] = torch.arange(n, device=dev)
    out = out.take(back)
    valid = live if out.valid is None else out.valid & live
    return Column(out.data, out.type, valid, out.dictionary)


def _take_clamped(child: Column, idx: torch.Tensor, n: int) -> Column:
    if len(child) == 0:
        return literal_column(Lit(None, child.type), idx.device).expand(n)
    return child.take(idx.clamp(0, len(child) - 1))


def _as_type(step: Column, acc: Column) -> Column:
    """A step's value as a column of the accumulator's type (a constant body: its rows)."""
    return Column(step.data, acc.type, step.valid, step.dictionary, step.wide)
