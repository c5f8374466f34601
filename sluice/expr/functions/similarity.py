"""String similarity and distance functions of two strings, as DuckDB defines them: LEVENSHTEIN
(EDITDIST3), DAMERAU_LEVENSHTEIN, HAMMING (MISMATCHES), JARO_SIMILARITY,
JARO_WINKLER_SIMILARITY (both with DuckDB's optional score cutoff) and JACCARD. All count
Unicode code points, not bytes (DuckDB: ``levenshtein('héllo', 'hello')`` is 1,
``levenshtein('e' || chr(769), 'x')`` 2).

A string column is int32 codes into a host dictionary, and pyarrow has none of these, so each
runs on the host once per distinct *pair* of strings a chunk holds, never per row:

- a constant against a column: once per dictionary entry of the column, gathered by code;
- two columns: the rows' code pairs ``code_a * len(dict_b) + code_b`` are made unique with
  ``torch.unique`` (on the chunk's device), each distinct pair is computed once on the host and
  the results are gathered back through the inverse index;
- two constants: once.

HAMMING of strings of different lengths (or empty) and JACCARD of an empty string are errors in
DuckDB; here they are per-row checks (:func:`sluice.kernels.checks.fail_if`) over the valid
rows, so that a CASE guarding them keeps DuckDB's answer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, host_tensor, to_device
from sluice.errors import PlanError
from sluice.expr.functions.common import and_valid
from sluice.expr.functions.registry import register
from sluice.kernels.checks import fail_if
from sluice.types import FLOAT64, INT64, STRING
from sluice.expr.nodes import Lit

# ------------------------------------------------------------------ the measures (host, per pair)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute: 1 each) by Myers' / Hyyro's bit-parallel
    algorithm, one Python integer as the bit vector of ``a`` (any length)."""
    if not a:
        return len(b)
    if not b:
        return len(a)
    peq: dict[str, int] = {}
    for i, ch in enumerate(a):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    mask = (1 << len(a)) - 1
    last = 1 << (len(a) - 1)
    pv, mv, score = mask, 0, len(a)
    for ch in b:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & last:
            score += 1
        elif mh & last:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
    return score


def damerau_levenshtein(a: str, b: str) -> int:
    """The unrestricted Damerau-Levenshtein distance (Lowrance-Wagner: adjacent transpositions
    may be edited further, DuckDB's ``damerau_levenshtein('CA', 'ABC')`` is 2)."""
    n, m = len(a), len(b)
    if not n or not m:
        return n + m
    big = n + m
    last_row: dict[str, int] = {}
    # d[i + 1][j + 1] is the distance of a[:i] and b[:j]; row and column 0 hold ``big``
    d = [[big] * (m + 2) for _ in range(n + 2)]
    for i in range(n + 1):
        d[i + 1][1] = i
    for j in range(m + 1):
        d[1][j + 1] = j
    for i in range(1, n + 1):
        last_col = 0
        ai = a[i - 1]
        row, prev = d[i + 1], d[i]
        for j in range(1, m + 1):
            k = last_row.get(b[j - 1], 0)
            l_ = last_col
            if ai == b[j - 1]:
                cost = 0
                last_col = j
            else:
                cost = 1
            row[j + 1] = min(prev[j] + cost, row[j] + 1, prev[j + 1] + 1,
                             d[k][l_] + (i - k - 1) + 1 + (j - l_ - 1))
        last_row[ai] = i
    return d[n + 1][m + 1]


def hamming(a: str, b: str) -> int | None:
    """Positions whose code points differ; None (an error) when the lengths differ or are 0."""
    if len(a) != len(b) or not a:
        return None
    return sum(x != y for x, y in zip(a, b))


def jaro(a: str, b: str) -> float:
    """Jaro similarity: matches within ``max(len) // 2 - 1`` positions (at least 0), half the
    out-of-order matches as transpositions; 0 when either string is empty. The arithmetic is
    DuckDB's (rapidfuzz's): ``(m/|a| + m/|b| + (m - t)/m) / 3``, summed in that order."""
    n, m = len(a), len(b)
    if not n or not m:
        return 0.0
    bound = max(max(n, m) // 2 - 1, 0)
    taken = [False] * m
    matched_a = []
    for i, ch in enumerate(a):
        for j in range(max(0, i - bound), min(m, i + bound + 1)):
            if not taken[j] and b[j] == ch:
                taken[j] = True
                matched_a.append(ch)
                break
    common = len(matched_a)
    if not common:
        return 0.0
    matched_b = [b[j] for j in range(m) if taken[j]]
    trans = sum(x != y for x, y in zip(matched_a, matched_b)) // 2
    sim = 0.0
    sim += common / n
    sim += common / m
    sim += (common - trans) / common
    return sim / 3.0


def jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler: a Jaro similarity above 0.7 gains 0.1 per common leading code point (up
    to 4) of what it lacks to 1."""
    sim = jaro(a, b)
    if sim > 0.7:
        prefix = 0
        for x, y in zip(a[:4], b[:4]):
            if x != y:
                break
            prefix += 1
        sim += prefix * 0.1 * (1.0 - sim)
    return sim


def jaccard(a: str, b: str) -> float | None:
    """|A & B| / |A | B| of the two strings' sets of code points; None (an error) when either
    string is empty."""
    if not a or not b:
        return None
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb)


#: name -> (result type, measure, error message when the measure gives None).
MEASURES = {
    "levenshtein": (INT64, levenshtein, None),
    "damerau_levenshtein": (INT64, damerau_levenshtein, None),
    "hamming": (INT64, hamming, "HAMMING: the strings must have the same length, at least 1"),
    "jaro_similarity": (FLOAT64, jaro, None),
    "jaro_winkler_similarity": (FLOAT64, jaro_winkler, None),
    "jaccard": (FLOAT64, jaccard, "JACCARD: an argument is empty"),
}


# ------------------------------------------------------------------ per distinct pair


def _entries(c: Column) -> list:
    d = c.dictionary
    if d.type != pa.string():
        d = d.cast(pa.string())
    return d.to_pylist()


def _const_value(c: Column):
    if c.valid is not None and not bool(c.valid):
        return None
    return c.dictionary[int(c.data)].as_py()


def pairwise(a: Column, b: Column, fn, dtype) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """``fn`` of the two strings of every row: (values, rows where ``fn`` gave None or None if
    none did, the values' validity). Computed once per distinct pair of strings (the module's
    docstring); NULL rows hold 0."""
    np_dtype = np.int64 if dtype == torch.int64 else np.float64
    valid = and_valid(a.valid, b.valid)
    device = a.data.device if not a.is_const else b.data.device

    def host(vals: list) -> tuple[torch.Tensor, torch.Tensor | None]:
        bad = np.fromiter((v is None for v in vals), np.bool_, len(vals))
        out = np.fromiter((0 if v is None else v for v in vals), np_dtype, len(vals))
        return (to_device(host_tensor(out), device),
                to_device(host_tensor(bad), device) if bad.any() else None)

    if a.is_const and b.is_const:
        x, y = _const_value(a), _const_value(b)
        vals, bad = host([0 if x is None or y is None else fn(x, y)])
        return vals[0], (None if bad is None else bad[0]), valid
    if a.is_const or b.is_const:
        const, col = (a, b) if a.is_const else (b, a)
        s = _const_value(const)
        n = len(col)
        if s is None or not len(col.dictionary):
            return (torch.zeros(n, dtype=dtype, device=device), None,
                    torch.zeros(n, dtype=torch.bool, device=device))
        entries = _entries(col)
        vals = [0 if e is None else (fn(s, e) if a.is_const else fn(e, s)) for e in entries]
        per, bad = host(vals)
        codes = col.data.long()
        if col.valid is not None:
            codes = torch.where(col.valid, codes, torch.zeros_like(codes))
        return per[codes], (None if bad is None else bad[codes]), valid
    n = len(a)
    na, nb = len(a.dictionary), len(b.dictionary)
    if not na or not nb:
        return (torch.zeros(n, dtype=dtype, device=device), None,
                torch.zeros(n, dtype=torch.bool, device=device))
    ca, cb = a.data.long(), b.data.long()
    if valid is not None:
        ca = torch.where(valid, ca, torch.zeros_like(ca))
        cb = torch.where(valid, cb, torch.zeros_like(cb))
    uniq, inverse = torch.unique(ca * nb + cb, return_inverse=True)
    u = uniq.cpu().numpy()
    xs = a.dictionary.take(pa.array(u // nb))
    ys = b.dictionary.take(pa.array(u % nb))
    xs = (xs if xs.type == pa.string() else xs.cast(pa.string())).to_pylist()
    ys = (ys if ys.type == pa.string() else ys.cast(pa.string())).to_pylist()
    vals = [0 if x is None or y is None else fn(x, y) for x, y in zip(xs, ys)]
    per, bad = host(vals)
    return per[inverse], (None if bad is None else bad[inverse]), valid


# ------------------------------------------------------------------ registration


def _bind_two_strings(name: str, result):
    def bind(args, params):
        out = []
        for x in args:
            if isinstance(x, Lit) and x.value is None and x.type.kind != "string":
                x = Lit(None, STRING)
            if x.type.kind != "string":
                raise PlanError(f"{name.upper()} needs two strings, got {x.type}")
            out.append(x)
        if len(out) != 2:
            raise PlanError(f"{name.upper()} needs two strings")
        return out, result
    return bind


def similarity(e, args, chunk) -> Column:
    """One of :data:`MEASURES` per row; ``e.params``: the score cutoff of the Jaro functions
    (a similarity below it is 0; a NULL cutoff makes every row NULL), or nothing."""
    a, b = args
    t, fn, message = MEASURES[e.op]
    if e.params and e.params[0] is None:
        n = len(a) if not a.is_const else len(b)
        shape = () if a.is_const and b.is_const else (n,)
        device = a.data.device if not a.is_const else b.data.device
        return Column(torch.zeros(shape, dtype=t.torch_dtype, device=device), t,
                      torch.zeros(shape, dtype=torch.bool, device=device))
    if e.params:
        cutoff = float(e.params[0])
        base = fn

        def fn(x, y):
            sim = base(x, y)
            return sim if sim >= cutoff else 0.0
    values, bad, valid = pairwise(a, b, fn, t.torch_dtype)
    if bad is not None:
        if bad.dim() == 0 and chunk is not None:  # two constants: a check per row of the chunk, so
            bad = bad.expand(chunk.num_rows)      # that a CASE none of whose rows take it keeps none
        fail_if(bad, message, valid)
    return Column(values, t, valid)


for _name, (_t, _, _) in MEASURES.items():
    register(_name, bind=_bind_two_strings(_name, _t))(similarity)
