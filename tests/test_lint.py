"""ruff over the package, tests and benchmarks (STYLE: ruff in CI)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.tooling


def test_ruff_clean():
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    r = subprocess.run([exe, "check", "--output-format", "concise", "sluice", "tests", "bench"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
