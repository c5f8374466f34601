"""Hash aggregation with per-chunk partial aggregation and exact integer sums.

1. Per input chunk: evaluate keys and arguments, assign group ids (:func:`group_ids`),
   reduce every aggregate to a partial state per group (sum as two int64 halves so it never
   overflows, count, min, max).
2. Partials accumulate; when they hold more rows than a chunk they are merged (regrouped
   and combined), so memory stays proportional to the number of groups.
3. At the end, merge once more and finalise: sums recombined (exact, or Python integers when
   they exceed 64 bits), AVG = sum / count, NULL where a group saw no non-NULL value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Chunk, Column, concat_columns
from sluice.errors import ExecutionError
from sluice.exec.evaluate import _dictionary_rank, evaluate, shared_subexpressions
from sluice.exec.kernels.keys import first_rows, group_ids, hi_lo_fits_int64, normalize_hi_lo, split_hi_lo
from sluice.exec.operators import Operator
from sluice.plan.expr import Col, Expr
from sluice.types import INT64
from sluice.plan.logical import AggCall
from sluice.chunk import unify_dictionaries


@dataclass
class Partial:
    keys: dict[str, Column]
    states: dict[str, dict[str, torch.Tensor | Column]]
    groups: int


def _exact(t) -> bool:
    return t.kind == "decimal" or t.is_integer or t.kind == "bool"


@dataclass
class HashAggregateOp(Operator):
    child: Operator
    keys: tuple[tuple[str, Expr], ...]
    aggs: tuple[tuple[str, AggCall], ...]
    label = "HashAggregate"

    def __post_init__(self):
        self.children = (self.child,)

    def describe(self):
        return ("HashAggregate keys=[" + ", ".join(str(e) for _, e in self.keys) + "] aggs=[" +
                ", ".join(str(a) for _, a in self.aggs) + "]")

    def execute(self, ctx):
        partials: list[Partial] = []
        rows = 0
        dev = ctx.device
        limit = max(ctx.config.chunk_rows, 1 << 16)
        for chunk in self.child.stream(ctx):
            partials.append(self._partial(chunk, dev))
            rows += partials[-1].groups
            if len(partials) > 1 and rows > limit:
                partials = [self._merge(partials, dev)]
                rows = partials[0].groups
        if not partials:
            if self.keys:
                return
            partials = [self._empty_global(dev)]
        final = self._merge(partials, dev) if len(partials) > 1 else partials[0]
        out = self._finalize(final, dev)
        if out.num_rows:
            yield out

    # ---------------------------------------------------------------- partial

    def _partial(self, chunk: Chunk, dev) -> Partial:
        with shared_subexpressions():
            return self._partial_of(chunk, dev)

    def _partial_of(self, chunk: Chunk, dev) -> Partial:
        n = chunk.num_rows
        kcols = [evaluate(e, chunk).expand(n) for _, e in self.keys]
        ids, g = group_ids(kcols, n)
        ids = ids.to(dev)
        firsts = first_rows(ids, g) if self.keys else None
        keys = {name: c.take(firsts) for (name, _), c in zip(self.keys, kcols)}
        states = {}
        rows_per_group: list[torch.Tensor] = []  # computed once, shared by aggregates
        shared: dict[tuple, dict] = {}  # SUM(x) and AVG(x) keep the same state
        for name, call in self.aggs:
            kind = "sum" if call.func in ("sum", "avg") else call.func
            key = (kind, call.arg, call.distinct)
            if key not in shared:
                shared[key] = self._reduce(call, chunk, ids, g, n, dev, rows_per_group)
            states[name] = shared[key]
        return Partial(keys, states, g)

    def _reduce(self, call: AggCall, chunk, ids, g, n, dev, rows_per_group=None):
        if call.distinct:
            return _distinct_set(ids, evaluate(call.arg, chunk).expand(n), dev)
        if rows_per_group is None:
            rows_per_group = []
        if not rows_per_group:
            rows_per_group.append(torch.bincount(ids, minlength=g))
        if call.func == "count_star":
            return {"count": rows_per_group[0]}
        col = evaluate(call.arg, chunk).expand(n)
        valid = col.valid
        cnt = rows_per_group[0] if valid is None else torch.bincount(ids[valid], minlength=g)
        if call.func == "count":
            return {"count": cnt}
        t = call.arg.type
        if call.func in ("sum", "avg"):
            if _exact(t):
                v = col.data.to(torch.int64)
                if valid is not None:
                    v = torch.where(valid, v, torch.zeros_like(v))
                return exact_group_sum(v, ids, g, dev) | {"count": cnt}
            v = col.data.to(torch.float64)
            if valid is not None:
                v = torch.where(valid, v, torch.zeros_like(v))
            return {"f": torch.zeros(g, dtype=torch.float64, device=dev).index_add_(0, ids, v), "count": cnt}
        # min / max
        if t.kind == "string":
            d, (codes,) = unify_dictionaries([col])
            order = _dictionary_rank(d).to(dev)
            sorted_dict = d.take(pa.array(np.argsort(order.cpu().numpy(), kind="stable")))
            v = order[codes.long()]
            col_dict = sorted_dict
        else:
            v = col.data
            col_dict = None
        red = "amin" if call.func == "min" else "amax"
        if v.dtype == torch.bool:
            v = v.to(torch.int8)
        init = torch.zeros(g, dtype=v.dtype, device=dev)
        if valid is not None:
            src_ids, src = ids[valid], v[valid]
        else:
            src_ids, src = ids, v
        res = init.scatter_reduce_(0, src_ids, src, reduce=red, include_self=False)
        return {"v": res, "count": cnt, "dict": col_dict}

    def _empty_global(self, dev) -> Partial:
        states = {}
        for name, call in self.aggs:
            z = torch.zeros(1, dtype=torch.int64, device=dev)
            if call.distinct:
                t = call.arg.type
                states[name] = {"gidx": torch.zeros(0, dtype=torch.int64, device=dev),
                                "x": Column(torch.zeros(0, dtype=t.torch_dtype, device=dev), t, None,
                                            pa.array([], pa.string()) if t.kind == "string" else None)}
            elif call.func in ("count", "count_star"):
                states[name] = {"count": z}
            elif call.func in ("sum", "avg") and _exact(call.arg.type):
                states[name] = {"hi": z, "lo": z.clone(), "count": z.clone()}
            elif call.func in ("sum", "avg"):
                states[name] = {"f": torch.zeros(1, dtype=torch.float64, device=dev), "count": z}
            else:
                t = call.arg.type
                states[name] = {"v": torch.zeros(1, dtype=t.torch_dtype if t.kind != "bool" else torch.int8,
                                                 device=dev), "count": z,
                                "dict": pa.array([""]) if t.kind == "string" else None}
        return Partial({}, states, 1)

    # ---------------------------------------------------------------- merge

    def _merge(self, parts: list[Partial], dev) -> Partial:
        n = sum(p.groups for p in parts)
        keys_cat = {name: concat_columns([p.keys[name] for p in parts]) for name, _ in self.keys}
        kcols = [keys_cat[name] for name, _ in self.keys]
        ids, g = group_ids(kcols, n)
        ids = ids.to(dev)
        firsts = first_rows(ids, g) if self.keys else None
        keys = {name: c.take(firsts) for name, c in keys_cat.items()}
        states = {}
        offsets = []
        off = 0
        for p in parts:
            offsets.append(off)
            off += p.groups
        for name, call in self.aggs:
            sts = [p.states[name] for p in parts]
            if call.distinct:
                gidx = torch.cat([ids[o + s["gidx"]] for o, s in zip(offsets, sts)])
                states[name] = _distinct_set(gidx, concat_columns([s["x"] for s in sts]), dev)
                continue
            cnt = torch.zeros(g, dtype=torch.int64, device=dev).index_add_(0, ids, torch.cat([s["count"] for s in sts]))
            st = {"count": cnt}
            if "hi" in sts[0]:
                hi = torch.zeros(g, dtype=torch.int64, device=dev).index_add_(0, ids, torch.cat([s["hi"] for s in sts]))
                lo = torch.zeros(g, dtype=torch.int64, device=dev).index_add_(0, ids, torch.cat([s["lo"] for s in sts]))
                st["hi"], st["lo"] = normalize_hi_lo(hi, lo)
            elif "f" in sts[0]:
                st["f"] = torch.zeros(g, dtype=torch.float64, device=dev).index_add_(0, ids, torch.cat([s["f"] for s in sts]))
            elif "v" in sts[0]:
                red = "amin" if call.func == "min" else "amax"
                if sts[0]["dict"] is not None:
                    cols = [Column(s["v"].to(torch.int32), call.arg.type, None, s["dict"]) for s in sts]
                    d, codes = unify_dictionaries(cols)
                    rank = _dictionary_rank(d).to(dev)
                    v = torch.cat([rank[c.long()] for c in codes])
                    sorted_dict = d.take(pa.array(np.argsort(rank.cpu().numpy(), kind="stable")))
                else:
                    v = torch.cat([s["v"] for s in sts])
                    sorted_dict = None
                # Groups without a non-NULL value must not win the reduction.
                has = torch.cat([s["count"] for s in sts]) > 0
                init = torch.zeros(g, dtype=v.dtype, device=dev)
                st["v"] = init.scatter_reduce_(0, ids[has], v[has], reduce=red, include_self=False)
                st["dict"] = sorted_dict
            states[name] = st
        return Partial(keys, states, g)

    # ---------------------------------------------------------------- finalize

    def _finalize(self, part: Partial, dev) -> Chunk:
        g = part.groups
        cols = dict(part.keys)
        for name, call in self.aggs:
            st = part.states[name]
            if call.distinct:
                # The deduplicated (group, value) pairs aggregate like plain input rows.
                x = st["x"]
                plain = AggCall(call.func, Col("__distinct", call.arg.type))
                st = self._reduce(plain, Chunk({"__distinct": x}, len(x)), st["gidx"], g, len(x), dev)
            cnt = st["count"]
            nonnull = cnt > 0
            t = call.type
            if call.func in ("count", "count_star"):
                cols[name] = Column(cnt, t)
                continue
            valid = None if bool(nonnull.all()) else nonnull
            if "hi" in st:
                hi, lo = st["hi"], st["lo"]
                if call.func == "avg":
                    scale = call.arg.type.scale if call.arg.type.kind == "decimal" else 0
                    total = hi.to(torch.float64) * 4294967296.0 + lo.to(torch.float64)
                    avg = total / cnt.clamp(min=1).to(torch.float64) / (10 ** scale)
                    cols[name] = Column(avg, t, valid)
                elif hi_lo_fits_int64(hi):
                    cols[name] = Column(hi * 4294967296 + lo, t, valid)
                else:
                    cols[name] = _wide_sum(hi, lo, t, valid)
            elif "f" in st:
                v = st["f"] if call.func == "sum" else st["f"] / cnt.clamp(min=1).to(torch.float64)
                cols[name] = Column(v, t, valid)
            else:
                v = st["v"]
                if call.arg.type.kind == "bool":
                    v = v.to(torch.bool)
                cols[name] = Column(v.to(t.torch_dtype), t, valid, st["dict"])
        return Chunk(cols, g)


#: A chunk sum is taken in one int64 pass when max|v| * rows stays below this bound.
_SAFE_SUM = 1 << 62


def exact_group_sum(v: torch.Tensor, ids: torch.Tensor, g: int, dev) -> dict:
    """Per-group int64 sums as (hi, lo) halves that never overflow.

    One scatter pass when the chunk cannot overflow (checked with one max); otherwise the
    values are split into 32-bit halves summed separately.
    """
    n = v.numel()
    if n == 0:
        z = torch.zeros(g, dtype=torch.int64, device=dev)
        return {"hi": z, "lo": z.clone()}
    lo, hi = torch.aminmax(v)  # one pass, no temporary (abs().max() costs two and a copy)
    if max(-int(lo), int(hi)) * n < _SAFE_SUM:
        s = torch.zeros(g, dtype=torch.int64, device=dev).scatter_add_(0, ids, v)
        return {"hi": s >> 32, "lo": s & 0xFFFFFFFF}
    hi, lo = split_hi_lo(v)
    shi = torch.zeros(g, dtype=torch.int64, device=dev).scatter_add_(0, ids, hi)
    slo = torch.zeros(g, dtype=torch.int64, device=dev).scatter_add_(0, ids, lo)
    shi, slo = normalize_hi_lo(shi, slo)
    return {"hi": shi, "lo": slo}


def _distinct_set(gidx: torch.Tensor, x: Column, dev) -> dict:
    """Deduplicate (group, value) pairs: the state of a DISTINCT aggregate."""
    n = int(gidx.numel())
    if n == 0:
        return {"gidx": gidx, "x": x}
    pair_ids, k = group_ids([Column(gidx, INT64), x], n)
    firsts = first_rows(pair_ids.to(dev), k)
    return {"gidx": gidx[firsts], "x": x.take(firsts)}


def _wide_sum(hi, lo, t, valid) -> Column:
    """A sum beyond 64 bits: exact Python integers ride along for output (DESIGN §1)."""
    values = [h * 4294967296 + lw for h, lw in zip(hi.cpu().tolist(), lo.cpu().tolist())]
    if t.kind != "decimal" or any(abs(v) >= 10 ** 38 for v in values):
        raise ExecutionError("SUM overflows 128 bits")
    return Column(torch.zeros(len(values), dtype=torch.int64, device=hi.device), t, valid, None, tuple(values))
