"""triton is optional: without it the package imports and answers (pyarrow decodes), and
``decoder=device`` is a one-line refusal; without a GPU (and the interpreter) too."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def test_without_triton_the_package_runs_and_decoder_device_is_refused(tmp_path):
    pq.write_table(pa.table({"k": [1, 2, 3]}), tmp_path / "t.parquet")
    code = f"""
import sys
sys.modules["triton"] = None  # an import of triton fails, as where it is not installed
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "triton" else real(name, *a)
import sluice
from sluice.errors import UnsupportedError
con = sluice.connect({str(tmp_path)!r})
assert con.sql("select sum(k) from t").to_arrow()[0][0].as_py() == 6
try:
    sluice.connect({str(tmp_path)!r}, decoder="device").sql("select sum(k) from t").to_arrow()
except UnsupportedError as e:
    print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "unsupported: decoder=device: triton is not installed"


def test_without_a_gpu_decoder_device_is_one_line(tmp_path):
    pq.write_table(pa.table({"k": [1, 2, 3]}), tmp_path / "t.parquet")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "query", "--data", str(tmp_path), "--device", "cpu",
                        "select sum(k) from t", "--set", "decoder=device"], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip() == ("unsupported: decoder=device: the Triton page kernels need a CUDA device "
                                "(or TRITON_INTERPRET=1), not cpu"), r.stderr
