#!/usr/bin/env bash
# The GPU tests on a GPU host that has no LLVM, with the compiler from the
# self-contained bundle (scripts/bundle.sh), as a user would run them there:
#
#   test/gpu/host-check.sh BUNDLE_DIR OUT_DIR [REFERENCE_PTX_DIR]
#
# 1. compiles every GPU test problem (test/gpu/problems.py) on this host with
#    BUNDLE_DIR/bin/kopt-opt and assembles it with ptxas (test/gpu/prepare.sh);
# 2. with REFERENCE_PTX_DIR (PTX + manifests compiled elsewhere, e.g. by
#    prepare.sh on the development machine), checks they are byte-identical;
# 3. runs and checks every kernel with kopt-run (test/gpu/run_gpu_tests.sh,
#    PyTorch eager skipped): OUT_DIR/gpu/summary.md;
# 4. runs the GPU tests of the Python package with the bundle's libkopt.so,
#    compiling in-process (test/gpu/test_package.py), and the special-value
#    tests against PyTorch (test/gpu/test_special_values.py): OUT_DIR/package.log.
# Exit code: 0 when every step passed, 1 otherwise.
set -u -o pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUNDLE_DIR OUT_DIR [REFERENCE_PTX_DIR]" >&2
  exit 2
fi
bundle=$(cd "$1" && pwd)
out=$2
ref=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
status=0
"$bundle/bin/kopt-opt" --version | head -n 3

echo "host-check: 1. compiling the GPU test problems with the bundle's kopt-opt"
t0=$SECONDS
if ! KOPT_JSON_INCLUDE_DIR=$bundle/include "$root/test/gpu/prepare.sh" "$bundle" \
    > "$out/prepare.log" 2>&1; then
  echo "host-check: prepare.sh failed (tail of $out/prepare.log):"; tail -n 20 "$out/prepare.log"
  status=1
fi
echo "host-check:    $(ls "$root"/.device/ptx/*.json 2>/dev/null | wc -l) manifests in $((SECONDS - t0)) s"

if [ -n "$ref" ]; then
  n=0; differ=0
  for f in "$ref"/*; do
    n=$((n + 1))
    cmp -s "$f" "$root/.device/ptx/$(basename "$f")" || { differ=$((differ + 1)); echo "  differs: $(basename "$f")"; }
  done
  echo "host-check: 2. $n reference files, $differ differ from this host's"
  [ $differ = 0 ] || status=1
fi

echo "host-check: 3. kopt-run on every manifest"
if ! KOPT_JSON_INCLUDE_DIR=$bundle/include KOPT_SKIP_EAGER=1 \
    "$root/test/gpu/run_gpu_tests.sh" "$root/.device/ptx" "$out/gpu" > "$out/gpu.log" 2>&1; then
  status=1
fi
tail -n 5 "$out/gpu.log"

echo "host-check: 4. the Python package's GPU tests (compiling here)"
if ! KOPT_LIBRARY=$bundle/lib/libkopt.so PYTHONPATH=$bundle/python:$root/python \
    python3 -m pytest -q -p no:cacheprovider "$root/test/gpu/test_package.py" \
    "$root/test/gpu/test_special_values.py" \
    > "$out/package.log" 2>&1; then
  status=1
fi
tail -n 3 "$out/package.log"
exit $status
