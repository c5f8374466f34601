"""The parallel, piecewise string encoder gives an exact encoding: every string decodes back
from its code, and the dictionary holds each distinct string once, whatever the pieces."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from sluice.kernels import encode


def _check(strings: list[str]) -> None:
    arr = pa.array(strings, pa.string())
    d, codes = encode.encode_strings(arr)
    assert codes.dtype.is_floating_point is False and len(codes) == len(strings)
    assert d.to_pylist() == list(dict.fromkeys(d.to_pylist()))  # no repeats
    assert sorted(d.to_pylist()) == sorted(set(strings))
    assert d.take(pa.array(codes.numpy())).to_pylist() == strings


@pytest.fixture
def tiny_pieces(monkeypatch):
    monkeypatch.setattr(encode, "PARALLEL_MIN", 1)
    monkeypatch.setattr(encode, "PIECE_ROWS", 4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9\x00 ", max_size=20), max_size=200))
def test_piecewise_encoding_is_exact(strings):
    old = encode.PARALLEL_MIN, encode.PIECE_ROWS
    encode.PARALLEL_MIN, encode.PIECE_ROWS = 1, 4
    try:
        _check(strings)
    finally:
        encode.PARALLEL_MIN, encode.PIECE_ROWS = old


def test_skewed_strings_share_a_piece_and_stay_exact(tiny_pieces):
    # Same length, same first and last 8 bytes: the cheap hash puts them all in one piece.
    strings = [f"prefix..{i:06d}..suffix" for i in range(500)] * 2 + ["", "x", "prefix.."]
    _check(strings)


def test_large_input_uses_pieces_and_matches_arrow():
    rng = np.random.default_rng(1)
    strings = [f"s{v}" for v in rng.integers(0, 50_000, encode.PARALLEL_MIN + 10)]
    _check(strings)


def _check_list(parts: list[list[str]], cut: int = 0) -> None:
    arrs = [pa.array(p, pa.string()) for p in parts]
    arrs = [a.slice(min(cut, len(a))) for a in arrs]  # slices: offsets not starting at 0
    strings = [s for a in arrs for s in a.to_pylist()]
    d, codes = encode.encode_string_list(arrs)
    assert len(codes) == len(strings)
    assert d.to_pylist() == list(dict.fromkeys(d.to_pylist()))
    assert sorted(d.to_pylist()) == sorted(set(strings))
    assert d.take(pa.array(codes.numpy())).to_pylist() == strings


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab\u00e9\x00 ", max_size=12), max_size=40), min_size=1, max_size=6),
       st.integers(0, 3))
def test_pieces_taken_from_several_arrays_are_exact(parts, cut):
    """The list form: pieces taken from each array in turn, the arrays never concatenated."""
    old = encode.PARALLEL_MIN, encode.PIECE_ROWS, encode.TAKE_ROWS_MIN
    encode.PARALLEL_MIN, encode.PIECE_ROWS, encode.TAKE_ROWS_MIN = 1, 4, 0
    try:
        _check_list(parts, cut)
    finally:
        encode.PARALLEL_MIN, encode.PIECE_ROWS, encode.TAKE_ROWS_MIN = old


def test_several_large_arrays_match_arrow():
    rng = np.random.default_rng(2)
    parts = [[f"s{v}" for v in rng.integers(0, 30_000, k)] for k in (encode.PARALLEL_MIN // 2, 0, 7, encode.PARALLEL_MIN // 2)]
    _check_list(parts)
