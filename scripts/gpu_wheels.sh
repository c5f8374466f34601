#!/bin/sh
# Fetch, on a machine with PyPI, the wheels a GPU machine without network needs to run sluice's
# tests and benchmarks (Python 3.12, x86-64): .whl/ holds the test and run dependencies the
# device image lacks (about 38 MB), .whl-gpu/ nvCOMP and KvikIO (about 35 MB). Each folder fits
# one call's 64 MiB carry of the device tool; both are git-ignored. See scripts/gpu_check.sh.
set -e
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
grep -qx '/.whl-gpu/' .git/info/exclude 2>/dev/null || echo /.whl-gpu/ >> .git/info/exclude
get() {
  dest=$1; shift
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "$@"
}
get .whl sqlglot==30.30.0 duckdb==2.0.0 rich==15.0.0 markdown-it-py mdurl tpchgen-cli==4.0.0 tpcgen-cli==4.0.0 \
  prompt_toolkit==3.0.53 wcwidth hypothesis==6.170.15 sortedcontainers pexpect==4.9.0 ptyprocess
get .whl-gpu nvidia-nvcomp-cu13 nvidia-libnvcomp-cu13 kvikio-cu13 libkvikio-cu13
du -sh .whl .whl-gpu
