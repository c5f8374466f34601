#!/bin/sh
# The GPU checks of issue 12, in stages that each fit one device call (10 minutes), run from the
# repository root on the device machine with .whl carried (scripts/gpu_wheels.sh fetches it):
#
#   sh scripts/gpu_check.sh tests [pytest args]   # the suite on CUDA (default: tests/decode tests/unit)
#   sh scripts/gpu_check.sh decode                # bench/decode.py --device cuda at SF 1
#   sh scripts/gpu_check.sh tpch [SF]             # TPC-H on the GPU vs DuckDB on every core, + syncs
#
# Everything it writes goes to $OUT (the device tool's return folder) when set. Data is generated
# under /tmp/sluice-data on first use (SF 0.1 for the tests).
set -e
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
if [ -d .whl-gpu ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl-gpu/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SLUICE_TEST_DATA=/tmp/sluice-data/test
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
stage=${1:-tests}; [ $# -gt 0 ] && shift
case "$stage" in
  tests)
    [ $# -eq 0 ] && set -- tests/decode tests/unit
    python3 -m pytest -q -x -p no:cacheprovider --device cuda "$@" 2>&1 | tee "$OUT/tests.log" ;;
  decode)
    [ -d /tmp/sluice-data/sf1 ] || python3 -m sluice.cli datagen tpch --sf 1 --out /tmp/sluice-data/sf1
    python3 bench/decode.py --data /tmp/sluice-data/sf1/lineitem.parquet --device cuda --runs 3 \
      --codecs none snappy zstd lz4 2>&1 | tee "$OUT/decode.log" ;;
  tpch)
    sf=${1:-10}
    [ -d "/tmp/sluice-data/sf$sf" ] || python3 -m sluice.cli datagen tpch --sf "$sf" --out "/tmp/sluice-data/sf$sf"
    python3 bench/tpch.py --sf "$sf" --data "/tmp/sluice-data/sf$sf" --device cuda 2>&1 | tee "$OUT/tpch.log"
    python3 bench/syncs.py --sf 1 2>&1 | tee "$OUT/syncs.log" ;;
  *) echo "unknown stage $stage (tests, decode, tpch)" >&2; exit 2 ;;
esac
