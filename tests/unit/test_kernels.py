"""Tensor kernels checked against plain Python / numpy on random inputs."""

import datetime as dt

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from sluice.chunk import Column
from sluice.kernels import dates
from sluice.kernels.join_keys import BuildKeys, JoinTable
from sluice.kernels.keys import group_ids
from sluice.types import INT64


@given(st.lists(st.integers(-700_000, 2_900_000), min_size=1, max_size=200), st.integers(-30, 30))
@settings(max_examples=50, deadline=None)
def test_civil_dates_and_add_months(days, months):
    t = torch.tensor(days, dtype=torch.int32)
    y, m, d = dates.civil_from_days(t)
    for i, x in enumerate(days):
        ref = dates.EPOCH + dt.timedelta(days=x)
        assert (y[i].item(), m[i].item(), d[i].item()) == (ref.year, ref.month, ref.day)
    assert torch.equal(dates.days_from_civil(y, m, d), t)
    out = dates.add_months(t, months)
    for i, x in enumerate(days):
        ref = dates.EPOCH + dt.timedelta(days=x)
        tot = ref.year * 12 + ref.month - 1 + months
        yy, mm = divmod(tot, 12)
        import calendar
        dd = min(ref.day, calendar.monthrange(yy, mm + 1)[1])
        assert out[i].item() == (dt.date(yy, mm + 1, dd) - dates.EPOCH).days


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-3, 3)), min_size=1, max_size=300))
@settings(max_examples=50, deadline=None)
def test_group_ids_match_python(rows):
    a = torch.tensor([r[0] for r in rows])
    b = torch.tensor([r[1] for r in rows])
    ids, g = group_ids([Column(a, INT64), Column(b, INT64)], len(rows))
    assert g == len(set(rows))
    seen = {}
    for r, i in zip(rows, ids.tolist()):
        assert seen.setdefault(r, i) == i


@given(st.lists(st.integers(0, 40), min_size=1, max_size=300), st.integers(0, 30), st.sampled_from([torch.int32, torch.int64]))
@settings(max_examples=80, deadline=None)
def test_densify_numbers_codes_in_order_either_way(codes, extra, dtype):
    """Codes numbered 0..g-1 in code order, whether counted (a CPU, up to COUNTED_CODES) or
    marked: every code present (the codes are the ids) or not, int32 or int64 codes."""
    import sluice.kernels.keys as keys
    c = torch.tensor(codes, dtype=dtype)
    card = max(codes) + 1 + extra
    want = {v: i for i, v in enumerate(sorted(set(codes)))}
    for counted in (keys.COUNTED_CODES, 0):
        old, keys.COUNTED_CODES = keys.COUNTED_CODES, counted
        try:
            ids, g = keys._densify(c, card)
        finally:
            keys.COUNTED_CODES = old
        assert ids.dtype == torch.int64 and g == len(want)
        assert ids.tolist() == [want[v] for v in codes]


@given(st.lists(st.tuples(st.integers(0, 8), st.booleans(), st.integers(0, 3), st.booleans()), min_size=1, max_size=200),
       st.booleans(), st.booleans())
@settings(max_examples=80, deadline=None)
def test_group_ids_with_string_keys_match_python(rows, determined, dup_dictionary):
    # An integer key and string keys that it determines (the strings then never hashed) or
    # not; NULLs on both; a dictionary with repeated entries (equal strings, other codes).
    import pyarrow as pa

    from sluice.types import STRING
    k = [r[0] for r in rows]
    k_null = [r[1] and r[0] == 0 for r in rows]
    words = ["a", "bb", "a", "c", "bb", "d", "e", "a", "f"] if dup_dictionary else ["a", "bb", "c", "d", "e", "f", "g", "h", "i"]
    code = [(r[0] if determined else r[2] + r[0]) % len(words) for r in rows]
    if dup_dictionary and not determined:
        code = [c if r[3] else (c + 2) % len(words) for c, r in zip(code, rows)]
    s_null = [r[3] and (determined or r[2] == 1) and r[0] == 1 for r in rows]
    kc = Column(torch.tensor(k), INT64, torch.tensor([not x for x in k_null]))
    sc = Column(torch.tensor(code, dtype=torch.int32), STRING, torch.tensor([not x for x in s_null]), pa.array(words))
    ids, g = group_ids([sc, kc], len(rows))
    key = [(None if sn else words[c], None if kn else kv) for c, sn, kv, kn in zip(code, s_null, k, k_null)]
    assert g == len(set(key))
    seen = {}
    for r, i in zip(key, ids.tolist()):
        assert seen.setdefault(r, i) == i


@given(st.lists(st.integers(0, 40), max_size=60), st.lists(st.integers(-5, 45), max_size=80),
       st.booleans())
@settings(max_examples=60, deadline=None)
def test_join_matches_nested_loop(build, probe, sparse):
    scale = 10**12 if sparse else 1  # sparse keys take the sorted/searchsorted path
    _assert_one_key_join([x * scale for x in build], [x * scale for x in probe])


def _assert_one_key_join(build: list[int], probe: list[int]) -> None:
    """BuildKeys + JoinTable over one int64 key give a nested loop's (probe, build) pairs."""
    bk = BuildKeys([Column(torch.tensor(build, dtype=torch.int64), INT64)], [INT64])
    table = JoinTable(bk.key, bk.valid, bk.card)
    key, ok = bk.probe([Column(torch.tensor(probe, dtype=torch.int64), INT64)], len(probe))
    p, b = table.match(key, ok)
    got = sorted(zip(p.tolist(), b.tolist()))
    want = sorted((i, j) for i, x in enumerate(probe) for j, y in enumerate(build) if x == y)
    assert got == want


@given(st.integers(0, 2**31), st.booleans(), st.sampled_from([20, 60, 120]))
@settings(max_examples=25, deadline=None)
def test_one_key_join_by_rank_matches_a_dictionary(seed, unique, spread):
    """Build keys 20-120 codes apart over more than DIRECT_RANGE_MIN codes: past the direct
    table, the rank index (a bitmap and per-byte counts) on a CPU. Its pairs are a dictionary's."""
    import random

    from sluice.kernels.keys import DIRECT_RANGE_MIN
    r = random.Random(seed)
    n = DIRECT_RANGE_MIN // spread * 2
    build = [r.randrange(-5, spread * n) for _ in range(n)]
    if unique:
        build = list(dict.fromkeys(build))
    probe = [r.choice(build) if r.random() < 0.5 else r.randrange(-10, spread * n + 10) for _ in range(3000)]
    bk = BuildKeys([Column(torch.tensor(build, dtype=torch.int64), INT64)], [INT64])
    table = JoinTable(bk.key, bk.valid, bk.card)
    assert table.rank is not None
    key, ok = bk.probe([Column(torch.tensor(probe, dtype=torch.int64), INT64)], len(probe))
    p, b = table.match(key, ok)
    rows: dict[int, list[int]] = {}
    for j, y in enumerate(build):
        rows.setdefault(y, []).append(j)
    assert sorted(zip(p.tolist(), b.tolist())) == sorted((i, j) for i, x in enumerate(probe) for j in rows.get(x, []))


_ENDS = [-(2**63), -(2**63) + 1, -(2**62), -7, 0, 3, 2**40, 2**62, 2**63 - 2, 2**63 - 1]


@given(st.lists(st.sampled_from(_ENDS), max_size=8), st.lists(st.sampled_from(_ENDS), max_size=30),
       st.booleans())
@settings(max_examples=80, deadline=None)
def test_one_key_join_over_int64_ends(build, probe, unique):
    # One key column is coded as its values less the build's low end whatever their range (the
    # JoinTable then searches sorted codes): differences that wrap must never match.
    if unique:
        build = list(dict.fromkeys(build))
    _assert_one_key_join(build, probe)


def test_multi_key_join_wide_ranges():
    rng = np.random.default_rng(0)
    b = rng.integers(0, 1 << 40, size=(500, 3))
    p = np.concatenate([b[rng.integers(0, 500, 300)], rng.integers(0, 1 << 40, size=(100, 3))])
    bk = BuildKeys([Column(torch.from_numpy(b[:, i].copy()), INT64) for i in range(3)], [INT64] * 3)
    table = JoinTable(bk.key, bk.valid, bk.card)
    key, ok = bk.probe([Column(torch.from_numpy(p[:, i].copy()), INT64) for i in range(3)], len(p))
    pi, bi = table.match(key, ok)
    assert (p[pi.numpy()] == b[bi.numpy()]).all()
    assert len(pi) == sum(1 for row in p for brow in b if (row == brow).all())


@given(st.lists(st.integers(0, 40), min_size=1, max_size=60),
       st.lists(st.one_of(st.none(), st.integers(-2000, 2000)), max_size=300))
@settings(max_examples=60, deadline=None)
def test_sorted_index_prefilter_matches_nested_loop(build, probe):
    # Codes over a range too wide for a direct table (multi-column keys, TPC-DS Q72's
    # (item, date)) take the sorted index; probes that mostly miss go through the hashed-key
    # bitmap first, and rows not ok (NULL keys) never match. ``ranges`` agrees with ``match``.
    card = 10**15
    bkey = torch.tensor(build, dtype=torch.int64) * 10**9
    key = torch.tensor([0 if x is None else x for x in probe], dtype=torch.int64) * 10**9
    ok = torch.tensor([x is not None for x in probe], dtype=torch.bool)
    table = JoinTable(bkey, None, card)
    assert not table.direct and table.present is not None
    lo, cnt = table.ranges(key, ok)
    p, b = table.match(key, ok)
    got = sorted(zip(p.tolist(), b.tolist()))
    want = sorted((i, j) for i, x in enumerate(probe) for j, y in enumerate(build) if x is not None and x == y)
    assert got == want
    for i, x in enumerate(probe):
        rows = table.sorted_rows[lo[i]:lo[i] + cnt[i]].tolist() if cnt[i] else []
        assert sorted(rows) == [j for j, y in enumerate(build) if x is not None and x == y]


def test_sorted_index_prefilter_stops_when_most_rows_match():
    bkey = torch.arange(1000, dtype=torch.int64) * 10**9
    table = JoinTable(bkey, None, 10**15)
    every = torch.ones(1000, dtype=torch.bool)
    miss = table.match(bkey + 1, every)
    assert miss[0].numel() == 0 and table.present is not None
    p, b = table.match(bkey.flip(0), every)
    assert table.present is None  # every probe row passed: the bitmap is dropped
    assert torch.equal(bkey[b], bkey.flip(0)[p]) and p.numel() == 1000
    assert table.match(bkey + 1, every)[0].numel() == 0


@pytest.mark.parametrize("scale", [10, 10 ** 12, 1 << 62])
def test_exact_group_sum_without_the_overflow_check(scale):
    # A GPU never reads the chunk's min/max (a wait for the device): it always sums 32-bit
    # halves. Both ways give the same exact per-group sums.
    import torch

    from sluice.exec.aggregates import exact_group_sum
    g = torch.Generator().manual_seed(scale % 1000)
    v = torch.randint(-scale, scale, (5000,), generator=g, dtype=torch.int64)
    ids = torch.randint(0, 7, (5000,), generator=g)
    want = [0] * 7
    for x, i in zip(v.tolist(), ids.tolist()):
        want[i] += x
    for check in (True, False):
        s = exact_group_sum(v, ids, 7, torch.device("cpu"), check=check)
        got = [h * 4294967296 + lo for h, lo in zip(s["hi"].tolist(), s["lo"].tolist())]
        assert got == want, check


@pytest.mark.parametrize("sync_free", [False, True])
@pytest.mark.parametrize("g", [1, 3, 1000])
def test_count_by_both_ways_equals_bincount(sync_free, g):
    from sluice.exec.aggregates import count_by
    gen = torch.Generator().manual_seed(g)
    ids = torch.randint(0, g, (5000,), generator=gen)
    valid = torch.rand(5000, generator=gen) > 0.3
    assert torch.equal(count_by(ids, g, sync_free=sync_free), torch.bincount(ids, minlength=g))
    assert torch.equal(count_by(ids, g, valid, sync_free=sync_free), torch.bincount(ids[valid], minlength=g))
    zeros = torch.zeros(1, dtype=torch.int64).expand(7)  # a keyless aggregate's broadcast ids
    assert count_by(zeros, 1, sync_free=sync_free).tolist() == [7]


def test_grouping_state_drops_the_determining_key_shortcut_after_two_misses():
    import pyarrow as pa

    from sluice.kernels.keys import GroupingState
    from sluice.types import LType
    s = LType("string")
    k = Column(torch.tensor([1, 1, 2, 2, 3]), INT64)
    varies = Column(torch.tensor([0, 1, 0, 0, 1], dtype=torch.int32), s, None, pa.array(["a", "b"]))
    fixed = Column(torch.tensor([0, 0, 1, 1, 0], dtype=torch.int32), s, None, pa.array(["a", "b"]))
    state = GroupingState()
    want = {(1, 0), (1, 1), (2, 0), (3, 1)}
    for _ in range(4):
        ids, g = group_ids([k, varies], 5, state=state)
        pairs = {(int(a), int(b)) for a, b in zip(k.data, varies.data)}
        assert g == len(want) == len(pairs) and len(set(ids.tolist())) == g
    assert state.misses == GroupingState.MISSES and not state.shortcut  # tried twice, then not
    ids, g = group_ids([k, fixed], 5, state=state)  # (the usual path, same groups)
    assert g == 3 and ids.tolist()[0] == ids.tolist()[1] and ids.tolist()[2] == ids.tolist()[3]
    fresh = GroupingState()
    ids, g = group_ids([k, fixed], 5, state=fresh)
    assert g == 3 and fresh.misses == 0  # the shortcut held


@pytest.mark.parametrize("seed", range(6))
def test_group_ids_partition_rows_by_their_keys_whatever_determines_what(seed):
    # Keys: a year (int), an id string, strings that follow the id (or, with noise, do not)
    # and NULLs: the shortcuts (one integer key; the integers with the widest string) and the
    # usual path must all put two rows in one group exactly when their keys are equal.
    import random

    import pyarrow as pa

    from sluice.types import LType
    rng = random.Random(seed)
    n = 3000
    s = LType("string")
    ids_ = [rng.randrange(400) for _ in range(n)]
    year = [rng.choice([2001, 2002]) for _ in range(n)]
    noise = seed % 2 == 1
    name = [f"n{i % 37}" if not (noise and rng.random() < 0.01) else "odd" for i in ids_]
    nulls = [rng.random() < 0.05 for _ in range(n)]

    def strings(values, with_nulls=False):
        d = pa.array(sorted(set(values)))
        pos = {v: i for i, v in enumerate(d.to_pylist())}
        valid = torch.tensor([not x for x in nulls]) if with_nulls else None
        return Column(torch.tensor([pos[v] for v in values], dtype=torch.int32), s, valid, d)
    cols = [strings([f"c{i}" for i in ids_]), strings(name, with_nulls=seed >= 4),
            Column(torch.tensor(year), INT64), strings([f"e{i % 11}" for i in ids_])]
    if seed in (2, 3):
        cols = cols[::-1]
    got, g = group_ids(cols, n)
    keys = []
    for r in range(n):
        row = []
        for c in cols:
            if c.valid is not None and not bool(c.valid[r]):
                row.append(None)
            elif c.type.kind == "string":
                row.append(c.dictionary[int(c.data[r])].as_py())
            else:
                row.append(int(c.data[r]))
        keys.append(tuple(row))
    by_key: dict = {}
    for r, k in enumerate(keys):
        by_key.setdefault(k, set()).add(int(got[r]))
    assert g == len(by_key) and all(len(v) == 1 for v in by_key.values())
    assert len({next(iter(v)) for v in by_key.values()}) == g


def test_fused_multiply_add_rounds_once():
    """The emulated FMA (DuckDB's decimal QUANTILE_CONT rounds through one) equals the exact
    a * b + c rounded to the nearest double, on integers up to 2**63, fractions and mixes."""
    from fractions import Fraction

    from sluice.kernels.interpolate import fused_multiply_add
    r = np.random.default_rng(7)
    n = 20000
    pick = r.integers(0, 3, size=(3, n))
    ints = r.integers(-2 ** 62, 2 ** 62, size=(3, n)).astype(np.float64) * 2
    fracs = r.random((3, n))
    wide = r.uniform(-1e20, 1e20, size=(3, n))
    vals = np.where(pick == 0, ints, np.where(pick == 1, fracs, wide))
    a, b, c = (torch.from_numpy(v) for v in vals)
    got = fused_multiply_add(a, b, c).tolist()
    want = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(*(v.tolist() for v in vals))]
    assert got == want
