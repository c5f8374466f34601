"""The docs' examples run (issue 49): every code block marked ``<!-- run -->`` in the README and in
``docs/`` is executed on TPC-H SF 0.01, so the docs cannot drift from the CLI and the API again.

A marker is an HTML comment on the line before a fenced ``bash`` or ``python`` block:

- ``<!-- run -->``: every command exits 0 and prints something (or writes its ``-o`` file); a
  query's column aliases (``as n``) appear in what it prints;
- ``<!-- run: exit=1 -->``: every command fails with that status and one line on stderr;
- ``<!-- run: expect=TEXT -->``: and TEXT appears in the block's output.

In a bash block each line (``\\`` continues it) is a command: ``data/tpch-sf1`` becomes the test's
data, ``sluice/queries/`` this checkout's queries, ``sluice`` this interpreter's ``sluice.cli``;
``sluice datagen`` and ``sluice demo`` lines are skipped (the data is made here), as are
``--device cuda`` lines without a GPU. A python block runs as one script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from sluice.datagen.tpch import generate_tpch

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKED = re.compile(r"^<!-- run(?::\s*(?P<opts>.*?))?\s*-->\n```(?P<lang>bash|python)\n(?P<body>.*?)^```", re.S | re.M)
SKIP = ("sluice datagen", "sluice demo", "source ")


def _blocks(doc: Path) -> list[tuple[dict, str, str]]:
    out = []
    for m in MARKED.finditer(doc.read_text()):
        opts = dict(o.strip().split("=", 1) for o in (m["opts"] or "").split(";") if o.strip())
        out.append((opts, m["lang"], m["body"]))
    return out


def _commands(body: str) -> list[str]:
    lines = body.replace("\\\n", " ").splitlines()
    cmds = []
    for ln in lines:
        ln = re.sub(r"\s+#\s.*$", "", ln).strip()
        if not ln or ln.startswith(SKIP):
            continue
        if "--device cuda" in ln and not torch.cuda.is_available():
            continue
        cmds.append(ln)
    return cmds


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder with ``data/tpch-sf1`` (SF 0.01 here) and a ``sluice`` command on PATH."""
    work = tmp_path_factory.mktemp("docs")
    generate_tpch(0.01, work / "data" / "tpch-sf1")
    (work / "bin").mkdir()
    exe = work / "bin" / "sluice"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sluice.cli "$@"\n')
    exe.chmod(0o755)
    return work


def _run(workdir: Path, lang: str, text: str) -> subprocess.CompletedProcess:
    text = text.replace("sluice/queries/", f"{ROOT}/sluice/queries/")
    env = {**os.environ, "PATH": f"{workdir / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "PYTHONWARNINGS": "ignore", "COLUMNS": "160", "SLUICE_THREADS": "1"}
    argv = ["bash", "-c", text] if lang == "bash" else [sys.executable, "-c", text]
    return subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)


def _check(cmd: str, r: subprocess.CompletedProcess, opts: dict, workdir: Path) -> str | None:
    want = int(opts.get("exit", 0))
    if r.returncode != want:
        return f"exit {r.returncode}, not {want}: {r.stderr[-600:]}"
    if "Traceback" in r.stderr:
        return f"a traceback: {r.stderr[-600:]}"
    if want:
        return None if len(r.stderr.strip().splitlines()) == 1 else f"not one line on stderr: {r.stderr!r}"
    out = re.search(r"(?:^|\s)-o\s+(\S+)", cmd)
    if out:
        return None if (workdir / out.group(1)).exists() else f"{out.group(1)} was not written"
    if not r.stdout.strip():
        return "printed nothing"
    if cmd.startswith(("sluice query", "echo")) and not re.search(r"--(explain|analyze)", cmd):
        for alias in re.findall(r"\bas (\w+)\b", cmd):
            if alias not in r.stdout:
                return f"column {alias!r} missing from: {r.stdout[:400]}"
    return None


@pytest.mark.parametrize("doc", [d for d in DOCS if _blocks(d)], ids=lambda p: str(p.relative_to(ROOT)))
def test_marked_examples_run(doc, workdir):
    jobs = []
    for opts, lang, body in _blocks(doc):
        if lang == "bash":
            jobs += [(opts, lang, cmd, cmd) for cmd in _commands(body)]
        else:
            jobs.append((opts, lang, body.replace("data/tpch-sf1", str(workdir / "data" / "tpch-sf1")), "python block"))
    assert jobs
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: _run(workdir, j[1], j[2]), jobs))
    failures, expected = [], {}
    for (opts, lang, text, name), r in zip(jobs, results):
        why = _check(text if lang == "bash" else "", r, opts, workdir)
        if why:
            failures.append(f"{name}: {why}")
        if "expect" in opts:
            key = (opts["expect"], id(opts))
            expected[key] = expected.get(key, False) or opts["expect"] in r.stdout + r.stderr
    failures += [f"no command of a block printed {text!r}" for (text, _), ok in expected.items() if not ok]
    assert not failures, "\n".join(failures)


def test_every_page_with_commands_has_runnable_examples():
    """The pages a new reader follows to install, query and run on ranks each run some of their examples."""
    for name in ("README.md", "docs/guide.md", "docs/ranks.md", "docs/sql.md", "docs/layout.md", "docs/memory.md",
                 "docs/scan.md"):
        assert _blocks(ROOT / name), name
