"""Each plan rule on logical before/after pairs (sqlglot's optimizer-fixture style): one file
per rule in ``rules/``, named after it. A case is a query over the TPC-H test data; ``before`` is
its logical plan after the translator and every rule ahead of this one, ``after`` the plan this
rule makes of it (``unchanged``: a case the rule must leave alone). Plans are printed by
:func:`sluice.plan.show.show`.

After a deliberate change, ``SLUICE_UPDATE_FIXTURES=1 pytest tests/unit/test_rule_fixtures.py``
rewrites the plans in the files; read the diff before committing it: it is the test."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import sluice
from sluice.plan.rules import RULES
from sluice.plan.show import show
from sluice.sql.parse import parse_sql
from sluice.sql.translate import Translator

FIXTURES = Path(__file__).with_name("rules")
UPDATE = os.environ.get("SLUICE_UPDATE_FIXTURES") == "1"
_CASE = re.compile(r"^-- case: (.+)$", re.M)


def read_cases(path: Path) -> list[dict]:
    """The cases of one fixture file: title, sql, before, after (None where not yet written)."""
    out = []
    parts = _CASE.split(path.read_text())[1:]
    for title, body in zip(parts[::2], parts[1::2]):
        sql, _, rest = body.partition("\n-- before\n")
        before, _, after = rest.partition("\n-- after\n")
        out.append({"title": title.strip(), "sql": sql.strip(), "before": before.strip() or None,
                    "after": after.strip() or None})
    return out


def write_cases(path: Path, cases: list[dict]) -> None:
    text = [f"-- case: {c['title']}\n{c['sql']}\n-- before\n{c['before']}\n-- after\n{c['after']}\n" for c in cases]
    path.write_text("\n".join(text))


def apply_rules(con, sql: str, name: str):
    """(plan before rule ``name``, the rule)."""
    plan = Translator(con.table, con.files).translate(parse_sql(sql)).plan
    for rule in RULES:
        if rule.__name__ == name:
            return plan, rule
        plan = rule(plan)
    raise AssertionError(f"no rule named {name}")


def test_one_fixture_file_per_rule():
    assert sorted(p.stem for p in FIXTURES.glob("*.sql")) == sorted(r.__name__ for r in RULES)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.sql")), ids=lambda p: p.stem)
def test_rule_fixtures(path, tpch_dir):
    con = sluice.connect(tpch_dir, device="cpu")
    cases = read_cases(path)
    assert cases, f"{path.name} has no case"
    for case in cases:
        plan, rule = apply_rules(con, case["sql"], path.stem)
        before, after = show(plan), show(rule(plan))
        if UPDATE:
            case["before"], case["after"] = before, "unchanged" if after == before else after
            continue
        assert before == case["before"], f"{path.stem}: {case['title']}: the plan before the rule changed"
        want = case["before"] if case["after"] == "unchanged" else case["after"]
        assert after == want, f"{path.stem}: {case['title']}"
        if case["after"] != "unchanged":
            assert after != before, f"{path.stem}: {case['title']}: written as a change, the rule made none"
    if UPDATE:
        write_cases(path, cases)
