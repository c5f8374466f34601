#!/usr/bin/env bash
# The GPU checks of issue 29, in stages that each fit one device call (10 minutes), run from the
# repository root of a bare GPU machine (torch + CUDA, Python 3.12, cupy, pyarrow, numpy, pytest;
# no network) with .whl and .whl-gpu carried (scripts/gpu_wheels.sh fetches them):
#
#   bash scripts/gpu_check.sh tests [pytest args]  # the CUDA-relevant suite with --device cuda
#   bash scripts/gpu_check.sh nccl                 # the NCCL exchange: tests/ranks/test_nccl.py, bench/exchange.py
#   bash scripts/gpu_check.sh decode               # nvCOMP/KvikIO checks, bench/decode.py, bench/syncs.py
#   bash scripts/gpu_check.sh kernels              # issue 50: the Triton page kernels -- compiled once
#                                                  # (seconds), the decoder tests on CUDA against pyarrow
#                                                  # (every TPC-H / SSB column at SF 0.1), one file under
#                                                  # compute-sanitizer memcheck, bench/decode.py
#                                                  # --kernel-only and end to end (about 7 minutes)
#   bash scripts/gpu_check.sh tpch [SF] [ARGS]     # TPC-H on the GPU vs DuckDB on every core
#                                                  # (ARGS to bench/tpch.py: --set decoder=device)
#   bash scripts/gpu_check.sh second               # corrupt-stream probes, the rest of the suite,
#                                                  # profiles, TPC-H SF 1 decoder=arrow and on the CPU
#   bash scripts/gpu_check.sh first                # one call: the whole suite in parallel
#                                                  # (pytest-xdist), the OOM and sync probes beside
#                                                  # it, then bench/decode.py and TPC-H SF 1
#   bash scripts/gpu_check.sh recheck              # one call (about 7 minutes): the whole suite,
#                                                  # then TPC-H SF 10, 7 of its queries again with
#                                                  # coalesce_rows off, and a profile of q19, q10, q12
#   bash scripts/gpu_check.sh ab                   # after recheck: 6 TPC-H SF 10 queries with 8, 12
#                                                  # and 14 I/O threads (about 4 minutes)
#   bash scripts/gpu_check.sh all                  # one call (about 8 minutes): first, then TPC-H
#                                                  # SF 10 and a profile of q01, q06, q10 there; the
#                                                  # logs in one $OUT/logs.tgz (a call returns 8 files)
#
# A stage fails when any of its steps fails (each step still runs; $OUT/failed.txt names the
# failed ones, a step's own log is in $OUT). Tests that
# need the developer's tools rather than a GPU (ruff, a pseudo-terminal) are deselected by their
# marker, not left to fail. Data is generated under /tmp/sluice-data on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=/tmp/site
mkdir -p "$SITE"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl
fi
if [ -f .whl-gpu/gpu-site.tar.xz ]; then  # Python's lzma: no xz binary needed
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .whl-gpu/gpu-site.tar.xz "$SITE"
fi
export PYTHONPATH="$SITE:$PWD:$PWD/scripts" PATH="$SITE/bin:$PATH" PYTHONUNBUFFERED=1 SLUICE_TEST_DATA=/tmp/sluice-data/test
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/setup.log" || true
python3 - <<'PY' 2>&1 | tee -a "$OUT/setup.log" || echo "STEP FAILED: device info" | tee -a "$OUT/failed.txt"
import torch
from sluice.io.parquet.decode import nvcomp
from sluice.io import kvikio_read
print(f"torch {torch.__version__} cuda {torch.version.cuda} device {torch.cuda.get_device_name()}")
print(f"nvcomp available: {nvcomp.available()}  kvikio available: {kvikio_read.available()}"
      f"  compat mode: {kvikio_read.compat_mode()}")
PY
stage=${1:-tests}; [ $# -gt 0 ] && shift
failed=0
run() {  # a step: its output in $OUT/<name>.log, its own time limit; a failure is noted, the stage goes on
  name=$1; limit=$2; shift 2
  if ! timeout "$limit" "$@" 2>&1 | tee -a "$OUT/$name.log"; then
    echo "STEP FAILED: $name" | tee -a "$OUT/failed.txt"; failed=1
  fi
}
tpch_data() {  # SF, folder: generated unless complete (lineitem written last)
  [ -f "$2/lineitem.parquet" ] || run setup 200 python3 -m sluice.cli datagen tpch --sf "$1" --out "$2" --force
}
case "$stage" in
  tests)
    [ $# -eq 0 ] && set -- tests/test_devices.py tests/decode tests/scan tests/spill \
      tests/sql/test_tpch.py tests/sql/test_ssb.py tests/sql/test_semantics.py tests/sql/test_files.py \
      tests/sql/test_refusals.py
    run tests 500 python3 -m pytest -q -x -p no:cacheprovider -m "not tooling" --device cuda \
      --durations=10 "$@" ;;
  nccl)  # issue 27's one-GPU path: rows cross NCCL as tensor bytes (ranks=1, loopback)
    run setup 120 python3 -c 'import sys, pathlib; from sluice.datagen.tpch import generate_tpch
r = pathlib.Path(sys.argv[1]); generate_tpch(0.1, r / "tpch")' "$SLUICE_TEST_DATA"
    run nccl 240 python3 -m pytest -q -p no:cacheprovider -rfE tests/ranks/test_nccl.py tests/ranks/test_fail_stop.py
    tpch_data 1 /tmp/sluice-data/sf1
    run exchange 200 python3 bench/exchange.py --data /tmp/sluice-data/sf1 --ranks 1 --runs 2 --device cuda \
      --wires arrow,tensor --loopback ;;
  decode)
    tpch_data 1 /tmp/sluice-data/sf1
    run codecs 90 python3 -m pytest -q -p no:cacheprovider tests/decode/test_device_codecs.py \
      tests/decode/test_device_decompression.py
    run decode 200 python3 bench/decode.py --data /tmp/sluice-data/sf1/lineitem.parquet --device cuda \
      --runs 3 --codecs none snappy zstd lz4 gzip
    run syncs 90 python3 bench/syncs.py --sf 1 --data /tmp/sluice-data/sf1 ;;
  kernels)  # issue 50; every step's log in $OUT, each also names the GPU (setup.log)
    run setup 90 python3 -c 'import sys, pathlib; from sluice.datagen.tpch import generate_tpch
from sluice.datagen.ssb import derive_ssb
r = pathlib.Path(sys.argv[1]); generate_tpch(0.1, r / "tpch"); derive_ssb(r / "tpch", r / "ssb")' "$SLUICE_TEST_DATA"
    # Compile time: the kernel tests with an empty Triton cache, then again with it warm; every
    # kernel kind and value width is launched by them (the difference is the compiling).
    export TRITON_CACHE_DIR=/tmp/triton-cache-cold; rm -rf "$TRITON_CACHE_DIR"
    t0=$(date +%s.%N)
    run compile 120 python3 -m pytest -q -p no:cacheprovider --device cuda tests/decode/test_page_kernels.py
    t1=$(date +%s.%N)
    run compile 45 python3 -m pytest -q -p no:cacheprovider --device cuda tests/decode/test_page_kernels.py
    t2=$(date +%s.%N)
    python3 -c "import sys; a, b, c = map(float, sys.argv[1:]); print(f'kernels compiled in about {(b - a) - (c - b):.1f} s (cold {b - a:.1f} s, warm {c - b:.1f} s)')" \
      "$t0" "$t1" "$t2" | tee -a "$OUT/compile.log"
    # Against pyarrow on CUDA: the encoding matrix, every TPC-H and SSB column at SF 0.1 (as
    # generated and rewritten), corrupt pages, the scans end to end.
    run decoder 180 python3 -m pytest -q -p no:cacheprovider -m "not tooling" --device cuda -n 4 --durations=10 -rfE \
      tests/decode/test_device_decoder.py tests/decode/test_corrupt_pages.py tests/decode/test_decoder_setting.py \
      tests/decode/test_decode_bench.py tests/decode/test_device_decompression.py
    if command -v compute-sanitizer > /dev/null; then  # one file, every kernel kind on it
      run memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 1 python3 bench/decode.py \
        --data "$SLUICE_TEST_DATA/tpch/orders.parquet" --device cuda --rows 5000 --runs 1 --codecs snappy \
        --schemes dictionary plain delta byte_stream_split --kernel-only
    else
      echo "compute-sanitizer not installed: memcheck not run" | tee -a "$OUT/memcheck.log"
    fi
    run decode 90 python3 bench/decode.py --data "$SLUICE_TEST_DATA/tpch/lineitem.parquet" --device cuda \
      --runs 3 --codecs none snappy zstd --kernel-only ;;
  tpch)  # SF 10's data takes one call of its own the first time (the machine stays warm a while)
    sf=${1:-10}; [ $# -gt 0 ] && shift  # the rest goes to bench/tpch.py: --set pipeline=blocking, --queries ...
    tpch_data "$sf" "/tmp/sluice-data/sf$sf"
    [ -f "/tmp/sluice-data/sf$sf/lineitem.parquet" ] && \
      run tpch 360 python3 bench/tpch.py --sf "$sf" --data "/tmp/sluice-data/sf$sf" --device cuda --runs 1 "$@" ;;
  first)  # every failure's traceback lands in $OUT/failures.txt as it happens (scripts/pytest_live.py)
    run setup 120 python3 -c 'import sys, pathlib; from sluice.datagen.tpch import generate_tpch
from sluice.datagen.ssb import derive_ssb
r = pathlib.Path(sys.argv[1]); generate_tpch(0.1, r / "tpch"); derive_ssb(r / "tpch", r / "ssb")' "$SLUICE_TEST_DATA"
    tpch_data 1 /tmp/sluice-data/sf1
    # the probes beside the suite: neither is timed
    ( run syncs 100 python3 bench/syncs.py --sf 1 --data /tmp/sluice-data/sf1 --queries scan q01 q06
      run oom 100 python3 bench/oom_probe.py --data /tmp/sluice-data/sf1 --cap-mib 768 ) > /dev/null 2>&1 &
    probes=$!
    run tests "${SUITE_S:-210}" python3 -m pytest -q -p no:cacheprovider -p pytest_live -m "not tooling" \
      --device "${TEST_DEVICE:-cuda}" -n 12 --timeout 120 --durations=15 -rfE tests/test_devices.py \
      tests/decode tests/scan tests/spill tests/sql tests/layout tests/test_cli.py tests/unit tests/ranks/test_nccl.py
    wait "$probes" || true
    run decode 170 python3 bench/decode.py --data /tmp/sluice-data/sf1/lineitem.parquet --device cuda \
      --runs 1 --rows 1000000 --codecs none snappy zstd lz4 gzip
    run tpch 90 python3 bench/tpch.py --sf 1 --data /tmp/sluice-data/sf1 --device cuda --runs 1 ;;
  second)  # after fixing what 'first' found: nvCOMP on corrupt streams (a process each), the failed
    # tests and those 'first' did not reach, where TPC-H's time goes, TPC-H SF 1 decoder=arrow and on the CPU
    run setup 120 python3 -c 'import sys, pathlib; from sluice.datagen.tpch import generate_tpch
from sluice.datagen.ssb import derive_ssb
r = pathlib.Path(sys.argv[1]); generate_tpch(0.1, r / "tpch"); derive_ssb(r / "tpch", r / "ssb")' "$SLUICE_TEST_DATA"
    tpch_data 1 /tmp/sluice-data/sf1
    for c in SNAPPY ZSTD LZ4_RAW GZIP; do
      (timeout 60 python3 scripts/gpu_corrupt_probe.py $c >> "$OUT/corrupt.log" 2>&1; echo "$c: exit $?" >> "$OUT/corrupt.log") &
    done
    run tests "${SUITE_S:-150}" python3 -m pytest -q -p no:cacheprovider -p pytest_live -m "not tooling" \
      --device "${TEST_DEVICE:-cuda}" -n 14 --timeout 120 --durations=10 -rfE tests/test_devices.py \
      tests/decode tests/spill tests/sql/test_numeric_edges.py tests/sql/test_optimizations_off.py tests/layout \
      tests/test_cli.py tests/unit tests/sql
    wait
    run profile 60 python3 bench/profile_query.py --data /tmp/sluice-data/sf1 --device cuda --queries q01,q03 \
      --set decoder=arrow --top 18
    run profile 25 python3 bench/profile_query.py --data /tmp/sluice-data/sf1 --device cuda --queries q01 \
      --set decoder=device --top 18
    run tpch 60 python3 bench/tpch.py --sf 1 --data /tmp/sluice-data/sf1 --device cuda --runs 1 --set decoder=arrow
    run tpch 40 python3 bench/tpch.py --sf 1 --data /tmp/sluice-data/sf1 --device cpu --runs 1 ;;
  recheck)  # after CPU-side changes (about 5 minutes): the whole suite, then all of TPC-H SF 10
    run setup 120 python3 -c 'import sys, pathlib; from sluice.datagen.tpch import generate_tpch
from sluice.datagen.ssb import derive_ssb
r = pathlib.Path(sys.argv[1]); generate_tpch(0.1, r / "tpch"); derive_ssb(r / "tpch", r / "ssb")' "$SLUICE_TEST_DATA"
    run tests "${SUITE_S:-200}" python3 -m pytest -q -p no:cacheprovider -p pytest_live -m "not tooling" \
      --device cuda -n 14 --timeout 120 --durations=10 -rfE tests/test_devices.py \
      tests/decode tests/scan tests/spill tests/sql tests/layout tests/test_cli.py tests/unit tests/ranks/test_nccl.py
    tpch_data 10 /tmp/sluice-data/sf10
    run tpch 120 python3 bench/tpch.py --sf 10 --data /tmp/sluice-data/sf10 --device cuda --runs 1
    # coalesce_rows's A/B: the same queries with loaded tasks never merged (the default merges on a GPU)
    run tpch_unmerged 90 python3 bench/tpch.py --sf 10 --data /tmp/sluice-data/sf10 --device cuda --runs 1 \
      --queries q01,q03,q06,q10,q12,q14,q19 --set coalesce_rows=1
    # where the slowest queries of the last GPU run (q19 3.2x, q10 3.0x, q12 2.8x DuckDB) spend it
    run profile 80 python3 bench/profile_query.py --data /tmp/sluice-data/sf10 --device cuda \
      --queries q19,q10,q12 --top 22
    (cd "$OUT" && tar czf /tmp/sluice-logs.tgz --exclude logs.tgz . && find . -maxdepth 1 -type f ! -name logs.tgz -delete \
      && mv /tmp/sluice-logs.tgz logs.tgz) ;;
  ab)  # a second call after recheck (SF 10 generated): I/O threads beyond the default 8, side by side with DuckDB
    tpch_data 10 /tmp/sluice-data/sf10
    for t in 8 12 14; do
      run "tpch_io$t" 100 python3 bench/tpch.py --sf 10 --data /tmp/sluice-data/sf10 --device cuda --runs 1 \
        --queries q01,q03,q06,q10,q12,q19 --set io_threads=$t
    done ;;
  all)
    SUITE_S=${SUITE_S:-230} bash "$0" first || failed=1
    bash "$0" tpch 10 || failed=1
    run profile 90 python3 bench/profile_query.py --data /tmp/sluice-data/sf10 --device cuda \
      --queries q01,q06,q10 --top 22
    (cd "$OUT" && tar czf /tmp/sluice-logs.tgz --exclude logs.tgz . && find . -maxdepth 1 -type f ! -name logs.tgz -delete \
      && mv /tmp/sluice-logs.tgz logs.tgz) ;;
  *) echo "unknown stage $stage (tests, nccl, decode, kernels, tpch, first, second, recheck, ab, all)" >&2; exit 2 ;;
esac
exit "$failed"
