"""The front door stays true (issue 49): the settings page is generated from ``sluice.config`` and
matches the code, the README is one screen that opens with the two commands, and every link and
repository path the README, ``docs/`` and ``bench/results/`` name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sluice import config
from sluice.docs_settings import render

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["install", "guide", "sql", "settings", "memory", "scan", "gpu", "ranks", "layout", "benchmarks",
         "testing", "design"]
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "bench" / "results").glob("*.md"))]


def test_the_settings_page_is_generated_from_the_code():
    page = (ROOT / "docs" / "settings.md").read_text()
    assert page == render(), "docs/settings.md is stale: python -m sluice.docs_settings > docs/settings.md"


def test_every_setting_of_every_area_is_on_the_settings_page():
    page = (ROOT / "docs" / "settings.md").read_text()
    for area, keys in config.AREAS.items():
        assert f"\n## {area}\n" in page
        for key in keys:
            assert f"\n### `{key}`\n" in page, key
            assert f"SLUICE__{area.upper()}__{key.upper()}" in page


def test_the_generator_is_not_part_of_the_engine():
    for path in (ROOT / "sluice").rglob("*.py"):
        if path.name != "docs_settings.py":
            assert "docs_settings" not in path.read_text(), path


def test_the_readme_is_one_screen_opening_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("./scripts/setup.sh && .venv/bin/sluice demo")
    assert block[1].startswith("./scripts/setup.sh && .venv/bin/python -m pytest -q -n auto")
    assert text.index("```bash") < 200  # before anything else but the title and one line


@pytest.mark.parametrize("page", PAGES)
def test_the_docs_pages_exist_and_the_readme_links_them(page):
    assert (ROOT / "docs" / f"{page}.md").is_file()
    assert f"](docs/{page}.md)" in (ROOT / "README.md").read_text()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


#: A repository path as the docs write them: a top folder of this repository, then a path.
REPO_PATH = re.compile(r"(?<![\w/.-])((?:sluice|tests|bench|scripts|docs|\.ci)/[a-z0-9_.][\w./-]*[\w/]|(?:sluice|tests|bench|scripts|docs)/(?![\w]))")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_repository_path_exists(doc):
    text = doc.read_text()
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            missing.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            missing.append(target)
    for path in REPO_PATH.findall(text):
        if "<" in path or "*" in path:
            continue
        if not (ROOT / path).exists():
            missing.append(path)
    assert not missing, f"{doc.name} names what the repository lacks: {missing}"


def test_no_page_cites_a_design_file_the_repository_lacks():
    """The README used to cite sections of a design file the repository never had; they live in docs/design.md."""
    cite = re.compile("DESIGN" + r" §\d")
    for path in [*DOCS, *(ROOT / "sluice").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        assert not cite.search(path.read_text()), path
