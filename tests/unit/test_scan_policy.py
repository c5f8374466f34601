"""The A-Scan mode policy with scripted throughputs: it finds the best mode, samples mode at a
time in bursts, re-samples when the rate drifts, keeps its mode when the alternatives are not
clearly better (no oscillation), and staggers sampling across scans."""

from sluice.adapt.scan_policy import MODES, Coordinator, ScanPolicy


def run(policy, rate_of, slices, rows=1000, lag=0):
    """Drive ``policy``: slice i is observed ``lag`` slices after it is assigned (a queue)."""
    modes, inflight = [], []
    for i in range(slices):
        m = policy.assign(i)
        modes.append(m)
        inflight.append((i, m))
        while len(inflight) > lag:
            j, mj = inflight.pop(0)
            policy.observe(j, mj, rows, rows / rate_of(mj, j))
    for j, mj in inflight:
        policy.observe(j, mj, rows, rows / rate_of(mj, j))
    return modes


def test_finds_the_fastest_mode():
    for best in MODES:
        p = ScanPolicy()
        modes = run(p, lambda m, i: 300.0 if m == best else 100.0, 40)
        assert p.current == best
        assert modes[-20:] == [best] * 20


def test_samples_each_mode_in_one_burst_in_scan_order():
    p = ScanPolicy(burst=3)  # warm=2: the scan's first burst warms up twice (start-up costs)
    modes = run(p, lambda m, i: {"direct": 1.0, "pushdown": 2.0, "staging": 3.0}[m], 14)
    assert modes[:11] == ["direct"] * 5 + ["pushdown"] * 3 + ["staging"] * 3
    assert modes[11:] == ["staging"] * 3


def test_decides_after_late_observations_with_a_queue():
    p = ScanPolicy(burst=3)
    modes = run(p, lambda m, i: 500.0 if m == "pushdown" else 50.0, 30, lag=4)
    assert p.current == "pushdown" and modes[-10:] == ["pushdown"] * 10


def test_resamples_when_the_rate_drifts_and_follows_the_phase_change():
    # A sorted column: staging wins while the predicate is selective (first 30 slices), then
    # direct wins; the drop of staging's rate triggers re-sampling, which finds direct.
    def rate(m, i):
        if i < 30:
            return {"direct": 100.0, "pushdown": 150.0, "staging": 400.0}[m]
        return {"direct": 300.0, "pushdown": 200.0, "staging": 80.0}[m]
    p = ScanPolicy()
    modes = run(p, rate, 80)
    assert modes[20:30] == ["staging"] * 10
    assert modes[-15:] == ["direct"] * 15
    assert any(s.reason == "drift" for s in p.switches)


def test_no_oscillation_between_nearly_equal_modes():
    # Noise around equal rates: after the first choice, re-samples keep the current mode.
    import random
    rng = random.Random(5)
    p = ScanPolicy(margin=0.10)
    modes = run(p, lambda m, i: 100.0 * (1 + rng.uniform(-0.03, 0.03)), 300)
    exploited = [s for s in p.switches if s.reason == "exploit"]
    assert len(exploited) <= 2
    changes = sum(1 for a, b in zip(modes[30:], modes[31:]) if a != b)
    assert changes <= 12  # only inside sampling bursts, never a flip-flop of the exploited mode


def test_a_steady_scan_does_not_resample():
    p = ScanPolicy()
    run(p, lambda m, i: 100.0 if m == "direct" else 50.0, 200)
    assert not any(s.reason == "drift" for s in p.switches)


def test_single_mode_never_samples():
    p = ScanPolicy(modes=("direct",))
    assert run(p, lambda m, i: 1.0, 10) == ["direct"] * 10 and not p.switches


def test_scans_stagger_their_sampling():
    c = Coordinator()
    a, b = ScanPolicy(coordinator=c), ScanPolicy(coordinator=c)
    assert a.sampling and not b.sampling  # b waits, using its default mode
    assert b.assign(0) == "direct"
    run(a, lambda m, i: 10.0 if m == "staging" else 1.0, 14)
    assert not a.sampling and a.current == "staging"
    b.assign(1)  # b never sampled: it takes its turn at its next slice
    assert b.sampling


def test_a_scan_that_ends_while_sampling_lets_the_others_sample():
    # A small scan (one slice) ends mid-sample; the fact table's scan must still get to sample
    # and find its best mode (it stayed in direct mode for good before).
    c = Coordinator()
    small, big = ScanPolicy(coordinator=c), ScanPolicy(coordinator=c)
    run(small, lambda m, i: 1.0, 1)
    assert small.sampling
    small.close()
    modes = run(big, lambda m, i: 50.0 if m == "pushdown" else 5.0, 40)
    assert big.current == "pushdown" and modes[-10:] == ["pushdown"] * 10


def test_a_slice_that_was_ready_at_once_does_not_win_the_sample():
    # Per-slice times as a queue sees them: the first counted slice of staging's burst had
    # been decoded while earlier slices were consumed (almost no wait), the next took long.
    # Rows over summed time ranks staging below direct; a mean of per-slice rates would not.
    times = {"direct": [1.0] * 6, "pushdown": [1.2] * 4, "staging": [1.3, 1.3, 0.001, 2.2]}
    p = ScanPolicy()
    seen = {m: 0 for m in times}
    for i in range(14):
        m = p.assign(i)
        p.observe(i, m, 1000, times[m][seen[m]])
        seen[m] += 1
    assert p.current == "direct"
    assert p.estimate["staging"] < p.estimate["direct"]


def test_a_runtime_filter_that_becomes_ready_restarts_the_sampling():
    # Until slice 8 the modes run equal (no filter yet, direct chosen); then a join's filter
    # is published and pushdown, which applies it, runs 3x faster. Without being told, the
    # policy would keep direct (its rate does not fall); told, it samples again, mid-round
    # included, and takes pushdown.
    for ready_at in (8, 20):
        p = ScanPolicy(burst=3, warm=1, coordinator=Coordinator())
        modes, inflight = [], []
        for i in range(50):
            if i == ready_at:
                p.invalidate(i)
            m = p.assign(i)
            modes.append(m)
            inflight.append((i, m))
            while len(inflight) > 2:
                j, mj = inflight.pop(0)
                rate = 300.0 if (mj == "pushdown" and j >= ready_at) else 100.0
                p.observe(j, mj, 1000, 1000 / rate)
        assert p.current == "pushdown" and modes[-15:] == ["pushdown"] * 15, (ready_at, modes)
        assert any(s.reason == "filter" for s in p.switches)
        assert not p.coordinator._owner  # the round it dropped gave the coordinator back


def test_the_round_after_a_filter_samples_the_modes_that_apply_it_first():
    # A scan of few slices whose filter comes ready mid-scan: the next slices must apply it
    # (pushdown, staging) -- the round used to restart with direct, which cannot, and the
    # scan ended before any slice was filtered (TPC-DS q72: inventory, 6 slices).
    p = ScanPolicy(burst=2, warm=1)
    first = [p.assign(i) for i in range(3)]
    assert first[0] == "direct"
    p.invalidate(3)
    after = [p.assign(i) for i in range(3, 9)]
    assert after[:2] == ["pushdown", "pushdown"] and "direct" not in after[:4], after
    assert after.count("direct") == 2  # still sampled, last
    p2 = ScanPolicy(burst=2, warm=1)  # a drift's round keeps the usual order
    [p2.assign(i) for i in range(3)]
    p2.invalidate(3, reason="drift")
    assert p2.assign(3) == "direct"


def test_a_dip_that_leaves_the_mode_far_ahead_does_not_resample():
    # pushdown runs at 3x the others; from slice 30 it dips by a third (still twice as fast):
    # sampling the others again could only cost. A fall to below them does re-sample.
    def dip(m, i):
        base = {"direct": 100.0, "pushdown": 300.0, "staging": 90.0}[m]
        return base * (0.67 if m == "pushdown" and i >= 30 else 1.0)
    p = ScanPolicy()
    modes = run(p, dip, 80)
    assert modes[20:] == ["pushdown"] * 60
    assert not any(s.reason == "drift" for s in p.switches)

    def collapse(m, i):
        base = {"direct": 100.0, "pushdown": 300.0, "staging": 90.0}[m]
        return base * (0.3 if m == "pushdown" and i >= 30 else 1.0)
    p = ScanPolicy()
    modes = run(p, collapse, 80)
    assert any(s.reason == "drift" for s in p.switches) and modes[-15:] == ["direct"] * 15


def test_after_a_drift_a_mode_far_behind_is_not_sampled_again():
    # pushdown (300) falls to 150 at slice 30, below staging (250): a new round samples
    # pushdown and staging, not direct (50: under half of 150), and takes staging.
    def rate(m, i):
        return {"direct": 50.0, "pushdown": 300.0 if i < 30 else 150.0, "staging": 250.0}[m]
    p = ScanPolicy()
    modes = run(p, rate, 80)
    drift = next(s.slice for s in p.switches if s.reason == "drift")
    assert "direct" not in modes[drift:]
    assert "pushdown" in modes[drift + 1:] and modes[-15:] == ["staging"] * 15


def test_a_sample_that_flattered_the_mode_is_not_a_drift():
    # pushdown's two measured sample slices ran at 560, its later slices at 420, beside direct
    # at 415: the first window after the decision corrects the estimate, no re-sampling. A
    # real fall there (to 100: a phase change right after the round) still re-samples.
    for later, drifts in ((420.0, False), (100.0, True)):
        def rate(m, i, later=later):
            if m == "pushdown":
                return 560.0 if i < 14 else later
            return {"direct": 415.0, "staging": 300.0}[m]
        p = ScanPolicy()
        modes = run(p, rate, 80)
        assert any(s.reason == "drift" for s in p.switches) is drifts
        if not drifts:
            assert modes[14:] == ["pushdown"] * 66


def test_a_dropped_mode_is_never_chosen_again():
    # The reader drops direct once a Bloom runtime filter removes most rows: mid-sampling, its
    # slices already out are measured without error, and no later slice goes to it.
    from sluice.adapt.scan_policy import ScanPolicy
    p = ScanPolicy()
    modes = [p.assign(i) for i in range(3)]
    assert modes[0] == "direct"
    p.drop_mode("direct", 3)
    for i in range(3):
        p.observe(i, modes[i], 1000, 0.001)  # direct's slices, already out, come back
    later = []
    for i in range(3, 60):
        m = p.assign(i)
        later.append(m)
        p.observe(i, m, 1000, 0.001 if m == "pushdown" else 0.002)
    assert "direct" not in later and p.current == "pushdown"
    assert any(s.reason == "drop" for s in p.switches)
    p.drop_mode("pushdown", 60)
    p.drop_mode("staging", 61)  # the last mode stays
    assert p.modes == ("staging",)
