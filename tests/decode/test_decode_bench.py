"""bench/decode.py's path (end to end and ``--kernel-only``) runs, on a tiny file: on CPU the
kernels run in Triton's interpreter, so the GPU session's call cannot meet a broken script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

ROOT = Path(__file__).resolve().parents[2]


def test_decode_bench_runs_kernel_only_and_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    n = 100
    t = pa.table({"k": pa.array(rng.integers(0, 50, n)),
                  "s": pa.array(np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]),
                  "m": pa.array([None if i % 5 == 0 else i for i in range(n)], pa.int64())})
    pq.write_table(t, tmp_path / "t.parquet")
    env = {**os.environ}
    if not torch.cuda.is_available():
        env["TRITON_INTERPRET"] = "1"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "decode.py"), "--data", str(tmp_path / "t.parquet"),
                        "--device", "cuda" if torch.cuda.is_available() else "cpu", "--rows", str(n), "--runs", "1",
                        "--codecs", "snappy", "--schemes", "delta", "--kernel-only"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert "kernel GB/s" in lines[1] and len(lines) == 3, r.stdout
    assert lines[2].split()[:2] == ["delta", "snappy"] and len(lines[2].split()) == 9, r.stdout
