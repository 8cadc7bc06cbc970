#!/usr/bin/env bash
# Prepares a benchmark-suite run on this (GPU-less) machine: compiles every problem of
# bench/suite.json to PTX + launch manifest with kopt-opt and assembles it with ptxas
# (bench/compile_suite.py), into .device/suite (ignored by git), which the device tool
# carries to the GPU host. (Not needed when the GPU host has the kopt bundle: there
# bench/run_suite.sh --compile bench/suite.json OUT compiles the suite itself.)
#
#   bench/prepare_suite.sh [BUILD_DIR] [compile_suite.py options...]
#       BUILD_DIR: the build holding bin/kopt-opt (default: $KOPT_BUILD_DIR, else build)
#   # then on the GPU host (device tool, carry [".device"]):
#   PYTHONPATH=<bundle>/python bench/run_suite.sh .device/suite "$OUT/suite"
#
# Exit code: compile_suite.py's (0: no problem failed; problems the suite marks as
# unsupported are not failures).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${1:-}" in -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
build=${KOPT_BUILD_DIR:-$root/build}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
out=$root/.device/suite
rm -rf "$out/problems"
mkdir -p "$out"
# compile_suite.py checks the manifests through the kopt package (python/kopt) over
# this build's libkopt.so.
export KOPT_LIBRARY=${KOPT_LIBRARY:-$build/lib/libkopt.so}
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
python3 "$root/bench/compile_suite.py" --kopt-opt "$build/bin/kopt-opt" --out "$out" \
  -j "${KOPT_JOBS:-2}" "$@"
