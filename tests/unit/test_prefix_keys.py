"""String prefix keys (string MIN/MAX and sorts pick candidates by them): a key orders two strings
as their first 8 bytes do, byte by byte, or ties them (then the strings are compared in full:
"" and "\x00" tie), whatever the strings' lengths, where they lie in the buffer (the last
strings start in its last 7 bytes) and whether the array is a slice."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings, strategies as st

from sluice.exec.string_prefix import _prefix_keys, string_first_bytes


def _check(arr: pa.Array) -> None:
    keys = _prefix_keys(arr).tolist()
    prefixes = [s.encode()[:8] for s in arr.to_pylist()]
    assert len(keys) == len(prefixes)
    for i in range(len(keys)):
        for j in range(len(keys)):
            a, b = prefixes[i], prefixes[j]
            if keys[i] < keys[j]:
                assert a < b, (a, b)
            if a == b:
                assert keys[i] == keys[j], (a, b)
            if a.rstrip(b"\x00") != b.rstrip(b"\x00"):  # only zero bytes past the end may tie
                assert keys[i] != keys[j], (a, b)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet="a\u00e9\x00\xff z", max_size=12), min_size=1, max_size=30),
       st.integers(0, 5))
def test_keys_order_like_the_first_eight_bytes(strings, cut):
    arr = pa.array(strings, pa.string())
    _check(arr)
    _check(arr.slice(min(cut, len(strings) - 1)))


def test_strings_at_the_end_of_the_buffer_and_empty_ones():
    _check(pa.array(["abcdefghijkl", "", "x", "abcdefgh", "abcdefgh\x00", "yy"]))
    _check(pa.array(["", ""]))
    _check(pa.array(["q"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="a\u00e9\x00\xff z", max_size=12), min_size=1, max_size=30),
       st.data())
def test_keys_of_chosen_entries_are_those_entries_keys(strings, data):
    """The first-byte pass builds keys for the surviving rows only (``at``, in any order)."""
    arr = pa.array(strings, pa.string())
    at = data.draw(st.lists(st.integers(0, len(strings) - 1), max_size=40))
    assert _prefix_keys(arr, np.array(at, dtype=np.int32)).tolist() == [_prefix_keys(arr).tolist()[i] for i in at]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="a\u00e9\x00\xff z", max_size=5)), min_size=1, max_size=30),
       st.integers(0, 5))
def test_first_bytes_order_like_the_strings_first_bytes(strings, cut):
    """1 + the first byte, 0 for "" (and NULL): "" below "\\x00...", below every other string."""
    arr = pa.array(strings, pa.string())
    for a in (arr, arr.slice(min(cut, len(strings) - 1))):
        got = string_first_bytes(a).tolist()
        want = [1 + s.encode()[0] if s else 0 for s in a.to_pylist()]
        assert got == want
