"""Numeric values between types (decimal scales aligned, overflow refused) and the sort rank
of string dictionaries: tensor functions the kernels and the scalar functions share."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from sluice.chunk import Column, host_tensor
from sluice.errors import UnsupportedError
from sluice.kernels.checks import fail_if
from sluice.types import LType

I64_MAX = 2 ** 63 - 1


def scale_up(x: torch.Tensor, f: int, valid: torch.Tensor | None, what: str) -> torch.Tensor:
    """``x * f`` in int64, refusing values whose product leaves int64."""
    if f == 1:
        return x.long()
    x = x.long()
    bound = I64_MAX // f
    fail_if((x > bound) | (x < -bound), f"{what}: beyond 18 digits (sluice's decimals are 64-bit; "
            "DuckDB's reach 38)", valid, UnsupportedError)
    return x * f


def decimals_to_float(x: torch.Tensor, scale: int, dtype: torch.dtype, precision: int = 0) -> torch.Tensor:
    """Raw decimals of ``scale`` as floats of ``dtype`` (float64 or float32), correctly rounded
    (to nearest, ties to even) as DuckDB converts them. A double: the raw value over 10**scale
    where the raw value converts exactly (|x| <= 2**53: one rounding). A float: that double
    rounded to a float, which is right unless the double fell exactly on a midpoint between two
    floats. The rest: :func:`_exact_quotient`. (One division of the raw value converted to a
    double was two roundings past 2**53: 9007199254740993.3 became ...992 where DuckDB has
    ...994, and comparisons with such values counted the wrong rows.) ``precision`` (digits, 0:
    unknown): where no raw value of that many digits can pass 2**53 (a float: 2**24, the scale
    at most 10) no element is checked -- no host wait on a GPU, as for TPC-H's DECIMAL(15,2)."""
    p = 10 ** scale
    if dtype == torch.float32 and 0 < precision <= 7 and scale <= 10:
        return x.float() / float(p)  # both exact as floats: one rounding
    wide = x.double() / float(p)
    if dtype == torch.float64 and 0 < precision <= 15:
        return wide
    hard = (x > 2 ** 53) | (x < -2 ** 53)
    out = wide
    if dtype == torch.float32:
        out = wide.float()
        toward = torch.nextafter(out, torch.where(wide > out.double(), torch.inf, -torch.inf).float())
        hard |= (wide != out.double()) & (wide == (out.double() + toward.double()) / 2)
    if bool(hard.any()):  # a host wait, only for decimals whose digits may pass the bound
        flat, bits = x.reshape(-1), 53 if dtype == torch.float64 else 24
        idx = hard.reshape(-1).nonzero().squeeze(1)
        out = out.reshape(-1).index_put((idx,), _exact_quotient(flat.index_select(0, idx), p, bits).to(dtype))
        return out.reshape(x.shape)
    return out


def _exact_quotient(x: torch.Tensor, p: int, bits: int) -> torch.Tensor:
    """``x / p`` (int64 ``x``, ``p`` a positive integer below 2**62) rounded to ``bits``
    significant bits, to nearest with ties to even, as float64 (exact for ``bits`` <= 53), in
    integer arithmetic: the quotient's significand N in [2**(bits-1), 2**bits) and the
    remainder, by division of ``|x|`` by ``p * 2**k`` (k >= 0) or by long division of the
    remainder three bits at a time (k < 0)."""
    sign = torch.where(x < 0, -1.0, 1.0).double()
    a = x.abs()  # INT64_MIN: never a decimal (|raw| < 10**18)
    approx = a.double() / float(p)
    _, e = torch.frexp(approx)
    k = e.long() - bits  # the significand's weight: 2**k
    for _ in range(2):  # the approximation's binade may be one off at a power of two
        n, rem, den = _significand(a, p, k)
        k = torch.where(n >= 2 ** bits, k + 1, torch.where((n < 2 ** (bits - 1)) & (a > 0), k - 1, k))
    n, rem, den = _significand(a, p, k)
    up = (2 * rem > den) | ((2 * rem == den) & (n % 2 == 1))
    return sign * torch.ldexp((n + up.long()).double(), k.double())


def _significand(a: torch.Tensor, p: int, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """floor(a / (p * 2**k)) with its remainder and divisor, in int64 (the remainder over the
    divisor's scale: ``rem / den`` is the fraction below the significand's last bit)."""
    pos = k.clamp(min=0)
    den_pos = p << pos  # k >= 0: |x| / (p * 2**k) -- p * 2**k stays below |x| / 2**(bits-1)
    n_pos = torch.div(a, den_pos, rounding_mode="floor")
    rem_pos = a - n_pos * den_pos
    j = (-k).clamp(min=0)  # k < 0: (|x| / p) * 2**j by long division of the remainder
    n = torch.div(a, p, rounding_mode="floor")
    r = a - n * p
    left = j.clone()
    while bool((left > 0).any()):
        step = left.clamp(max=3)
        r = torch.bitwise_left_shift(r, step)
        digit = torch.div(r, p, rounding_mode="floor")
        r = r - digit * p
        n = torch.bitwise_left_shift(n, step) + digit
        left = left - step
    neg = k < 0
    den = torch.where(neg, torch.full_like(a, p), den_pos)
    return torch.where(neg, n, n_pos), torch.where(neg, r, rem_pos), den


def decimal_to_float(raw: int, scale: int, dtype: torch.dtype = torch.float64) -> float:
    """One raw decimal as :func:`decimals_to_float` converts it (constants, statistics)."""
    return float(decimals_to_float(torch.tensor([raw], dtype=torch.int64), scale, dtype))


def to_type(c: Column, t: LType) -> torch.Tensor:
    """The values of numeric column ``c`` as tensor of type ``t`` (decimal scales aligned)."""
    src = c.type
    x = c.data
    if t.kind == "decimal":
        if src.kind == "decimal":
            if src.scale == t.scale:
                return x
            if src.scale < t.scale:
                return scale_up(x, 10 ** (t.scale - src.scale), c.valid, f"a decimal scaled to {t}")
            return torch.div(x, 10 ** (src.scale - t.scale), rounding_mode="trunc")
        if src.is_float:
            # DuckDB: round(x * 10^s), halves away from zero on that double (1.45 -> 14.5 -> 1.5)
            y = x.double() * (10 ** t.scale)
            whole = torch.trunc(y)
            y = whole + torch.sign(y) * ((y - whole).abs() >= 0.5).double()
            fail_if(~(y.abs() < 2.0 ** 63), f"a floating-point value is out of range for {t}", c.valid)
            return y.long()
        return scale_up(x, 10 ** t.scale, c.valid, f"an integer converted to {t}")
    if t.is_float:
        if src.kind == "decimal":
            return decimals_to_float(x, src.scale, t.torch_dtype, src.precision)
        return x.to(t.torch_dtype)
    if src.kind == "decimal":
        return torch.div(x, 10 ** src.scale, rounding_mode="trunc").to(t.torch_dtype)
    return x.to(t.torch_dtype)


def dictionary_rank(d: pa.Array) -> torch.Tensor:
    """The sort rank of each dictionary entry (codes compare by it as the strings do)."""
    order = pc.sort_indices(d).to_numpy()
    rank = np.empty(len(d), dtype=np.int64)
    rank[order] = np.arange(len(d))
    return host_tensor(rank)


_MAGNITUDE = 0x7FFFFFFFFFFFFFFF


def float_order_key(v: torch.Tensor) -> torch.Tensor:
    """Floats as int64 keys in DuckDB's total order: -0.0 equals 0.0, every NaN equals every
    other and sorts above +inf (as in DuckDB and PostgreSQL; IEEE comparisons would make a NaN
    key its own group and drop it from MIN and from ``x < NaN``). The map is monotonic, so
    MIN/MAX, sorting, grouping and joining on the keys give SQL's answers;
    :func:`float_from_order_key` inverts it."""
    x = v.to(torch.float64) + 0.0  # -0.0 + 0.0 is +0.0
    x = torch.where(torch.isnan(x), torch.full_like(x, float("nan")), x)
    b = x.view(torch.int64)
    return b ^ ((b >> 63) & _MAGNITUDE)


def float_from_order_key(k: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The float of a :func:`float_order_key` (the map is its own inverse on the bits)."""
    return (k ^ ((k >> 63) & _MAGNITUDE)).view(torch.float64).to(dtype)
