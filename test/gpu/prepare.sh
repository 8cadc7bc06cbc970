#!/usr/bin/env bash
# Prepares a GPU test run on this (GPU-less) machine: writes the GPU test problems
# (test/gpu/problems.py), compiles each to PTX + launch manifest with kopt-opt
# (with NAME.sched.json as --kopt-schedule where the problem has one),
# assembles each with ptxas, and copies the nlohmann/json headers, all under
# .device/ (ignored by git) so that the device tool can carry them:
#
#   test/gpu/prepare.sh [BUILD_DIR]         # default: build
#   # then, on the GPU host (device tool, carry [".device"]):
#   KOPT_JSON_INCLUDE_DIR=$PWD/.device/include test/gpu/run_gpu_tests.sh .device/ptx $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
kopt_opt=$build/bin/kopt-opt
ptxas=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
[ -x "$kopt_opt" ] || { echo "prepare.sh: $kopt_opt not found: build kopt first" >&2; exit 1; }
[ -x "$ptxas" ] || { echo "prepare.sh: ptxas not found (set PTXAS)" >&2; exit 1; }

out=$root/.device
rm -rf "$out/ptx" "$out/src"
mkdir -p "$out/ptx" "$out/src" "$out/include"
python3 "$root/test/gpu/problems.py" "$out/src"
fail=0
for f in "$out"/src/*.mlir; do
  name=$(basename "$f" .mlir)
  sched=()
  [ -f "$out/src/$name.sched.json" ] && sched=(--kopt-schedule="$out/src/$name.sched.json")
  if ! "$kopt_opt" "$f" --kopt-to-ptx="output=$out/ptx/$name.ptx" "${sched[@]}" -o /dev/null; then
    echo "prepare.sh: kopt-opt failed on $f" >&2; fail=1; continue
  fi
  if ! "$ptxas" -arch=sm_90a "$out/ptx/$name.ptx" -o /dev/null; then
    echo "prepare.sh: ptxas rejected $out/ptx/$name.ptx" >&2; fail=1
  fi
done
cp -r "${KOPT_JSON_INCLUDE_DIR:-/usr/include}/nlohmann" "$out/include/"
echo "prepare.sh: $(ls "$out"/ptx/*.json | wc -l) manifests in $out/ptx"
exit $fail
