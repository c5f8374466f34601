"""Linear interpolation between two neighbours, as DuckDB's QUANTILE_CONT / MEDIAN / MAD do it.

DuckDB interpolates a DOUBLE as ``lo * (1 - d) + hi * d``: each term stays within the double
range, so the midpoint of -1e308 and 1e308 is 0 (``lo + d * (hi - lo)`` overflows to inf
there, and MAD's second median to NaN). A decimal is interpolated in its scaled integers
through doubles, ``trunc(fma(double(hi) - double(lo), d, double(lo)))`` clamped to int64's
range (a REAL's the same way, rounded to float32 at the end, unclamped); DuckDB is built with a fused
multiply-add there, and decimals are compared exactly, so the fused operation is emulated here
exactly (PyTorch has none).
"""

from __future__ import annotations

import torch

_SPLITTER = float(2 ** 27 + 1)  # Veltkamp's splitter for 53-bit significands
_INT64_MAX = 2.0 ** 63


def interpolate_float(lo: torch.Tensor, d: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """``lo * (1 - d) + hi * d`` in float64: between lo and hi without overflowing."""
    return lo * (1 - d) + hi * d


def interpolate_scaled(lo: torch.Tensor, d: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """DuckDB's interpolation of int64 (a decimal's scaled integers) at fraction ``d``:
    through doubles with one rounding, truncated toward zero, clamped to int64's range."""
    lo_f, hi_f = lo.to(torch.float64), hi.to(torch.float64)
    r = fused_multiply_add(hi_f - lo_f, d, lo_f)
    big = r >= _INT64_MAX
    small = r <= -_INT64_MAX
    safe = torch.where(big | small | torch.isnan(r), torch.zeros_like(r), r)
    out = torch.trunc(safe).to(torch.int64)
    out = torch.where(big, torch.full_like(out, torch.iinfo(torch.int64).max), out)
    return torch.where(small, torch.full_like(out, torch.iinfo(torch.int64).min), out)


def interpolate_real(lo: torch.Tensor, d: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """DuckDB's interpolation of float32 (REAL stays REAL): through doubles with one rounding,
    then rounded to float32 (an infinity stays one)."""
    lo_f, hi_f = lo.to(torch.float64), hi.to(torch.float64)
    delta = hi_f - lo_f
    finite = torch.isfinite(lo_f) & torch.isfinite(hi_f)
    zero = torch.zeros_like(lo_f)
    r = torch.where(finite, fused_multiply_add(torch.where(finite, delta, zero), d, torch.where(finite, lo_f, zero)),
                    lo_f + delta * d)
    return r.to(torch.float32)


def fused_multiply_add(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``a * b + c`` rounded once (float64), for finite values whose product stays well below
    the double range (|a|, |b| < 2**900): Boldo and Melquiond's emulation -- the exact product
    (Dekker) and sum (Knuth) as pairs of doubles, their low parts added rounding to odd, then
    one rounding to nearest."""
    p, p_err = _two_product(a, b)
    s, s_err = _two_sum(c, p)
    return s + _add_round_to_odd(s_err, p_err)


def _two_sum(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) with a = hi + lo exactly, each with at most 26 significant bits (Veltkamp)."""
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def _two_product(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, e) with p = fl(a * b) and a * b = p + e exactly (Dekker)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _add_round_to_odd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b rounded to odd: exact sums as they are, an inexact one to whichever neighbour of
    the exact sum has an odd significand (so that a later rounding cannot round twice)."""
    s, e = _two_sum(a, b)
    even = (s.view(torch.int64) & 1) == 0
    toward = torch.where(e > 0, torch.full_like(s, float("inf")), torch.full_like(s, float("-inf")))
    return torch.where((e != 0) & even, torch.nextafter(s, toward), s)
