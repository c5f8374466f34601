#!/usr/bin/env bash
# Move constraints.txt (the versions the suite passed with) to the newest releases that
# pyproject.toml's bounds allow, in three steps that stop at the first failure:
#   1. a scratch venv takes the newest releases (scripts/setup.sh with LOCK=none; torch stays 2.13.0);
#   2. the whole suite runs in it, exactly as .ci/run runs it;
#   3. only then constraints.txt is rewritten from that venv (and, with --commit, committed alone).
# A failing suite leaves constraints.txt as it was and prints what changed, so the fix (say, a new
# sqlglot argument to decide in sluice/sql/coverage.py) lands with the lock in the same commit.
# To move past a major, raise its bound in pyproject.toml first. Usage: scripts/upgrade_lock.sh [--commit]
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
VENV="$tmp/venv" LOCK=none ./scripts/setup.sh
new="$tmp/constraints.txt"
{ sed -n '/^#/p' constraints.txt
  "$tmp/venv/bin/python" -m pip freeze --exclude-editable | grep -viE '^(torch|sluicedb)=='; } > "$new"
echo "releases that would change:"; diff <(grep -v '^#' constraints.txt) <(grep -v '^#' "$new") || true
"$tmp/venv/bin/python" -m pytest -q -n auto
cp "$new" constraints.txt
echo "constraints.txt updated"
if [ "$commit" = --commit ]; then
  git add constraints.txt && git commit -m "constraints.txt: the newest releases within pyproject.toml's bounds, suite passed"
fi
