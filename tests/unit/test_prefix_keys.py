"""String prefix keys (string MIN/MAX and sorts pick candidates by them): a key orders two strings
as their first 8 bytes do, byte by byte, or ties them (then the strings are compared in full:
"" and "\x00" tie), whatever the strings' lengths, where they lie in the buffer (the last
strings start in its last 7 bytes) and whether the array is a slice."""

import pyarrow as pa
from hypothesis import given, settings, strategies as st

from sluice.exec.aggregates import _prefix_keys


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
