"""HISTOGRAM(x, bins): DuckDB's binned histogram, a MAP from each bin's upper bound to the count
of values above the previous bound and up to it, and -- only where some value lies above every
bound -- the type's largest value (the largest integer, ``inf``, ``''`` for text) to those.

Why a rewrite: with constant bounds each bin is one COUNT of a CASE, so the histogram is a MAP
of plain counts built after the aggregation -- every path (chunks, spilling, ranks) merges
counts already. The bounds must be a constant list of numbers or strings (sorted, duplicates
one bin, as DuckDB); other forms are refused in one line. Rewritten in place in a SELECT's
clauses once the FROM clause is translated (the argument's type picks the bins' type), like
COMBINE_AGGR (:mod:`sluice.sql.agg_states`).
"""

from __future__ import annotations

import decimal

from sqlglot import exp

from sluice.errors import PlanError, UnsupportedError
from sluice.sql.agg_states import _parents, _template
from sluice.types import LType

#: More bounds than this are refused (each is one COUNT of the aggregation).
MAX_BINS = 256
_INT_MAX = {"int8": 2 ** 7 - 1, "int16": 2 ** 15 - 1, "int32": 2 ** 31 - 1, "int64": 2 ** 63 - 1}
_INT_NAMES = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT"}


def is_binned_histogram(n: exp.Expression) -> bool:
    return isinstance(n, exp.Anonymous) and str(n.this).lower() == "histogram" and len(n.expressions) == 2


def _bound(e: exp.Expression):
    """A bound's Python value: an int, a Decimal or a str (None: not a constant)."""
    sign = 1
    if isinstance(e, exp.Neg):
        sign, e = -1, e.this
    if isinstance(e, exp.Null):
        raise PlanError("Histogram bin entry cannot be NULL")
    if not isinstance(e, exp.Literal):
        return None
    if e.is_string:
        return e.this if sign == 1 else None
    text = e.this
    try:
        return sign * int(text)
    except ValueError:
        return sign * decimal.Decimal(text)


def _bins(node: exp.Expression, arg_type: LType):
    """The sorted distinct bounds as SQL literals of the key type, and the overflow key."""
    if not isinstance(node, exp.Array):
        raise UnsupportedError("HISTOGRAM with bins that are not a constant list")
    values = [_bound(e) for e in node.expressions]
    if any(v is None for v in values):
        raise UnsupportedError("HISTOGRAM with bins that are not constants")
    if len(values) > MAX_BINS:
        raise UnsupportedError(f"HISTOGRAM with more than {MAX_BINS} bins")
    texts = [isinstance(v, str) for v in values]
    if arg_type.kind == "string" and all(texts):
        quoted = [v.replace("'", "''") for v in sorted(set(values))]
        return [f"'{v}'" for v in quoted], "''", "VARCHAR"
    if any(texts) or not (arg_type.is_numeric or arg_type.kind == "null"):
        raise UnsupportedError(f"HISTOGRAM of a {arg_type} value with these bins (numbers or strings only)")
    exact = arg_type.is_integer and all(isinstance(v, int) for v in values)
    if exact and not values:  # (no bounds: the key is the argument's own type, as in DuckDB)
        name = _INT_NAMES[arg_type.kind]
        return [], f"CAST({_INT_MAX[arg_type.kind]} AS {name})", name
    if exact:
        wide = arg_type.kind == "int64" or any(not -2 ** 31 <= v < 2 ** 31 for v in values)
        kind = "int64" if wide else "int32"
        name = "BIGINT" if wide else "INTEGER"
        if any(not -2 ** 63 <= v < 2 ** 63 for v in values):
            raise UnsupportedError("HISTOGRAM with bins beyond BIGINT")
        return [f"CAST({v} AS {name})" for v in sorted(set(values))], f"CAST({_INT_MAX[kind]} AS {name})", name
    floats = sorted(set(float(v) for v in values))
    return [f"CAST('{v!r}' AS DOUBLE)" for v in floats], "CAST('inf' AS DOUBLE)", "DOUBLE"


def binned_histogram(node: exp.Anonymous, arg_type: LType) -> exp.Expression:
    """The tree of HISTOGRAM(x, bins) as counts per bin in a MAP."""
    x, bins = node.expressions
    keys, over, type_name = _bins(bins, arg_type)
    v = f"CAST(__sluice_x AS {type_name})"
    if type_name == "DOUBLE":  # (NaN falls in the first bin in DuckDB: its binary search over `<`)
        v = f"CASE WHEN isnan({v}) THEN CAST('-inf' AS DOUBLE) ELSE {v} END"
    counts = []
    for i, k in enumerate(keys):
        low = f"{v} > {keys[i - 1]} AND " if i else ""
        counts.append(f"count(CASE WHEN {low}{v} <= {k} THEN 1 END)")
    above = f"count(CASE WHEN {v} > {keys[-1]} THEN 1 END)" if keys else "count(__sluice_x)"
    if not keys:
        sql = f"CASE WHEN count(__sluice_x) = 0 THEN NULL ELSE MAP([{over}], [count(__sluice_x)]) END"
    else:
        sql = (f"CASE WHEN count(__sluice_x) = 0 THEN NULL WHEN {above} = 0 THEN MAP([{', '.join(keys)}], "
               f"[{', '.join(counts)}]) ELSE MAP([{', '.join(keys)}, {over}], [{', '.join(counts)}, {above}]) END")
    return _template(sql, __sluice_x=x)


def binned_histograms(tr, clauses: list, ctx) -> None:
    """Each HISTOGRAM(x, bins) in a SELECT's clauses (not inside a subquery) replaced, in place,
    by its counts (:func:`binned_histogram`)."""
    for i, clause in enumerate(clauses):
        if clause is None:
            continue
        for n in [n for n in clause.walk() if is_binned_histogram(n)]:
            if any(isinstance(p, exp.Query) for p in _parents(n, clause)):
                continue
            if isinstance(n.parent, exp.Window) or isinstance(n.parent, exp.Filter):
                raise UnsupportedError("HISTOGRAM with bins over a window or with FILTER")
            new = binned_histogram(n, tr.expr(n.expressions[0], ctx).type)
            n.replace(new)
            if n is clause:  # (the clause itself: the caller's list holds the new tree)
                clauses[i] = clause = new
