"""Evaluate plan expressions over a chunk with tensor operations.

Constants are 0-d tensors that broadcast. NULLs follow SQL's three-valued logic: every
operator's validity is the AND of its inputs' validity, except AND/OR/CASE/COALESCE/IS NULL.
String operations run once per dictionary entry on the host (pyarrow.compute) and come back
as a gather by code.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Chunk, Column, host_tensor, unify_dictionaries
from sluice.errors import ExecutionError, UnsupportedError
from sluice.exec.kernels import dates
from sluice.plan.expr import Col, Expr, Func, Lit
from sluice.types import LType

_CPU = torch.device("cpu")


#: Per-chunk results of sub-expressions, so an expression used twice (TPC-H Q1's
#: ``l_extendedprice * (1 - l_discount)``) is computed once: (id(chunk), expr) -> Column.
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("sluice_eval_memo", default=None)


@contextlib.contextmanager
def shared_subexpressions():
    """Within this block, evaluating equal expressions over the same chunk reuses results."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def evaluate(e: Expr, chunk: Chunk) -> Column:
    if isinstance(e, Col):
        return chunk.columns[e.name]
    if isinstance(e, Lit):
        return literal_column(e, _device_of(chunk))
    memo = _MEMO.get()
    if memo is not None:
        key = (id(chunk), e)
        hit = memo.get(key)
        if hit is not None:
            return hit[1]
        out = _evaluate_func(e, chunk)
        memo[key] = (chunk, out)  # holding the chunk keeps its id from being reused
        return out
    return _evaluate_func(e, chunk)


def _evaluate_func(e: Expr, chunk: Chunk) -> Column:
    assert isinstance(e, Func)
    for a in e.args:
        if isinstance(a, Col) and chunk.columns[a.name].wide is not None:
            raise ExecutionError(f"{a.name} is a SUM exceeding 64 bits; it can only be output, not computed with")
    fn = _OPS.get(e.op)
    if fn is None:
        raise UnsupportedError(f"function {e.op} is not supported")
    return fn(e, chunk)


def evaluate_predicate(e: Expr, chunk: Chunk) -> torch.Tensor:
    """A boolean mask of rows where ``e`` is TRUE (NULL counts as false)."""
    c = evaluate(e, chunk)
    m = c.data if c.valid is None else (c.data & c.valid)
    if m.dim() == 0:
        m = m.expand(chunk.num_rows)
    return m


def evaluate_constant(e: Func) -> Lit:
    c = evaluate(e, Chunk({}, 1))
    return Lit(column_scalar(c), e.type)


def column_scalar(c: Column):
    """Python value of a constant column (None for NULL)."""
    if c.valid is not None and not bool(c.valid.reshape(-1)[0]):
        return None
    v = c.data.reshape(-1)[0].item()
    if c.type.kind == "string":
        return c.dictionary[int(v)].as_py()
    return v


def _device_of(chunk: Chunk) -> torch.device:
    for c in chunk.columns.values():
        return c.data.device
    return _CPU


def literal_column(e: Lit, device: torch.device) -> Column:
    t = e.type
    if e.value is None:
        dt = t.torch_dtype
        return Column(torch.zeros((), dtype=dt, device=device), t,
                      torch.zeros((), dtype=torch.bool, device=device),
                      pa.array([""], pa.string()) if t.kind == "string" else None)
    if t.kind == "string":
        return Column(torch.zeros((), dtype=torch.int32, device=device), t, None,
                      pa.array([e.value], pa.string()))
    return Column(torch.tensor(e.value, dtype=t.torch_dtype, device=device), t)


# ------------------------------------------------------------------ helpers


def _and_valid(*vs):
    out = None
    for v in vs:
        if v is None:
            continue
        out = v if out is None else (out & v)
    return out


def _to_type(c: Column, t: LType) -> torch.Tensor:
    """The values of numeric column ``c`` as tensor of type ``t`` (decimal scales aligned)."""
    src = c.type
    x = c.data
    if t.kind == "decimal":
        if src.kind == "decimal":
            if src.scale == t.scale:
                return x
            if src.scale < t.scale:
                return x * (10 ** (t.scale - src.scale))
            return torch.div(x, 10 ** (src.scale - t.scale), rounding_mode="trunc")
        if src.is_float:
            return torch.round(x.double() * (10 ** t.scale)).long()
        return x.long() * (10 ** t.scale)
    if t.is_float:
        if src.kind == "decimal":
            return x.double() / (10 ** src.scale) if t.kind == "float64" else (x.double() / (10 ** src.scale)).float()
        return x.to(t.torch_dtype)
    if src.kind == "decimal":
        return torch.div(x, 10 ** src.scale, rounding_mode="trunc").to(t.torch_dtype)
    return x.to(t.torch_dtype)


def _numeric_pair(a: Column, b: Column, t: LType):
    return _to_type(a, t), _to_type(b, t)


# ------------------------------------------------------------------ arithmetic


def _arith(e: Func, chunk: Chunk) -> Column:
    a, b = (evaluate(x, chunk) for x in e.args)
    t = e.type
    valid = _and_valid(a.valid, b.valid)
    op = e.op
    if t.kind == "date" or a.type.kind == "date":
        x = a.data.to(torch.int64)
        y = b.data.to(torch.int64)
        r = x + y if op == "+" else x - y
        return Column(r.to(t.torch_dtype), t, valid)
    if op == "/":
        # IEEE semantics, as DuckDB: x/0 is +-inf, 0/0 is NaN.
        x = _to_type(a, LType("float64"))
        y = _to_type(b, LType("float64"))
        return Column(x / y, t, valid)
    if op == "*" and t.kind == "decimal":
        # decimal*decimal has scale s1+s2; decimal*int keeps the decimal's scale.
        x, y = a.data.long(), b.data.long()
        _check_product(x, y)
        return Column(x * y, t, valid)
    x, y = _numeric_pair(a, b, t)
    if op == "+":
        r = x + y
    elif op == "-":
        r = x - y
    elif op == "*":
        r = x * y
    elif op == "%":
        if t.is_float:
            r = torch.fmod(x, y)
        else:
            zero = y == 0
            r = torch.fmod(x, torch.where(zero, torch.ones_like(y), y))
            if bool(zero.any()):
                valid = _and_valid(valid, ~zero)
    else:
        raise UnsupportedError(f"operator {op}")
    return Column(r, t, valid)


def _check_product(x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse a decimal product that could leave int64 (exactness over silent wrap-around)."""
    if x.numel() == 0 or y.numel() == 0:
        return
    mx = float(x.abs().max()) * float(y.abs().max())
    if mx >= 9.2e18:
        raise ExecutionError("decimal product overflows 64 bits; CAST an operand to DOUBLE")


def _neg(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    return Column(-a.data, a.type, a.valid)


def _abs(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    return Column(a.data.abs(), a.type, a.valid)


def _round_half_away(x: torch.Tensor, digits: int = 0) -> torch.Tensor:
    """SQL rounding: halves go away from zero (torch.round rounds them to even)."""
    f = 10.0 ** digits
    return torch.sign(x) * torch.floor(x.abs() * f + 0.5) / f


def _round(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    digits = e.params[0] if e.params else 0
    if a.type.is_float:
        return Column(_round_half_away(a.data, digits), a.type, a.valid)
    if a.type.kind == "decimal" and digits < a.type.scale:
        f = 10 ** (a.type.scale - digits)
        x = a.data
        r = torch.div(x.abs() + f // 2, f, rounding_mode="floor") * f * torch.sign(x)
        return Column(r, a.type, a.valid)
    return a


# ------------------------------------------------------------------ comparison


_CMP = {"=": torch.eq, "<>": torch.ne, "<": torch.lt, "<=": torch.le, ">": torch.gt, ">=": torch.ge}
_PC_CMP = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
           ">": pc.greater, ">=": pc.greater_equal}


def _compare(e: Func, chunk: Chunk) -> Column:
    a, b = (evaluate(x, chunk) for x in e.args)
    valid = _and_valid(a.valid, b.valid)
    from sluice.types import BOOL
    if a.type.kind == "string":
        return Column(_compare_strings(e.op, a, b), BOOL, valid)
    if a.type.kind in ("date", "timestamp", "bool"):
        x, y = a.data, b.data
    elif a.type.kind == "decimal" and b.type.kind == "decimal" and a.type.scale != b.type.scale:
        return Column(_compare_scaled(e.op, a, b), BOOL, valid)
    else:
        from sluice.types import common_numeric
        t = common_numeric(a.type, b.type)
        x, y = _numeric_pair(a, b, t)
    return Column(_CMP[e.op](x, y), BOOL, valid)


def _compare_scaled(op: str, a: Column, b: Column) -> torch.Tensor:
    """Exact comparison of decimals with different scales, without upscaling (no overflow):
    a (scale sa) vs b (scale sb > sa): with b = q*f + r (f = 10**(sb-sa), 0 <= r < f),
    a < b/f  <=>  a < q or (a == q and r > 0);  a == b/f  <=>  a == q and r == 0."""
    flip = a.type.scale > b.type.scale
    if flip:
        a, b = b, a
        op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
    f = 10 ** (b.type.scale - a.type.scale)
    x = a.data
    q = torch.div(b.data, f, rounding_mode="floor")
    r = b.data - q * f
    frac = r > 0
    lt = (x < q) | ((x == q) & frac)
    eq = (x == q) & ~frac
    if op == "<":
        return lt
    if op == "<=":
        return lt | eq
    if op == "=":
        return eq
    if op == "<>":
        return ~eq
    if op == ">":
        return ~(lt | eq)
    return ~lt


def _compare_strings(op: str, a: Column, b: Column) -> torch.Tensor:
    if b.is_const and b.dictionary is not None and len(b.dictionary) == 1 and not a.is_const:
        lit = b.dictionary[0]
        per_entry = _PC_CMP[op](a.dictionary, lit)
        return _gather_bool(per_entry, a.data)
    if a.is_const and len(a.dictionary) == 1 and not b.is_const:
        flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        return _compare_strings(flip, b, a)
    d, (ca, cb) = unify_dictionaries([a, b])
    if op in ("=", "<>"):
        return _CMP[op](ca, cb)
    rank = _dictionary_rank(d).to(ca.device)
    return _CMP[op](rank[ca.long()], rank[cb.long()])


def _dictionary_rank(d: pa.Array) -> torch.Tensor:
    order = pc.sort_indices(d).to_numpy()
    rank = np.empty(len(d), dtype=np.int64)
    rank[order] = np.arange(len(d))
    return host_tensor(rank)


def _gather_bool(per_entry: pa.Array, codes: torch.Tensor) -> torch.Tensor:
    arr = per_entry.fill_null(False).to_numpy(zero_copy_only=False)
    t = host_tensor(np.ascontiguousarray(arr, dtype=np.bool_)).to(codes.device)
    if codes.dim() == 0:
        return t[codes.long()]
    return t[codes.long()] if len(t) else torch.zeros(codes.shape, dtype=torch.bool, device=codes.device)


# ------------------------------------------------------------------ boolean logic


def _and(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    cols = [evaluate(x, chunk) for x in e.args]
    data = cols[0].data
    for c in cols[1:]:
        data = data & c.data
    if all(c.valid is None for c in cols):
        return Column(data, BOOL)
    # FALSE if any operand is a valid FALSE; else NULL if any operand is NULL; else TRUE.
    any_false = None
    all_valid = None
    for c in cols:
        f = ~c.data if c.valid is None else (c.valid & ~c.data)
        any_false = f if any_false is None else (any_false | f)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    valid = any_false | all_valid
    return Column(data & ~any_false if data.dim() else data, BOOL, valid)


def _or(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    cols = [evaluate(x, chunk) for x in e.args]
    if all(c.valid is None for c in cols):
        data = cols[0].data
        for c in cols[1:]:
            data = data | c.data
        return Column(data, BOOL)
    any_true = None
    all_valid = None
    for c in cols:
        t = c.data if c.valid is None else (c.valid & c.data)
        any_true = t if any_true is None else (any_true | t)
        if c.valid is not None:
            all_valid = c.valid if all_valid is None else (all_valid & c.valid)
    return Column(any_true, BOOL, any_true | all_valid)


def _not(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    return Column(~a.data, a.type, a.valid)


def _is_null(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    if a.valid is None:
        r = torch.zeros(a.data.shape, dtype=torch.bool, device=a.data.device)
    else:
        r = ~a.valid
    return Column(r if e.op == "is_null" else ~r, BOOL)


# ------------------------------------------------------------------ strings


def _like(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    pattern = e.params[0]
    per_entry = pc.match_like(a.dictionary, pattern, ignore_case=e.op.endswith("ilike"))
    m = _gather_bool(per_entry, a.data)
    if e.op.startswith("not_"):
        m = ~m
    return Column(m, BOOL, a.valid)


def _in(e: Func, chunk: Chunk) -> Column:
    from sluice.types import BOOL
    a = evaluate(e.args[0], chunk)
    values = [v for v in e.params[0] if v is not None]
    if a.type.kind == "string":
        per_entry = pc.is_in(a.dictionary, value_set=pa.array(values, pa.string()))
        m = _gather_bool(per_entry, a.data)
    else:
        # params hold literal values already converted to the column's representation.
        vals = torch.tensor(values, dtype=a.data.dtype, device=a.data.device)
        m = torch.isin(a.data, vals) if a.data.dim() else torch.isin(a.data.reshape(1), vals)[0]
    valid = a.valid
    if any(v is None for v in e.params[0]):
        # x IN (..., NULL) is NULL when not found.
        valid = m if valid is None else (valid & m)
    return Column(m, BOOL, valid)


def _map_dictionary(a: Column, fn) -> Column:
    new = fn(a.dictionary)
    if new.type != pa.string():
        new = new.cast(pa.string())
    return Column(a.data, a.type, a.valid, new)


def _substring(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    start, length = e.params
    begin = max(start - 1, 0)
    if length is None:
        return _map_dictionary(a, lambda d: pc.utf8_slice_codeunits(d, begin))
    stop = max(start - 1 + length, 0)
    return _map_dictionary(a, lambda d: pc.utf8_slice_codeunits(d, begin, stop))


def _upper(e: Func, chunk: Chunk) -> Column:
    fn = {"upper": pc.utf8_upper, "lower": pc.utf8_lower, "trim": pc.utf8_trim_whitespace}[e.op]
    return _map_dictionary(evaluate(e.args[0], chunk), fn)


def _length(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    per = host_tensor(pc.utf8_length(a.dictionary).to_numpy(zero_copy_only=False).astype(np.int64))
    return Column(per.to(a.data.device)[a.data.long()], e.type, a.valid)


def _concat(e: Func, chunk: Chunk) -> Column:
    cols = [evaluate(x, chunk) for x in e.args]
    cols = [_as_string_column(c) for c in cols]
    n = chunk.num_rows
    valid = _and_valid(*[c.valid for c in cols])
    if all(c.is_const for c in cols):
        s = "".join(c.dictionary[0].as_py() for c in cols)
        return Column(torch.zeros((), dtype=torch.int32), e.type, valid, pa.array([s]))
    # Materialise the strings of each row (Arrow, vectorised), then re-encode.
    parts = [pa.scalar(c.dictionary[0].as_py()) if c.is_const
             else c.dictionary.take(pa.array(c.data.cpu().numpy())) for c in cols]
    joined = pc.binary_join_element_wise(*parts, "")
    enc = pc.dictionary_encode(joined)
    codes = host_tensor(enc.indices.to_numpy(zero_copy_only=False).astype(np.int32))
    return Column(codes.to(cols[0].data.device if not cols[0].is_const else cols[-1].data.device)[:n],
                  e.type, valid, enc.dictionary)


def _as_string_column(c: Column) -> Column:
    if c.type.kind == "string":
        return c
    raise UnsupportedError(f"concatenation of {c.type} values; CAST them to VARCHAR first")


# ------------------------------------------------------------------ dates


def _extract(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    fld = e.params[0]
    days = a.data if a.type.kind == "date" else torch.div(a.data, 86_400_000_000, rounding_mode="floor")
    y, m, d = dates.civil_from_days(days)
    out = {"year": y, "month": m, "day": d}.get(fld)
    if out is None:
        if fld == "quarter":
            out = (m - 1) // 3 + 1
        elif fld == "dow":
            out = (days.long() + 4) % 7
        else:
            raise UnsupportedError(f"EXTRACT({fld.upper()} ...)")
    return Column(out.to(torch.int64), e.type, a.valid)


def _add_months(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    return Column(dates.add_months(a.data, e.params[0]), e.type, a.valid)


# ------------------------------------------------------------------ conditional


def _case(e: Func, chunk: Chunk) -> Column:
    args = e.args
    t = e.type
    conds = [evaluate(args[i], chunk) for i in range(0, len(args) - 1, 2)]
    vals = [evaluate(args[i], chunk) for i in range(1, len(args) - 1, 2)]
    vals.append(evaluate(args[-1], chunk))
    return _select_first(t, [(c.data if c.valid is None else c.data & c.valid) for c in conds], vals, chunk.num_rows)


def _coalesce(e: Func, chunk: Chunk) -> Column:
    vals = [evaluate(x, chunk) for x in e.args]
    conds = []
    for v in vals[:-1]:
        conds.append(torch.ones((), dtype=torch.bool, device=v.data.device) if v.valid is None else v.valid)
    return _select_first(e.type, conds, vals, chunk.num_rows)


def _select_first(t: LType, conds: list[torch.Tensor], vals: list[Column], n: int) -> Column:
    """Row-wise: the value of the first branch whose condition holds, else the last value."""
    dictionary = None
    if t.kind == "string":
        dictionary, datas = unify_dictionaries([v for v in vals])
    else:
        datas = [_to_type(v, t) if v.type != t else v.data for v in vals]
    out = datas[-1]
    valid = vals[-1].valid if vals[-1].valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
    any_null = any(v.valid is not None for v in vals)
    for cond, data, v in zip(reversed(conds), reversed(datas[:-1]), reversed(vals[:-1])):
        out = torch.where(cond, data, out)
        if any_null:
            vv = v.valid if v.valid is not None else torch.ones((), dtype=torch.bool, device=out.device)
            valid = torch.where(cond, vv, valid)
    if out.dim() == 0 and n != 1:
        out = out.expand(n)
        valid = valid.expand(n) if any_null else valid
    return Column(out, t, valid if any_null else None, dictionary)


def _cast(e: Func, chunk: Chunk) -> Column:
    a = evaluate(e.args[0], chunk)
    t = e.type
    src = a.type
    if src == t:
        return a
    if t.is_numeric and (src.is_numeric or src.kind == "bool"):
        if t.is_integer and (src.is_float or src.kind == "decimal"):
            # DuckDB: decimals round half away from zero, doubles half to even (nearbyint).
            if src.kind == "decimal":
                x = _round_half_away(a.data.double() / (10 ** src.scale))
            else:
                x = torch.round(a.data)
            return Column(x.to(t.torch_dtype), t, a.valid)
        if t.kind == "decimal" and src.kind == "decimal" and src.scale > t.scale:
            f = 10 ** (src.scale - t.scale)
            x = a.data
            r = torch.div(x.abs() + f // 2, f, rounding_mode="floor") * torch.sign(x)
            return Column(r, t, a.valid)
        return Column(_to_type(a, t), t, a.valid)
    if src.kind == "string":
        # Cast each dictionary entry with Arrow, then gather.
        target = {"date": pa.date32(), "decimal": pa.decimal128(38, t.scale)}.get(t.kind)
        target = target or (pa.bool_() if t.kind == "bool" else getattr(pa, t.kind)())
        try:
            per = a.dictionary.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as ex:
            raise ExecutionError(f"cannot cast string to {t}: {str(ex).splitlines()[0]}") from None
        from sluice.io.parquet.convert import arrow_to_column
        pc_col = arrow_to_column(per, t, a.data.device)
        return Column(pc_col.data[a.data.long()], t, a.valid)
    if t.kind == "string":
        if a.is_const:
            from sluice.io.parquet.convert import column_to_arrow
            s = column_to_arrow(a.expand(1)).cast(pa.string())
            return Column(torch.zeros((), dtype=torch.int32, device=a.data.device), t, a.valid, s)
        from sluice.io.parquet.convert import column_to_arrow
        s = column_to_arrow(a).cast(pa.string())
        enc = pc.dictionary_encode(s)
        codes = host_tensor(enc.indices.to_numpy(zero_copy_only=False).astype(np.int32))
        return Column(codes.to(a.data.device), t, a.valid, enc.dictionary)
    if t.kind == "date" and src.kind == "timestamp":
        return Column(torch.div(a.data, 86_400_000_000, rounding_mode="floor").to(torch.int32), t, a.valid)
    if t.kind == "timestamp" and src.kind == "date":
        return Column(a.data.long() * 86_400_000_000, t, a.valid)
    raise UnsupportedError(f"CAST from {src} to {t}")


_OPS = {
    "+": _arith, "-": _arith, "*": _arith, "/": _arith, "%": _arith,
    "neg": _neg, "abs": _abs, "round": _round,
    "=": _compare, "<>": _compare, "<": _compare, "<=": _compare, ">": _compare, ">=": _compare,
    "and": _and, "or": _or, "not": _not, "is_null": _is_null, "is_not_null": _is_null,
    "like": _like, "not_like": _like, "ilike": _like, "not_ilike": _like, "in": _in,
    "substring": _substring, "upper": _upper, "lower": _upper, "trim": _upper,
    "length": _length, "concat": _concat,
    "extract": _extract, "add_months": _add_months,
    "case": _case, "coalesce": _coalesce, "cast": _cast,
}
