#!/usr/bin/env bash
# Configures (first time only) and builds kopt with CMake + Ninja (+ ccache when present).
#
#   scripts/build.sh [NINJA TARGET...]
#
# Runs scripts/setup.sh first unless KOPT_SKIP_SETUP=1. The build folder is build/
# (or $KOPT_BUILD_DIR); KOPT_JOBS sets the parallel jobs (default: the CPU count),
# KOPT_BUILD_TYPE the CMake build type (Release), KOPT_CMAKE_ARGS extra arguments
# for the first configure. To reconfigure from scratch, delete the build folder.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TAG=build

case "${1:-}" in -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

if [ "${KOPT_SKIP_SETUP:-0}" != 1 ]; then
  "$KOPT_ROOT/scripts/setup.sh"
fi

build=$(kopt_build_dir)
jobs=${KOPT_JOBS:-$(nproc 2>/dev/null || echo 2)}
case "$jobs" in
  ''|*[!0-9]*|0) echo "build.sh: KOPT_JOBS must be a positive number, got '$jobs'" >&2; exit 2 ;;
esac

if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build/CMakeCache.txt"; then
  kopt_error $TAG "$build was configured with another CMake generator; delete it or set KOPT_BUILD_DIR"
  exit 1
fi

if [ ! -f "$build/build.ninja" ]; then
  args=(-S "$KOPT_ROOT" -B "$build" -G Ninja
        -DCMAKE_BUILD_TYPE="${KOPT_BUILD_TYPE:-Release}"
        # Debian ships lit as bin/lit, not bin/llvm-lit: give it to add_lit_testsuite.
        -DLLVM_EXTERNAL_LIT="$KOPT_LLVM_ROOT/bin/lit")
  if ptxas=$(kopt_find_ptxas); then
    args+=(-DKOPT_PTXAS="$ptxas")
  fi
  if cuda_h=$(kopt_find_cuda_h); then
    args+=(-DCUDAToolkit_ROOT="$(kopt_cuda_root_of_header "$cuda_h")")
  fi
  # shellcheck disable=SC2206  # KOPT_CMAKE_ARGS is split on spaces on purpose
  args+=(${KOPT_CMAKE_ARGS:-})
  kopt_log $TAG "configuring $build"
  t0=$SECONDS
  mkdir -p "$build"
  if ! cmake "${args[@]}" >"$build/configure.log" 2>&1; then
    if grep -q 'CMake Error' "$build/configure.log"; then
      # Only CMake's error blocks, not the pages of checks around them.
      awk '/^CMake Error/ { on = 1 } /^(-- |CMake Warning|CMake Deprecation)/ { on = 0 } on' \
        "$build/configure.log" | head -n 80 >&2
    else
      tail -n 40 "$build/configure.log" >&2
    fi
    kopt_error $TAG "CMake configure failed (log: $build/configure.log)"
    exit 1
  fi
  # What got left out (no CUDA headers, no GoogleTest, ...), as CMake said it.
  grep -E '^-- kopt' "$build/configure.log" || true
  kopt_log $TAG "configured in $(kopt_elapsed $t0) (log: $build/configure.log)"
fi

kopt_log $TAG "building with ninja -j$jobs${*:+ $*} in $build"
t0=$SECONDS
if ! ninja -C "$build" -j"$jobs" "$@"; then
  kopt_error $TAG "build failed (see the compiler output above)"
  exit 1
fi
kopt_log $TAG "built in $(kopt_elapsed $t0)"
