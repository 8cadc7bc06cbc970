#!/usr/bin/env bash
# Run kopt's GPU tests on a GPU host.
#
#   test/gpu/run_gpu_tests.sh PTX_DIR OUT_DIR
#
# 1. Builds the runtime alone (no LLVM needed) in build-rt with cmake + ninja:
#    -DKOPT_BUILD_COMPILER=OFF -DKOPT_BUILD_TESTS=OFF, plus
#    -DKOPT_JSON_INCLUDE_DIR=$KOPT_JSON_INCLUDE_DIR when that variable is set
#    (a folder holding nlohmann/json.hpp, for hosts without the package).
# 2. Runs kopt-run on every launch manifest (*.json holding
#    "kopt_manifest_version") under PTX_DIR: OUT_DIR/<name>.kopt.json and
#    OUT_DIR/<name>.kopt.log, <name> being the manifest's path under PTX_DIR
#    with '/' turned into '__'.
# 3. Times PyTorch eager on the same kernels with bench/torch_eager.py:
#    OUT_DIR/<name>.torch.json and .torch.log.
# 4. Prints and writes the comparison table (test/gpu/summarize.py):
#    OUT_DIR/summary.md and OUT_DIR/summary.json.
#
# Environment:
#   KOPT_JSON_INCLUDE_DIR  see 1.
#   KOPT_RT_BUILD_DIR      build folder (default: <repo>/build-rt)
#   KOPT_BUILD_JOBS        ninja -j (default: ninja's)
#   KOPT_RUN_ARGS          extra kopt-run arguments (e.g. "--runs 200")
#   TORCH_EAGER_ARGS       extra torch_eager.py arguments
#   KOPT_SKIP_EAGER=1      skip step 3
#   KOPT_GPU_PACK          auto (default): when more than 8 files would be left
#                          in OUT_DIR, move the per-manifest files and the build
#                          log into OUT_DIR/details.tar.gz, leaving summary.md,
#                          summary.json and details.tar.gz (for transports that
#                          bring back only a few files); 1: always; 0: never
#
# Exit code: 0 when every kopt kernel passed its check; 1 when a check failed
# or kopt-run hit an error (everything is still written); 2 when the build
# failed or the arguments are wrong; 3 when only PyTorch eager had errors.

set -u -o pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 PTX_DIR OUT_DIR" >&2
  exit 2
fi
PTX_DIR=$1
OUT_DIR=$2
if [ ! -d "$PTX_DIR" ]; then
  echo "run_gpu_tests: error: $PTX_DIR is not a folder" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$OUT_DIR" || exit 2
OUT_DIR=$(cd "$OUT_DIR" && pwd)
PTX_DIR=$(cd "$PTX_DIR" && pwd)
BUILD=${KOPT_RT_BUILD_DIR:-$ROOT/build-rt}
PYTHON=${PYTHON:-python3}

# 1. Build. A cache made for another source folder (e.g. copied from another
# machine) would make cmake fail: start afresh then.
if [ -f "$BUILD/CMakeCache.txt" ] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi
cmake_args=(-S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
            -DKOPT_BUILD_COMPILER=OFF -DKOPT_BUILD_TESTS=OFF)
if [ -n "${KOPT_JSON_INCLUDE_DIR:-}" ]; then
  cmake_args+=("-DKOPT_JSON_INCLUDE_DIR=$KOPT_JSON_INCLUDE_DIR")
fi
echo "run_gpu_tests: building kopt-run in $BUILD"
if ! { cmake "${cmake_args[@]}" &&
       ninja -C "$BUILD" ${KOPT_BUILD_JOBS:+-j "$KOPT_BUILD_JOBS"} kopt-run; } \
     >"$OUT_DIR/build.log" 2>&1; then
  tail -n 40 "$OUT_DIR/build.log" >&2
  echo "run_gpu_tests: error: the build failed; see $OUT_DIR/build.log" >&2
  exit 2
fi
KOPT_RUN=$BUILD/bin/kopt-run
if [ ! -x "$KOPT_RUN" ]; then
  echo "run_gpu_tests: error: $KOPT_RUN was not built (CUDA headers not found?);" \
       "see $OUT_DIR/build.log" >&2
  exit 2
fi

# 2 and 3. Every manifest, in a stable order.
mapfile -t manifests < <(find "$PTX_DIR" -type f -name '*.json' \
  ! -name '*.kopt.json' ! -name '*.torch.json' ! -name 'summary.json' \
  -exec grep -l '"kopt_manifest_version"' {} + 2>/dev/null | LC_ALL=C sort)
if [ ${#manifests[@]} -eq 0 ]; then
  echo "run_gpu_tests: error: no launch manifest (*.json) under $PTX_DIR" >&2
  exit 2
fi

kopt_failed=0
eager_failed=0
read -r -a kopt_args <<<"${KOPT_RUN_ARGS:-}"
read -r -a eager_args <<<"${TORCH_EAGER_ARGS:-}"
for manifest in "${manifests[@]}"; do
  rel=${manifest#"$PTX_DIR"/}
  name=${rel%.json}
  name=${name//\//__}
  echo "run_gpu_tests: $rel"
  "$KOPT_RUN" "$manifest" "${kopt_args[@]}" -o "$OUT_DIR/$name.kopt.json" \
    2>"$OUT_DIR/$name.kopt.log"
  rc=$?
  sed 's/^/  /' "$OUT_DIR/$name.kopt.log"
  if [ $rc -ne 0 ]; then
    echo "  kopt-run exit code $rc"
    kopt_failed=1
  fi
done

# 3. PyTorch eager, one process for all manifests (importing torch and creating
# the CUDA context once). Output files follow the manifests' file names.
if [ "${KOPT_SKIP_EAGER:-0}" != 1 ]; then
  echo "run_gpu_tests: PyTorch eager on ${#manifests[@]} manifests"
  "$PYTHON" "$ROOT/bench/torch_eager.py" "${manifests[@]}" "${eager_args[@]}" \
    --out-dir "$OUT_DIR" 2>"$OUT_DIR/eager.torch.log"
  rc=$?
  grep '^torch_eager: error' "$OUT_DIR/eager.torch.log" | sed 's/^/  /'
  if [ $rc -ne 0 ]; then
    echo "  torch_eager.py exit code $rc (see eager.torch.log)"
    eager_failed=1
  fi
fi

# 4. The table.
echo
"$PYTHON" "$ROOT/test/gpu/summarize.py" "$OUT_DIR"
[ $? -ne 0 ] && kopt_failed=1

pack=${KOPT_GPU_PACK:-auto}
if [ "$pack" != 0 ]; then
  (cd "$OUT_DIR" && shopt -s nullglob &&
   files=(*.kopt.json *.kopt.log *.torch.json *.torch.log build.log) &&
   if [ "$pack" = 1 ] || [ $((${#files[@]} + 2)) -gt 8 ]; then
     tar czf details.tar.gz "${files[@]}" && rm -f "${files[@]}" &&
     echo "run_gpu_tests: per-manifest reports and logs are in" \
          "$OUT_DIR/details.tar.gz"
   fi)
fi

if [ $kopt_failed -ne 0 ]; then
  echo "run_gpu_tests: FAILED: a kopt check failed or kopt-run hit an error" >&2
  exit 1
fi
if [ $eager_failed -ne 0 ]; then
  echo "run_gpu_tests: kopt passed, but PyTorch eager had errors" >&2
  exit 3
fi
echo "run_gpu_tests: all kopt checks passed"
exit 0
