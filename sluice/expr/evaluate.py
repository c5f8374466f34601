"""Evaluate plan expressions over a chunk with tensor operations.

Columns are looked up, constants become 0-d tensors that broadcast, and a function runs its
kernel from :mod:`sluice.expr.functions` over its evaluated arguments. NULLs follow SQL's
three-valued logic there: a kernel's validity is the AND of its inputs' validity, except
AND/OR/CASE/COALESCE/IS NULL. Equal sub-expressions over one chunk are computed once.
"""

from __future__ import annotations

import torch

from sluice.chunk import Chunk, Column
from sluice.kernels.buffers import count_true, positions
from sluice.errors import ExecutionError, UnsupportedError
from sluice.expr.functions import find, registry
from sluice.expr.constants import column_scalar, literal_column  # noqa: F401 - re-exported
from sluice.expr.infinite_dates import call_over_infinities
from sluice.expr.nodes import Col, Expr, Func, Lit
from sluice.kernels.checks import deferred_checks, deferring
from sluice.types import common_numeric

_CPU = torch.device("cpu")


def evaluate(e: Expr, chunk: Chunk, memo: dict | None = None) -> Column:
    """``e`` over ``chunk``. With a ``memo`` (a dict the caller keeps for one chunk), equal
    sub-expressions of the expressions evaluated with it are computed once (TPC-H Q1's
    ``l_extendedprice * (1 - l_discount)``, in two aggregates)."""
    if isinstance(e, Col):
        return chunk.columns[e.name]
    if isinstance(e, Lit):
        return literal_column(e, chunk.device)
    if memo is not None:
        hit = memo.get(e)
        if hit is not None:
            return hit
        out = memo[e] = _evaluate_func(e, chunk, memo)
        return out
    return _evaluate_func(e, chunk)


def _evaluate_func(e: Expr, chunk: Chunk, memo: dict | None = None) -> Column:
    """The function's kernel (:mod:`sluice.expr.functions`) over its evaluated arguments."""
    assert isinstance(e, Func)
    for a in e.args:
        if isinstance(a, Col) and chunk.columns[a.name].wide is not None:
            raise ExecutionError(f"{a.name} is a SUM exceeding 64 bits; it can only be output, not computed with")
    if e.op == "try":
        return _try(e, chunk)
    fn = find(e.op)
    if fn is None:
        raise UnsupportedError(f"function {e.op} is not supported")
    args = _guarded_args(e, chunk) if e.op in _GUARDED else [evaluate(a, chunk, memo) for a in e.args]
    if any(a.type.is_temporal for a in args):  # DuckDB's 'infinity' dates answered or refused
        return call_over_infinities(e, fn.kernel, args, chunk)
    return fn.kernel(e, args, chunk)


#: Functions whose later arguments decide the result only on some rows.
_GUARDED = frozenset({"case", "coalesce", "and", "or"})
#: Errors a value can cause (an unsupported construct raises again over any rows).
_VALUE_ERRORS = (ExecutionError, UnsupportedError)


def _guarded_args(e: Func, chunk: Chunk) -> list[Column]:
    if deferring(chunk.device) is not None:
        got = _guarded_args_deferred(e, chunk)
        if got is not None:
            return got
    return _guarded_args_now(e, chunk)


def _guarded_args_deferred(e: Func, chunk: Chunk) -> list[Column] | None:
    """The guard without a host wait (checks deferred, as on a GPU): each argument's checks keep
    their failing rows, and only the rows where the argument decides the result count -- one
    flag per check added to the query's deferred checks, read when the query ends. None (the
    waiting path decides) when an argument raises at once, has a check that is not per row,
    or -- AND / OR -- when more than one argument has checks."""
    outer = deferring(chunk.device)
    n = chunk.num_rows
    cols: list[Column] = []
    masks: list[list] = []
    for i, a in enumerate(e.args):
        if i == 0 and e.op in ("case", "coalesce"):  # every row needs it: deferred as usual
            cols.append(evaluate(a, chunk))
            masks.append([])
            continue
        try:
            with deferred_checks(rows=n) as sink:
                col = evaluate(a, chunk)
        except Exception:  # noqa: BLE001 - the waiting path evaluates it again and decides
            return None
        if sink.unmapped:
            return None
        cols.append(col)
        masks.append(sink.masks)
    checked = [i for i, m in enumerate(masks) if m]
    if e.op in ("and", "or") and len(checked) > 1:
        return None
    for i in checked:
        prev = [c for j, c in enumerate(cols) if j != i] if e.op in ("and", "or") else cols[:i]
        need = _deciding_rows(e.op, prev, len(e.args), n, chunk.device)
        for bad, message, error in masks[i]:
            outer.add(bad & need, message, error)  # (a row mask: an enclosing TRY places it)
    return cols


def _guarded_args_now(e: Func, chunk: Chunk) -> list[Column]:
    """The arguments of CASE, COALESCE, AND, OR. Each is evaluated over the whole chunk (the
    fast path); one that raises (a cast of a string that is no number, an overflow) is
    evaluated again over only the rows where it decides the result -- as in DuckDB, where
    ``CASE WHEN s SIMILAR TO '[0-9]+' THEN CAST(s AS INT) END`` is no error. The error stands
    when one of those rows causes it."""
    if e.op in ("and", "or"):  # commutative: an argument that raises waits for the others
        done: dict[int, Column] = {}
        failed = []
        for i, a in enumerate(e.args):
            try:
                done[i] = _raising_now(a, chunk)
            except _VALUE_ERRORS:
                failed.append(i)
        for i in failed:
            done[i] = _on_deciding_rows(e, i, list(done.values()), chunk)
        return [done[i] for i in range(len(e.args))]
    out: list[Column] = []
    for i, a in enumerate(e.args):
        if i == 0:  # every row needs CASE's first condition and COALESCE's first argument
            out.append(evaluate(a, chunk))
            continue
        try:
            out.append(_raising_now(a, chunk))
        except _VALUE_ERRORS:
            out.append(_on_deciding_rows(e, i, out, chunk))
    return out


def _try(e: Func, chunk: Chunk) -> Column:
    """TRY(x): x, and NULL on the rows where x fails a value check (overflow, a conversion, out
    of range: DuckDB's TRY). x is evaluated with every check deferred and kept per row, even on
    the CPU, so the failing rows are known without evaluating anything twice. A check that is
    not per row (over a dictionary, a reduced flag) or an error raised at once makes the whole
    result NULL where x holds no column (a constant: every row fails alike) and is refused
    otherwise -- never a NULL for a row that did not fail."""
    a, = e.args
    n = chunk.num_rows
    constant = not any(isinstance(x, Col) for x in a.walk())
    null = literal_column(Lit(None, e.type), chunk.device)
    try:
        with deferred_checks(rows=n, everywhere=True) as sink:
            col = evaluate(a, chunk)
    except ExecutionError as err:
        if constant:
            return null
        raise UnsupportedError(f"TRY of an error sluice finds for a whole chunk, not per row ({err})") from None
    for message, error in sink.failed():
        if error is not ExecutionError:
            raise error(message)
        if not constant:
            raise UnsupportedError(f"TRY of an error sluice finds for a whole chunk, not per row ({message})")
        return null
    bad = None
    for mask, message, error in sink.masks:
        if error is not ExecutionError:
            if bool(mask.any()):
                raise error(message)
            continue
        bad = mask if bad is None else bad | mask
    if bad is None:
        return col
    col = col.expand(n)
    return Column(col.data, col.type, ~bad if col.valid is None else col.valid & ~bad, col.dictionary)


def _raising_now(a: Expr, chunk: Chunk) -> Column:
    """``a`` over the whole chunk, its value checks raising here rather than at the query's end:
    on a GPU the checks are deferred (kernels/checks.py), and a deferred failure would escape
    the guard above and fail the query for rows that never needed the argument (it did, on an
    H200: ``CASE WHEN f < 1e9 THEN CAST(f AS INTEGER) END`` over an infinite f). The flags are
    read (one sync) only where the argument has checks at all. Should the argument fail some
    other way (a wrapped value used as a size), a check that failed first is the error."""
    with deferred_checks() as checks:
        try:
            col = evaluate(a, chunk)
        except Exception:
            checks.raise_pending()
            raise
    checks.raise_pending()
    return col


def _on_deciding_rows(e: Func, i: int, prev: list[Column], chunk: Chunk) -> Column:
    """Argument ``i`` of ``e`` evaluated over the rows where ``prev`` leave the result open."""
    dev = chunk.device
    need = _deciding_rows(e.op, prev, len(e.args), chunk.num_rows, dev)
    idx = need.nonzero().squeeze(1)
    a = e.args[i]
    if int(idx.numel()) == chunk.num_rows:
        return evaluate(a, chunk)  # raises again: every row needs it
    if not int(idx.numel()):  # no row needs it (a constant argument raises even over no rows)
        return _scatter(None, idx, chunk.num_rows, a.type, dev)
    return _scatter(evaluate(a, chunk.take(idx)), idx, chunk.num_rows, a.type, dev)


def _deciding_rows(op: str, prev: list[Column], nargs: int, n: int, device) -> torch.Tensor:
    """Rows where the next argument (after ``prev``) can change the result."""
    def holds(c):  # TRUE (not NULL)
        c = c.expand(n)
        return c.data if c.valid is None else c.data & c.valid

    def null(c):
        c = c.expand(n)
        return torch.zeros(n, dtype=torch.bool, device=c.data.device) if c.valid is None else ~c.valid

    need = torch.ones(n, dtype=torch.bool, device=device)
    i = len(prev)
    if op == "and":
        for c in prev:
            need &= holds(c) | null(c)
    elif op == "or":
        for c in prev:
            need &= ~holds(c)
    elif op == "coalesce":
        for c in prev:
            need &= null(c)
    else:  # case: cond, value, cond, value, ..., else
        for j in range(0, min(i, nargs - 1), 2):
            if j == i - 1:  # this argument is cond j's value
                need &= holds(prev[j])
            else:
                need &= ~holds(prev[j])
    return need


def _scatter(c: Column, idx: torch.Tensor, n: int, t, device) -> Column:
    """A column of ``n`` rows holding ``c`` at ``idx`` and NULL elsewhere."""
    if int(idx.numel()) == 0:
        return literal_column(Lit(None, t), device).expand(n)
    c = c.expand(int(idx.numel()))
    data = torch.zeros(n, dtype=c.data.dtype, device=c.data.device)
    data[idx] = c.data
    valid = torch.zeros(n, dtype=torch.bool, device=c.data.device)
    valid[idx] = True if c.valid is None else c.valid
    return Column(data, c.type, valid, c.dictionary)


def evaluate_predicate(e: Expr, chunk: Chunk) -> torch.Tensor:
    """A boolean mask of rows where ``e`` is TRUE (NULL counts as false)."""
    c = evaluate(e, chunk)
    m = c.data if c.valid is None else (c.data & c.valid)
    if m.dim() == 0:
        m = m.expand(chunk.num_rows)
    return m


#: Conjunctions over fewer rows are evaluated whole (the bookkeeping would cost more).
SELECTIVE_MIN_ROWS = 4096
#: ... and compacted to the rows still in once the conjuncts so far keep at most this share.
SELECTIVE_COMPACT = 0.5
_ORDER: dict = {}  # conjunction -> pass rate of each conjunct, as measured on earlier chunks
_ORDER_MAX = 512


def predicate_positions(e: Expr, chunk: Chunk, selective: bool = True) -> torch.Tensor:
    """The int64 positions of the rows of ``chunk`` where ``e`` is TRUE.

    A conjunction over a host chunk is evaluated conjunct by conjunct, the most selective first
    (pass rates measured on the chunks before), and once those so far keep half the rows or
    fewer, the next ones run only over the rows still in -- a selection as DuckDB's filters
    have. TPC-H q19's lineitem filter (three OR-ed quantity ranges, a ship mode, an
    instruction) spent more on its OR-ed ranges over every row than on decoding. A conjunct
    that raises over those rows sends the chunk to the whole-chunk evaluation, whose guard
    decides (as it does for AND); so does a chunk under deferred checks or on a GPU, where
    positions would cost a host wait. ``selective=False`` (the ``selective_filters`` setting
    off): the whole predicate over every row."""
    n = chunk.num_rows
    if (not selective or not (isinstance(e, Func) and e.op == "and") or n < SELECTIVE_MIN_ROWS or chunk.device.type != "cpu"
            or deferring(chunk.device) is not None or not chunk.columns):
        return positions(evaluate_predicate(e, chunk))
    args = e.args
    try:
        rates = _ORDER.get(e)
    except TypeError:  # a node holding an unhashable parameter: no order is learned for it
        return positions(evaluate_predicate(e, chunk))
    order = sorted(range(len(args)), key=rates.__getitem__) if rates else list(range(len(args)))
    seen = list(rates) if rates else [1.0] * len(args)
    cur, at, acc, rows = chunk, None, None, n  # rows of cur in chunk (None: all); mask over cur
    before = n
    try:
        for k, i in enumerate(order):
            m = evaluate_predicate(args[i], cur)
            if acc is None:  # (it may be a column's own data: never written in place)
                acc, owned = m, False
            elif owned:
                acc.logical_and_(m)
            else:
                acc, owned = acc & m, True
            kept = count_true(acc)
            seen[i] = kept / before if before else 0.0
            if kept == 0:
                _remember(e, seen)
                return torch.zeros(0, dtype=torch.int64)
            before = kept
            if k == len(order) - 1:
                break
            if kept > SELECTIVE_COMPACT * rows:
                continue
            rest = order[k + 1:]
            need = set().union(*(args[j].columns() for j in rest))
            # Worth a gather of each column the rest reads only where they compute more than
            # two operations a column (q06's five compares of three columns: no; q19's OR-ed
            # ranges of one column: yes) -- and only when none of them can raise for a row:
            # over the rows still in, a row the whole chunk's guard would count (an earlier
            # conjunct NULL there) is not seen, and whether the query fails would depend on
            # the order the pass rates chose.
            if sum(_operations(args[j]) for j in rest) > 2 * len(need) and all(_row_safe(args[j]) for j in rest):
                p = positions(acc)
                at = p if at is None else at.index_select(0, p)
                cur = Chunk({c: col.take(p) for c, col in cur.columns.items() if c in need}, kept, home=cur.device)
                acc, rows = None, kept
    except _VALUE_ERRORS:
        return positions(evaluate_predicate(e, chunk))
    _remember(e, seen)
    p = positions(acc) if acc is not None else torch.arange(rows)
    return p if at is None else at.index_select(0, p)


#: Functions that raise for no row value (an invalid pattern or list fails for every row alike).
_SAFE_OPS = frozenset({"and", "or", "not", "is_null", "is_not_null", "like", "not_like", "ilike", "not_ilike", "in"})
_COMPARES = frozenset({"=", "<>", "<", "<=", ">", ">="})


def _row_safe(e: Expr) -> bool:
    """Whether evaluating ``e`` can raise for no row: connectives, IS NULL, LIKE, IN and
    comparisons of columns and literals of one type (no conversion that could overflow)."""
    for x in e.walk():
        if not isinstance(x, Func):
            continue
        if x.op in _SAFE_OPS:
            continue
        if x.op in _COMPARES and all(isinstance(a, (Col, Lit)) for a in x.args):
            cols = [a for a in x.args if isinstance(a, Col)]
            if all(a.type == x.args[0].type for a in x.args) or (len(cols) == 1 and _widest(x.args) == cols[0].type):
                continue
        return False
    return True


def _widest(args) -> object:
    try:
        return common_numeric(*(a.type for a in args))
    except Exception:  # noqa: BLE001 - not numeric: not a safe comparison
        return None


def _operations(e: Expr) -> int:
    return sum(1 for x in e.walk() if isinstance(x, Func))


def _remember(e: Expr, rates: list[float]) -> None:
    if len(_ORDER) >= _ORDER_MAX:
        _ORDER.clear()
    _ORDER[e] = rates


def evaluate_constant(e: Func) -> Lit:
    c = evaluate(e, Chunk({}, 1, home=_CPU))
    return Lit(column_scalar(c), e.type)


registry.evaluator = evaluate  # lambda bodies are evaluated by their kernels (expr/functions/lambdas.py)
