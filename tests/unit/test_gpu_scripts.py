"""The scripts a bare GPU machine runs (issue 29 item 7): they must work on a checkout without
``.git`` (the device tool copies the working tree), stop at the first failing step, and skip
the tests that need developer tools by marker. The GPU run itself happens on the device."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "gpu_wheels.sh", ROOT / "scripts" / "gpu_check.sh"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses_and_fails_fast(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    assert "set -euo pipefail" in text
    assert ".git/" not in text  # no .git/info/exclude: the folders are in .gitignore
    assert "set -x" not in text


def test_wheel_folders_are_ignored_by_git():
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "/.whl/" in ignored and "/.whl-gpu/" in ignored


def test_gpu_check_deselects_tooling_tests_and_lists_every_import():
    check = (ROOT / "scripts" / "gpu_check.sh").read_text()
    assert '-m "not tooling"' in check and "--device cuda" in check
    assert 'PATH="$SITE/bin:$PATH"' in check  # tpchgen-cli from the carried wheels
    wheels = (ROOT / "scripts" / "gpu_wheels.sh").read_text()
    for pkg in ("nvidia-nvcomp-cu13", "nvidia-libnvcomp-cu13", "kvikio-cu13", "libkvikio-cu13", "rapids-logger",
                "duckdb"):
        assert pkg in wheels, pkg
    # Every package sluice itself requires is in the GPU machine's image or among the carried
    # wheels (tpcgen-cli was not: the TPC-DS tests errored there).
    import re
    import tomllib
    image = {"torch", "pyarrow", "numpy", "rich", "matplotlib", "regex"}  # the device README's image list
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in deps:
        name = re.match(r"[A-Za-z0-9_.-]+", dep).group(0)
        assert name in image or re.search(rf"\$\(pins [^)]*\b{re.escape(name)}\b", wheels, re.S), name


def test_tooling_tests_carry_the_marker():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "tooling", "-p", "no:cacheprovider",
                          "tests/test_lint.py", "tests/test_shell.py"],
                         cwd=ROOT, capture_output=True, text=True)
    assert "test_ruff_clean" in out.stdout
