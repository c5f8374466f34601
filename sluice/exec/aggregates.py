"""Aggregate functions as accumulators over state columns (docs/design.md §4).

An accumulator keeps the partial state of one aggregate as named columns of a page (one row
per group): ``update`` reduces input rows grouped by ids into a state, ``merge`` combines
states grouped by ids, ``finalize`` turns a state into the result column, and ``identity``
is the state of a group that saw no rows (merging with it changes nothing). All state is
per group: a string MIN/MAX keeps the winning string of each group, not the strings seen.

SUM and AVG of one argument share one state (sum as two int64 halves that never overflow,
and a count). Which function uses which accumulator, and which result it asks of the state,
is its registration's (``exec/aggregate_functions.py``).
"""

from __future__ import annotations

import abc

import numpy as np
import pyarrow as pa
import torch

from sluice.chunk import Column, _compacted, host_tensor, to_device
from sluice.errors import ExecutionError, UnsupportedError
from sluice.kernels.buffers import positions
from sluice.kernels.bounds import max_abs
from sluice.kernels.keys import (float_from_order_key, float_order_key, hi_lo_fits_int64, normalize_hi_lo,
                                      split_hi_lo)
from sluice.types import INT64, LType
import pyarrow.compute as pc
from sluice.kernels.hash import hash_columns, mix64
from sluice.exec.string_prefix import _first_byte_pays, _first_byte_rows, string_prefix_keys
from sluice.expr.constants import literal_column
from sluice.expr.nodes import Lit

_F64 = LType("float64")
_I8 = LType("int8")


def _exact(t: LType) -> bool:
    return t.kind == "decimal" or t.is_integer or t.kind == "bool"


# One group (a keyless aggregate, or keys all equal): every id is 0, so the per-group kernels
# are plain reductions -- a scatter into one slot is ten times slower on a CPU and, on a GPU,
# every row's atomic update hits the same address.


def count_by(ids: torch.Tensor, g: int, valid: torch.Tensor | None = None,
             sync_free: bool | None = None) -> torch.Tensor:
    """Rows per group (those where ``valid``, when given). ``sync_free`` (default: on a GPU, and
    with ``valid`` anywhere) adds ones (or the validity) by group instead of ``bincount``, which reads the largest id
    on the host and masks by a boolean index -- a wait for the GPU each (two a chunk in every
    grouped aggregate, counted on an H200)."""
    if g == 1:
        if valid is None:
            return torch.full((1,), ids.numel(), dtype=torch.int64, device=ids.device)
        return valid.sum(0, keepdim=True, dtype=torch.int64)
    # With a validity mask on a CPU too: bincount of the masked ids gathers them first (1M ids,
    # a seventh valid: 3.6 ms; nine tenths: 10.5) where adding the validity takes 2.2-2.7 ms.
    if sync_free if sync_free is not None else (ids.is_cuda or valid is not None):
        w = (torch.ones(1, dtype=torch.int64, device=ids.device).expand(ids.shape) if valid is None
             else valid.to(torch.int64))
        return torch.zeros(g, dtype=torch.int64, device=ids.device).scatter_add_(0, ids, w)
    return torch.bincount(ids if valid is None else ids[valid], minlength=g)


def _sum_by(ids: torch.Tensor, g: int, v: torch.Tensor) -> torch.Tensor:
    if g == 1:
        return v.sum(0, keepdim=True, dtype=v.dtype)
    # scatter_add_, not index_add_: 94 against 136 ms for 10 M rows into 9 M groups on a CPU
    return torch.zeros(g, dtype=v.dtype, device=v.device).scatter_add_(0, ids, v)


class Accumulator(abc.ABC):
    """Base: the state of one aggregate over one argument (see the module docstring)."""

    def __init__(self, prefix: str, arg_type: LType | None) -> None:
        self.prefix = prefix
        self.arg_type = arg_type

    def name(self, part: str) -> str:
        return f"{self.prefix}#{part}"

    @abc.abstractmethod
    def update(self, arg: Column | None, ids: torch.Tensor, g: int, rows: torch.Tensor) -> dict[str, Column]:
        """(each accumulator its own)"""

    @abc.abstractmethod
    def merge(self, state: dict[str, Column], ids: torch.Tensor, g: int) -> dict[str, Column]:
        """(each accumulator its own)"""

    @abc.abstractmethod
    def identity(self, g: int, dev) -> dict[str, Column]:
        """(each accumulator its own)"""

    @abc.abstractmethod
    def finalize(self, state: dict[str, Column], out_type: LType) -> Column:
        """The result of each group (a registration may ask for a variant: AVG of a sum's state)."""

    def _n(self, state) -> torch.Tensor:
        return state[self.name("n")].data


class CountAcc(Accumulator):
    """COUNT(*) (arg None) and COUNT(x): a count per group."""

    def update(self, arg, ids, g, rows):
        n = rows if arg is None or arg.valid is None else count_by(ids, g, arg.valid.expand(ids.shape))
        return {self.name("n"): Column(n, INT64)}

    def merge(self, state, ids, g):
        return {self.name("n"): Column(_sum_by(ids, g, self._n(state)), INT64)}

    def identity(self, g, dev):
        return {self.name("n"): Column(torch.zeros(g, dtype=torch.int64, device=dev), INT64)}

    def finalize(self, state, out_type):
        return Column(self._n(state), out_type)


class SumAcc(Accumulator):
    """SUM / AVG: exact (hi, lo) int64 halves for integers and decimals, float64 otherwise."""

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        n = rows if valid is None else count_by(ids, g, valid)
        dev = ids.device
        if _exact(self.arg_type):
            v = arg.data.to(torch.int64)
            if valid is not None:  # (a product: 2.0 ms a million rows against where's 2.9)
                v = v * valid
            s = exact_group_sum(v, ids, g, dev)
            return {self.name("hi"): Column(s["hi"], INT64), self.name("lo"): Column(s["lo"], INT64),
                    self.name("n"): Column(n, INT64)}
        v = arg.data.to(torch.float64)
        if valid is not None:
            v = torch.where(valid, v, torch.zeros_like(v))
        return {self.name("f"): Column(_sum_by(ids, g, v), _F64), self.name("n"): Column(n, INT64)}

    def merge(self, state, ids, g):
        out = {self.name("n"): Column(_sum_by(ids, g, self._n(state)), INT64)}
        if _exact(self.arg_type):
            hi = _sum_by(ids, g, state[self.name("hi")].data)
            lo = _sum_by(ids, g, state[self.name("lo")].data)
            hi, lo = normalize_hi_lo(hi, lo)
            out[self.name("hi")] = Column(hi, INT64)
            out[self.name("lo")] = Column(lo, INT64)
        else:
            out[self.name("f")] = Column(_sum_by(ids, g, state[self.name("f")].data), _F64)
        return out

    def identity(self, g, dev):
        z = torch.zeros(g, dtype=torch.int64, device=dev)
        out = {self.name("n"): Column(z, INT64)}
        if _exact(self.arg_type):
            out[self.name("hi")] = Column(z, INT64)
            out[self.name("lo")] = Column(z, INT64)
        else:
            out[self.name("f")] = Column(torch.zeros(g, dtype=torch.float64, device=dev), _F64)
        return out

    def finalize(self, state, out_type, average: bool = False):
        """SUM, or AVG where ``average``."""
        cnt = self._n(state)
        nonnull = cnt > 0
        valid = None if bool(nonnull.all()) else nonnull
        if not _exact(self.arg_type):
            f = state[self.name("f")].data
            v = f / cnt.clamp(min=1).to(torch.float64) if average else f
            return Column(v, out_type, valid)
        hi, lo = state[self.name("hi")].data, state[self.name("lo")].data
        if average:
            scale = self.arg_type.scale if self.arg_type.kind == "decimal" else 0
            total = hi.to(torch.float64) * 4294967296.0 + lo.to(torch.float64)
            return Column(total / cnt.clamp(min=1).to(torch.float64) / (10 ** scale), out_type, valid)
        if hi_lo_fits_int64(hi):
            return Column(hi * 4294967296 + lo, out_type, valid)
        return _wide_sum(hi, lo, out_type, valid)


class ProductAcc(Accumulator):
    """PRODUCT (of DOUBLEs: the translator casts): a product and a count per group (no rows:
    NULL). Products of partial states are a product, so chunks, spills and ranks merge alike."""

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        n = rows if valid is None else count_by(ids, g, valid)
        v = arg.data.to(torch.float64).expand(ids.shape)
        if valid is not None:
            v = torch.where(valid, v, torch.ones_like(v))
        return {self.name("p"): Column(_product_by(ids, g, v), _F64), self.name("n"): Column(n, INT64)}

    def merge(self, state, ids, g):
        return {self.name("p"): Column(_product_by(ids, g, state[self.name("p")].data), _F64),
                self.name("n"): Column(_sum_by(ids, g, self._n(state)), INT64)}

    def identity(self, g, dev):
        return {self.name("p"): Column(torch.ones(g, dtype=torch.float64, device=dev), _F64),
                self.name("n"): Column(torch.zeros(g, dtype=torch.int64, device=dev), INT64)}

    def finalize(self, state, out_type):
        nonnull = self._n(state) > 0
        return Column(state[self.name("p")].data, out_type, None if bool(nonnull.all()) else nonnull)


def _product_by(ids: torch.Tensor, g: int, v: torch.Tensor) -> torch.Tensor:
    out = torch.ones(g, dtype=v.dtype, device=v.device)
    return out.scatter_reduce_(0, ids, v, reduce="prod", include_self=True)


class MinMaxAcc(Accumulator):
    """MIN / MAX of numbers, dates and booleans: the extreme value per group."""

    def __init__(self, prefix, arg_type, largest: bool) -> None:
        super().__init__(prefix, arg_type)
        self.largest = largest  # MAX, else MIN
        self.vtype = _I8 if arg_type.kind == "bool" else arg_type

    def _reduce(self, v, ids, g, valid):
        if v.is_floating_point():  # NaN is the largest float, -0.0 equals 0.0 (DuckDB's order)
            return float_from_order_key(self._reduce(float_order_key(v), ids, g, valid), v.dtype)
        red = "amax" if self.largest else "amin"
        init = torch.zeros(g, dtype=v.dtype, device=v.device)
        if valid is not None:
            ids, v = ids[valid], v[valid]
        if g == 1:  # one group: a reduction (an empty one keeps the zero, as include_self=False)
            if v.numel() == 0:
                return init
            return (v.amin if red == "amin" else v.amax)(0, keepdim=True)
        return init.scatter_reduce_(0, ids, v, reduce=red, include_self=False)

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        v = arg.data.to(torch.int8) if arg.data.dtype == torch.bool else arg.data
        return {self.name("v"): Column(self._reduce(v, ids, g, valid), self.vtype),
                self.name("n"): Column(rows if valid is None else count_by(ids, g, valid), INT64)}

    def merge(self, state, ids, g):
        n = self._n(state)
        return {self.name("v"): Column(self._reduce(state[self.name("v")].data, ids, g, n > 0), self.vtype),
                self.name("n"): Column(_sum_by(ids, g, n), INT64)}

    def identity(self, g, dev):
        return {self.name("v"): Column(torch.zeros(g, dtype=self.vtype.torch_dtype, device=dev), self.vtype),
                self.name("n"): Column(torch.zeros(g, dtype=torch.int64, device=dev), INT64)}

    def finalize(self, state, out_type):
        n = self._n(state)
        valid = None if bool((n > 0).all()) else n > 0
        v = state[self.name("v")].data
        return Column(v.to(torch.bool) if self.arg_type.kind == "bool" else v.to(out_type.torch_dtype),
                      out_type, valid)


class StringStateAcc(Accumulator):
    """An aggregate whose state per group is one string (a dictionary-coded column) and a count of
    the values it saw; rows and states are folded by ``_combine`` (MIN / MAX of strings, the bit
    aggregates of BIT values), NULL where a group saw none."""

    @abc.abstractmethod
    def _combine(self, col: Column, ids: torch.Tensor, g: int, valid: torch.Tensor | None) -> Column:
        """Each group's string from its rows (or states) of ``col``: a column of ``g`` strings."""

    @staticmethod
    def _valid_codes(col: Column, ids: torch.Tensor, valid: torch.Tensor | None):
        """``col``'s dictionary and, for its valid rows, their group ids and dictionary codes."""
        d, codes = _compacted(col)
        codes = codes.long().reshape(-1)
        if codes.numel() != ids.numel():
            codes = codes.expand(ids.shape)
        if valid is not None:
            rows = positions(valid)
            return d, ids[rows], codes[rows]
        return d, ids, codes

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        n = rows if valid is None else count_by(ids, g, valid)
        return {self.name("v"): self._combine(arg, ids, g, valid), self.name("n"): Column(n, INT64)}

    def merge(self, state, ids, g):
        n = self._n(state)
        return {self.name("v"): self._combine(state[self.name("v")], ids, g, n > 0),
                self.name("n"): Column(_sum_by(ids, g, n), INT64)}

    def identity(self, g, dev):
        return {self.name("v"): Column(torch.zeros(g, dtype=torch.int32, device=dev), self.arg_type, None,
                                       pa.array([""], pa.string())),
                self.name("n"): Column(torch.zeros(g, dtype=torch.int64, device=dev), INT64)}

    def finalize(self, state, out_type):
        n = self._n(state)
        valid = None if bool((n > 0).all()) else n > 0
        v = state[self.name("v")]
        return Column(v.data, out_type, valid, v.dictionary)


class StringMinMaxAcc(StringStateAcc, MinMaxAcc):
    """MIN / MAX of strings: the winning string per group (its state is a string column).

    Per group, an 8-byte prefix of each string (compared as an unsigned number) picks the
    winner among rows, exactly unless several rows tie on the prefix; only the tied
    candidates are then compared in full. So the work is one pass over the rows, not a sort
    of every string seen."""

    first_byte = False  # the minmax_first_byte setting on a CPU (HashAggregateOp sets it per run)

    def _winners(self, col: Column, ids: torch.Tensor, g: int, valid: torch.Tensor | None) -> Column:
        dev = ids.device
        # Dictionary entries need not be unique here (equal strings tie on rank): no hashing.
        d, ids_v, codes_v = self._valid_codes(col, ids, valid)
        red = "amax" if self.largest else "amin"
        if self.first_byte and _first_byte_pays(len(d), codes_v.numel(), g):
            ids_v, codes_v, pre = _first_byte_rows(d, ids_v, codes_v, g, self.largest)
        else:
            pre = to_device(string_prefix_keys(d), dev)[codes_v]
        best = torch.zeros(g, dtype=torch.int64, device=dev).scatter_reduce_(0, ids_v, pre, reduce=red,
                                                                              include_self=False)
        cand = positions(pre == best[ids_v])
        cids, ccodes = ids_v[cand], codes_v[cand]
        # Exact order among the candidates: rank their distinct strings.
        uniq, inv = torch.unique(ccodes, return_inverse=True)
        strings = d.take(pa.array(uniq.cpu().numpy()))
        order = pc.sort_indices(strings).to_numpy()
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        r = to_device(host_tensor(rank), dev)[inv]
        win = torch.zeros(g, dtype=torch.int64, device=dev).scatter_reduce_(0, cids, r, reduce=red,
                                                                             include_self=False)
        present = torch.zeros(g, dtype=torch.bool, device=dev)
        present[cids] = True
        win = torch.where(present, win, torch.zeros_like(win))
        values = strings.take(pa.array(order[win.cpu().numpy()] if len(order) else np.zeros(g, np.int64))) \
            if len(order) else pa.array([""] * g)
        return Column(torch.arange(g, dtype=torch.int32, device=dev), self.arg_type, None, values)

    _combine = _winners


class NestedPickAcc(Accumulator):
    """MIN / MAX of a nested column where every row of a group holds the same value -- the
    per-group result a holistic aggregate's window put on each row (LIST, FIRST ... of nested
    values): one row's value per group (its state a nested column, merged the same way). The
    translator refuses MIN / MAX of a user's nested column, whose values differ in a group."""

    def _pick(self, col: Column, ids: torch.Tensor, g: int, valid: torch.Tensor | None) -> dict[str, Column]:
        dev = ids.device
        n = ids.numel()
        rows = torch.arange(n, dtype=torch.int64, device=dev)
        if valid is not None:
            rows = torch.where(valid, rows, torch.full_like(rows, n))
        first = torch.full((g,), n, dtype=torch.int64, device=dev).scatter_reduce_(0, ids, rows, reduce="amin")
        seen = first < n
        picked = col.expand(n).take(first.clamp(max=max(n - 1, 0))) if n else _null_nested(self.arg_type, g, dev)
        v = seen if picked.valid is None else (seen & picked.valid)
        return {self.name("v"): Column(picked.data, picked.type, v, picked.dictionary),
                self.name("n"): Column(seen.to(torch.int64) if valid is None else count_by(ids, g, valid), INT64)}

    def update(self, arg, ids, g, rows):
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        return self._pick(arg, ids, g, valid)

    def merge(self, state, ids, g):
        n = self._n(state)
        out = self._pick(state[self.name("v")], ids, g, n > 0)
        out[self.name("n")] = Column(_sum_by(ids, g, n), INT64)
        return out

    def identity(self, g, dev):
        return {self.name("v"): _null_nested(self.arg_type, g, dev),
                self.name("n"): Column(torch.zeros(g, dtype=torch.int64, device=dev), INT64)}

    def finalize(self, state, out_type):
        n = self._n(state)
        v = state[self.name("v")]
        valid = n > 0 if v.valid is None else (v.valid & (n > 0))
        return Column(v.data, out_type, None if bool(valid.all()) else valid, v.dictionary)


def _null_nested(t: LType, g: int, dev) -> Column:
    """``g`` NULLs of nested type ``t`` (codes into one empty entry)."""
    return literal_column(Lit(None, t), dev).expand(g)


class MomentsAcc(Accumulator):
    """VAR_SAMP / VAR_POP / STDDEV_SAMP / STDDEV_POP: per group the count, the mean and M2,
    the sum of squared deviations from the mean. A chunk's groups take two passes (mean, then
    deviations: no cancellation); states combine with Chan et al.'s pairwise formula,
    ``M2 = sum M2_i + sum n_i (mean_i - mean)^2``, as accurate as Welford's updates."""

    def _values(self, arg: Column) -> torch.Tensor:
        v = arg.data.to(torch.float64)
        if self.arg_type.kind == "decimal":
            v = v / (10 ** self.arg_type.scale)
        return v

    def _centered(self, arg, ids, g):
        """(the group of each non-NULL value, its deviation from its group's mean, the groups'
        counts, their means): the first pass of the moments."""
        valid = None if arg.valid is None else arg.valid.expand(ids.shape)
        v = self._values(arg)
        if valid is not None:
            ids, v = ids[valid], v[valid]
        n = count_by(ids, g)
        mean = _sum_by(ids, g, v) / n.clamp(min=1).to(torch.float64)
        return ids, v - mean[ids], n, mean

    def update(self, arg, ids, g, rows):
        ids, d, n, mean = self._centered(arg, ids, g)
        return self._state(n, mean, _sum_by(ids, g, d ** 2))

    def _state(self, n, mean, m2):
        return {self.name("n"): Column(n, INT64), self.name("mean"): Column(mean, _F64),
                self.name("m2"): Column(m2, _F64)}

    def merge(self, state, ids, g):
        n_i = self._n(state)
        mean_i, m2_i = state[self.name("mean")].data, state[self.name("m2")].data
        nf = n_i.to(torch.float64)
        n = _sum_by(ids, g, n_i)
        mean = _sum_by(ids, g, nf * mean_i) / n.clamp(min=1).to(torch.float64)
        m2 = _sum_by(ids, g, m2_i + nf * (mean_i - mean[ids]) ** 2)
        return self._state(n, mean, m2)

    def identity(self, g, dev):
        z = torch.zeros(g, dtype=torch.float64, device=dev)
        return self._state(torch.zeros(g, dtype=torch.int64, device=dev), z, z.clone())

    def finalize(self, state, out_type, sample: bool = True, root: bool = False):
        """The variance of a ``sample`` (n - 1: NULL under 2 values) or of the population, or
        its square ``root`` (the standard deviation)."""
        n = self._n(state)
        m2 = state[self.name("m2")].data.clamp(min=0)
        least = 2 if sample else 1
        ok = n >= least
        div = (n - 1 if least == 2 else n).clamp(min=1).to(torch.float64)
        v = torch.where(n == 1, torch.zeros_like(m2), m2 / div)  # one value (even inf) varies by 0
        if root:
            v = torch.sqrt(v)
        return Column(v, out_type, None if bool(ok.all()) else ok)


class SkewnessAcc(MomentsAcc):
    """SKEWNESS: the moments' count, mean and M2 with M3, the sum of cubed deviations, in the
    same two passes; states combine about the grand mean as M2 does:
    ``M3 = sum M3_i + 3 d_i M2_i + n_i d_i^3`` with ``d_i = mean_i - mean`` (no cancellation of
    raw power sums). The result is DuckDB's sample skewness, NULL under 3 values or with no
    spread, an error where it is not finite."""

    def update(self, arg, ids, g, rows):
        ids, d, n, mean = self._centered(arg, ids, g)
        return self._state3(n, mean, _sum_by(ids, g, d * d), _sum_by(ids, g, d * d * d))

    def _state3(self, n, mean, m2, m3):
        return {**self._state(n, mean, m2), self.name("m3"): Column(m3, _F64)}

    def merge(self, state, ids, g):
        n_i = self._n(state)
        mean_i, m2_i, m3_i = (state[self.name(k)].data for k in ("mean", "m2", "m3"))
        nf = n_i.to(torch.float64)
        n = _sum_by(ids, g, n_i)
        mean = _sum_by(ids, g, nf * mean_i) / n.clamp(min=1).to(torch.float64)
        d = torch.where(n_i > 0, mean_i - mean[ids], torch.zeros_like(mean_i))
        m2 = _sum_by(ids, g, m2_i + nf * d * d)
        m3 = _sum_by(ids, g, m3_i + 3 * d * m2_i + nf * d * d * d)
        return self._state3(n, mean, m2, m3)

    def identity(self, g, dev):
        z = torch.zeros(g, dtype=torch.float64, device=dev)
        return self._state3(torch.zeros(g, dtype=torch.int64, device=dev), z, z.clone(), z.clone())

    def finalize(self, state, out_type):
        n = self._n(state).to(torch.float64)
        m2, m3 = state[self.name("m2")].data, state[self.name("m3")].data
        var = m2 / n.clamp(min=1)
        ok = (n > 2) & ~(var <= 0)
        safe_n = torch.where(ok, n, torch.full_like(n, 3.0))
        v = torch.sqrt(safe_n * (safe_n - 1)) / (safe_n - 2) * (m3 / safe_n) / torch.pow(var, 1.5)
        if bool((ok & ~torch.isfinite(v)).any()):
            raise ExecutionError("SKEW is out of range!")
        return Column(torch.where(ok, v, torch.zeros_like(v)), out_type, None if bool(ok.all()) else ok)


class HyperLogLogAcc(Accumulator):
    """APPROX_COUNT_DISTINCT: a HyperLogLog sketch of 2**P one-byte registers per group
    (P = 10: about 3 % standard error, near DuckDB's answers; 1 KiB of state per group, which
    counts against the memory budget and spills like any aggregation state), kept as 2**P / 8
    int64 state columns whose bytes are the registers. A value's 64-bit hash picks a register
    by its low P bits; the register keeps the largest rank (trailing zeros + 1) of the other
    bits. States merge by bytewise maximum; the estimate is Flajolet et al.'s with linear
    counting for small counts. NULLs are not counted."""

    P = 10
    M = 1 << P
    WORDS = M // 8

    def _regs(self, state) -> torch.Tensor:
        cols = [state[self.name(f"r{i}")].data for i in range(self.WORDS)]
        return torch.stack(cols, 1).contiguous().view(torch.uint8).reshape(-1, self.M)

    def _state(self, regs: torch.Tensor) -> dict[str, Column]:
        words = regs.to(torch.uint8).contiguous().view(torch.int64).reshape(-1, self.WORDS)
        return {self.name(f"r{i}"): Column(words[:, i].contiguous(), INT64) for i in range(self.WORDS)}

    def _max_by(self, ids: torch.Tensor, slot: torch.Tensor, rank: torch.Tensor, g: int) -> torch.Tensor:
        flat = torch.zeros(g * self.M, dtype=torch.int16, device=ids.device)
        flat.scatter_reduce_(0, ids * self.M + slot, rank.to(torch.int16), "amax")
        return flat.reshape(g, self.M)

    def update(self, arg, ids, g, rows):
        n = ids.numel()
        # The join/group hash is multiplicative (its low bits are weak): finalise it fully.
        h = mix64(hash_columns([arg.expand(n) if arg.is_const else arg], n) ^ 0x2545F4914F6CDD1D)
        if arg.valid is not None:
            keep = arg.valid.expand(ids.shape)
            h, ids = h[keep], ids[keep]
        slot = h & (self.M - 1)
        w = (h >> self.P) & ((1 << (64 - self.P)) - 1)
        low = w & -w  # lowest set bit: a power of two, exact in float64
        rank = torch.where(w == 0, torch.full_like(w, 64 - self.P + 1),
                           torch.log2(low.to(torch.float64)).round().to(torch.int64) + 1)
        return self._state(self._max_by(ids, slot, rank, g))

    def merge(self, state, ids, g):
        regs = self._regs(state).to(torch.int64)
        slot = torch.arange(self.M, device=ids.device).repeat(regs.shape[0])
        return self._state(self._max_by(ids.repeat_interleave(self.M), slot, regs.reshape(-1), g))

    def identity(self, g, dev):
        return self._state(torch.zeros(g, self.M, dtype=torch.uint8, device=dev))

    def finalize(self, state, out_type):
        regs = self._regs(state).to(torch.float64)
        m = float(self.M)
        alpha = 0.7213 / (1 + 1.079 / m) if self.M >= 128 else {16: 0.673, 32: 0.697, 64: 0.709}[self.M]
        raw = alpha * m * m / torch.pow(2.0, -regs).sum(1)
        zeros = (regs == 0).sum(1).to(torch.float64)
        small = (raw <= 2.5 * m) & (zeros > 0)
        est = torch.where(small, m * torch.log(m / zeros.clamp(min=1)), raw)
        return Column(torch.round(est).to(torch.int64), out_type)


# ---------------------------------------------------------------- kernels


#: A chunk sum is taken in one int64 pass when max|v| * rows stays below this bound.
_SAFE_SUM = 1 << 62


def exact_group_sum(v: torch.Tensor, ids: torch.Tensor, g: int, dev, check: bool | None = None) -> dict:
    """Per-group int64 sums as (hi, lo) halves that never overflow.

    On a CPU, one scatter pass when the chunk cannot overflow (checked with one min/max);
    otherwise, and always on a GPU (``check`` false: reading the min/max would wait for the
    device, twice per sum and chunk -- 530 waits in TPC-H q01 on an H200 -- where a second
    scatter costs the GPU next to nothing), the values are split into 32-bit halves summed
    separately."""
    n = v.numel()
    if n == 0:
        z = torch.zeros(g, dtype=torch.int64, device=dev)
        return {"hi": z, "lo": z.clone()}
    if check is None:
        check = v.device.type == "cpu"
    if check:
        check = max_abs(v) * n < _SAFE_SUM
    if check:  # no overflow possible: one pass
        s = _sum_by(ids, g, v)
        return {"hi": s >> 32, "lo": s & 0xFFFFFFFF}
    hi, lo = split_hi_lo(v)
    shi = _sum_by(ids, g, hi)
    slo = _sum_by(ids, g, lo)
    shi, slo = normalize_hi_lo(shi, slo)
    return {"hi": shi, "lo": slo}


def _wide_sum(hi, lo, t, valid) -> Column:
    """A sum beyond 64 bits: exact Python integers ride along for output (docs/design.md §1)."""
    values = [h * 4294967296 + lw for h, lw in zip(hi.cpu().tolist(), lo.cpu().tolist())]
    if t.kind != "decimal":
        raise UnsupportedError(f"SUM of {t} values exceeds 64 bits (DuckDB's HUGEINT); "
                               "SUM(CAST(x AS DECIMAL(38, 0))) gives the exact total")
    if any(abs(v) >= 10 ** 38 for v in values):
        raise ExecutionError("SUM exceeds DECIMAL(38)")
    return Column(torch.zeros(len(values), dtype=torch.int64, device=hi.device), t, valid, None, tuple(values))
