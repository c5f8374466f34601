"""T_min's network term as PystachIO defines it: the bytes a rank's link carries one way (the
larger of sent and received) over the all-to-all rate, which is itself a one-way rate measured
while every rank sends and receives at once. It divided sent + received by that rate: twice the
bound."""

from __future__ import annotations

import json

from sluice.analyze import t_min


def test_network_term_is_one_way_bytes_over_the_all_to_all_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "sluice").mkdir(parents=True)
    (tmp_path / "cache" / "sluice" / "calibration.json").write_text(json.dumps(
        {str(tmp_path.resolve()): {"read_cached_bps": 1e12, "all_to_all_bps": {"2": 1e8}}}))
    ex = {"bytes_sent": [0, 300_000_000], "bytes_received": 200_000_000}
    ranks = [{"bytes_read": 1000, "exchanges": [ex]},
             {"bytes_read": 1000, "exchanges": [{"bytes_sent": [100_000_000, 0], "bytes_received": 300_000_000}]}]
    summary = {"bytes_read": 1000, "bytes_h2d": 0, "wall": 6.0}
    t, frac = t_min(summary, tmp_path, "cpu", ranks)["cached"]
    assert abs(t - 3.0) < 1e-9  # 300 MB one way at 100 MB/s, not (300 + 200) MB
    assert abs(frac - 0.5) < 1e-9
