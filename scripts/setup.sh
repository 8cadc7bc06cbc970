#!/usr/bin/env bash
# Installs what building and testing kopt needs on Debian 12 (bookworm), and checks
# the CUDA toolkit, which it does not install.
#
#   scripts/setup.sh           install missing Debian packages (as root, or with sudo)
#   scripts/setup.sh --check   only report; install nothing
#
# Quick and silent about apt when everything is there. Exit code 0 when kopt can be
# built and tested, 1 otherwise (with a message saying what is missing).
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TAG=setup

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) kopt_error $TAG "unknown option '$1' (try --help)"; exit 2 ;;
esac

# LLVM/MLIR 22 come from Debian's bookworm-security suite; the rest from bookworm.
PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools nlohmann-json3-dev
          ninja-build ccache cmake g++ libgtest-dev python3 libzstd-dev zlib1g-dev
          libsqlite3-dev python3-jsonschema python3-matplotlib python3-pip)
LLVM_PACKAGES=" llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools "

failed=0

# --- Debian packages --------------------------------------------------------------
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    kopt_log $TAG "Debian packages: all ${#PACKAGES[@]} installed"
  elif [ $check_only = 1 ]; then
    kopt_error $TAG "missing Debian packages: ${missing[*]} (run scripts/setup.sh to install them)"
    failed=1
  elif ! command -v apt-get >/dev/null 2>&1; then
    kopt_error $TAG "missing packages ${missing[*]}, and apt-get is not here to install them"
    failed=1
  else
    sudo=()
    if [ "$(id -u)" != 0 ]; then
      if ! command -v sudo >/dev/null 2>&1; then
        kopt_error $TAG "missing packages: ${missing[*]}"
        kopt_error $TAG "installing them needs root: run this script as root, or install sudo"
        exit 1
      fi
      sudo=(sudo)
      [ -t 0 ] || sudo=(sudo -n)   # no terminal to ask for a password: fail, don't hang
      if ! "${sudo[@]}" true; then
        kopt_error $TAG "missing packages: ${missing[*]}"
        kopt_error $TAG "installing them needs root, and sudo did not work for $(id -un): run" \
          "'sudo $0' or run it as root"
        exit 1
      fi
    fi
    kopt_log $TAG "installing with apt-get (a minute or two the first time): ${missing[*]}"
    t0=$SECONDS
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0)
    log=${TMPDIR:-/tmp}/kopt-apt-update.$$.log
    if ! "${apt[@]}" update >"$log" 2>&1; then
      cat "$log" >&2
      rm -f "$log"
      kopt_error $TAG "apt-get update failed (see above)"
      exit 1
    fi
    rm -f "$log"
    # Say which packages apt cannot find before asking it to install them.
    unavailable=()
    for p in "${missing[@]}"; do
      cand=$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
      [ -n "$cand" ] && [ "$cand" != "(none)" ] || unavailable+=("$p")
    done
    if [ ${#unavailable[@]} -gt 0 ]; then
      kopt_error $TAG "apt knows no package named: ${unavailable[*]}"
      for p in "${unavailable[@]}"; do
        if [[ $LLVM_PACKAGES == *" $p "* ]]; then
          kopt_error $TAG "LLVM/MLIR 22 are in Debian 12's security suite: add 'bookworm-security'" \
            "(components main) to your apt sources (/etc/apt/sources.list.d/debian.sources" \
            "or /etc/apt/sources.list), as a standard Debian 12 install has it, then run this again."
          break
        fi
      done
      exit 1
    fi
    log=${TMPDIR:-/tmp}/kopt-apt-install.$$.log
    if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      kopt_error $TAG "apt-get install failed (the end of its output is above; all of it: $log)"
      exit 1
    fi
    rm -f "$log"
    kopt_log $TAG "installed ${#missing[@]} packages in $(kopt_elapsed $t0)"
  fi
else
  kopt_warn $TAG "not a Debian system (no dpkg-query): checking files only; install LLVM/MLIR 22" \
    "(with lit and FileCheck), nlohmann-json 3, GoogleTest, SQLite 3, CMake, Ninja, ccache, g++ and python3 yourself"
fi

# --- What the build needs, whatever installed it ------------------------------------
need_file() { # PATH WHAT
  if [ ! -e "$1" ]; then kopt_error $TAG "$2 not found: $1"; failed=1; fi
}
need_cmd() { # COMMAND WHAT
  if ! command -v "$1" >/dev/null 2>&1; then kopt_error $TAG "$2 not found: no '$1' on PATH"; failed=1; fi
}
if [ $failed = 0 ]; then
  need_file "$KOPT_LLVM_ROOT/lib/cmake/mlir/MLIRConfig.cmake" "MLIR 22 CMake package (libmlir-22-dev)"
  need_file "$KOPT_LLVM_ROOT/lib/cmake/llvm/LLVMConfig.cmake" "LLVM 22 CMake package (llvm-22-dev)"
  need_file "$KOPT_LLVM_ROOT/bin/mlir-tblgen" "mlir-tblgen (mlir-22-tools)"
  need_file "$KOPT_LLVM_ROOT/bin/lit" "lit (llvm-22-tools)"
  need_file "$KOPT_LLVM_ROOT/bin/FileCheck" "FileCheck (llvm-22-tools)"
  need_file "${KOPT_JSON_INCLUDE_DIR:-/usr/include}/nlohmann/json.hpp" "nlohmann/json (nlohmann-json3-dev)"
  need_file /usr/include/gtest/gtest.h "GoogleTest (libgtest-dev)"
  need_file /usr/include/sqlite3.h "SQLite 3 (libsqlite3-dev)"
  need_cmd cmake "CMake"
  need_cmd ninja "Ninja (ninja-build)"
  need_cmd g++ "a C++ compiler (g++)"
  need_cmd python3 "python3"
  command -v ccache >/dev/null 2>&1 || kopt_warn $TAG "ccache not found: builds work, rebuilds are slower"
fi

# --- pytest, wheel, jsonschema and matplotlib: the Python tests (test/python), the agent
# protocol's schema check (docs/agent-protocol.schema.json) and kopt-tune --report's plot -
# For the python3 on PATH (the one CMake's find_package(Python3) takes): Debian's
# python3-pytest when that python3 is Debian's, else pip (PyPI) into the user site.
if [ $failed = 0 ] && ! python3 -c 'import pytest, wheel, jsonschema, matplotlib' >/dev/null 2>&1; then
  py=$(python3 -c 'import sys; print(sys.executable)')
  if [ $check_only = 1 ]; then
    kopt_error $TAG "pytest, wheel, jsonschema or matplotlib is missing for $py (run scripts/setup.sh to install them)"
    failed=1
  elif [ "$(readlink -f "$py")" = "$(readlink -f /usr/bin/python3 2>/dev/null)" ]; then
    kopt_log $TAG "installing python3-pytest with apt-get (for $py)"
    prefix=(); [ "$(id -u)" = 0 ] || prefix=(sudo -n)
    if ! "${prefix[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q install -y \
        --no-install-recommends python3-pytest python3-wheel python3-jsonschema python3-matplotlib >/dev/null 2>&1; then
      kopt_error $TAG "apt-get install python3-pytest python3-wheel python3-jsonschema python3-matplotlib failed"; failed=1
    fi
  else
    kopt_log $TAG "installing pytest, wheel, jsonschema and matplotlib from PyPI for $py"
    if ! python3 -m pip install -q --disable-pip-version-check 'pytest>=7' wheel 'jsonschema>=4' matplotlib >/dev/null 2>&1; then
      kopt_error $TAG "pip install pytest failed for $py (no network to PyPI?)"; failed=1
    fi
  fi
  if [ $failed = 0 ] && ! python3 -c 'import pytest, wheel, jsonschema, matplotlib' >/dev/null 2>&1; then
    kopt_error $TAG "pytest still cannot be imported by $py"; failed=1
  fi
fi

# --- PyTorch, for the torch.compile backend's tests (test/python/test_torch_backend.py) --
# PyPI's torch (the version the GPU host runs) installed with pip --target into
# $KOPT_PYTHON_DEPS (default: .python-deps in the checkout), never into a system Python;
# CTest puts that folder on the tests' PYTHONPATH. About 4.6 GB with its CUDA libraries,
# a few minutes the first time. KOPT_NO_TORCH=1 skips it (the backend's tests then fail
# and say so).
KOPT_TORCH_VERSION=2.11.0
deps=${KOPT_PYTHON_DEPS:-$KOPT_ROOT/.python-deps}
if [ $failed = 0 ] && [ "${KOPT_NO_TORCH:-0}" != 1 ] && \
   ! PYTHONPATH="$deps" python3 -c 'import torch' >/dev/null 2>&1; then
  if [ $check_only = 1 ]; then
    kopt_error $TAG "PyTorch is missing from $deps (run scripts/setup.sh to install it)"
    failed=1
  else
    kopt_log $TAG "installing torch==$KOPT_TORCH_VERSION from PyPI into $deps (a few minutes, about 4.6 GB)"
    t0=$SECONDS
    log=${TMPDIR:-/tmp}/kopt-pip-torch.$$.log
    # --target installs into our folder only; Debian's pip still asks for this flag
    # under PEP 668 on some versions, and the folder is not the system's site.
    pipflags=()
    python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages \
      && pipflags=(--break-system-packages)
    if python3 -m pip install -q --disable-pip-version-check --no-warn-script-location \
        "${pipflags[@]}" --target "$deps.partial" "torch==$KOPT_TORCH_VERSION" >"$log" 2>&1 \
        && rm -rf "$deps" && mv "$deps.partial" "$deps"; then
      rm -f "$log"
      kopt_log $TAG "installed torch $KOPT_TORCH_VERSION in $(kopt_elapsed $t0)"
    else
      tail -n 20 "$log" >&2
      rm -rf "$deps.partial"
      kopt_error $TAG "pip install torch==$KOPT_TORCH_VERSION failed (the end of its output is above; all of it: $log)"
      failed=1
    fi
  fi
fi

# --- CUDA toolkit (not a Debian package we install) ---------------------------------
cuda_help="Install NVIDIA's CUDA toolkit 12.0 or newer (sm_90a needs 12.0; Debian 12's own\
 nvidia-cuda-toolkit is 11.8, too old) from NVIDIA's CUDA downloads for Debian 12, usually\
 into /usr/local/cuda; or point CUDA_HOME at an existing one (CUDA_HOME=/path/to/cuda $0)."
if ptxas=$(kopt_find_ptxas); then
  version=$("$ptxas" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
  major=${version%%.*}
  if [ -z "$version" ]; then
    kopt_error $TAG "ptxas at $ptxas did not say its version ('$ptxas --version' failed)"
    failed=1
  elif [ "$major" -lt 12 ]; then
    kopt_error $TAG "ptxas at $ptxas is CUDA $version: kopt targets sm_90a, which needs CUDA 12.0 or newer."
    kopt_error $TAG "$cuda_help"
    failed=1
  else
    kopt_log $TAG "ptxas: $ptxas (CUDA $version)"
    ptxas_ok=1
  fi
elif [ -n "${KOPT_PTXAS:-}" ]; then
  kopt_error $TAG "KOPT_PTXAS=$KOPT_PTXAS is not an executable ptxas"
  failed=1
else
  kopt_error $TAG "ptxas not found (looked in ${CUDA_HOME:+\$CUDA_HOME/bin, }${CUDA_PATH:+\$CUDA_PATH/bin, }PATH, /usr/local/cuda/bin)."
  kopt_error $TAG "The test suite assembles every generated PTX with ptxas. $cuda_help"
  failed=1
fi
if cuda_h=$(kopt_find_cuda_h); then
  kopt_log $TAG "cuda.h: $cuda_h"
else
  kopt_warn $TAG "cuda.h not found (looked in \$CUDA_HOME, /usr/local/cuda, /usr/include): the runtime"
  kopt_warn $TAG "(lib/Runtime, kopt-run) will not be built; the compiler and its tests can be."
  [ -n "${ptxas_ok:-}" ] || kopt_warn $TAG "cuda.h comes with the same toolkit (see above)."
  [ -z "${ptxas_ok:-}" ] || kopt_warn $TAG "cuda.h comes with the CUDA toolkit. $cuda_help"
fi

if kopt_has_gpu; then
  kopt_log $TAG "GPU: $(nvidia-smi -L 2>/dev/null | head -n1)"
else
  kopt_log $TAG "GPU: none (nvidia-smi -L found none): kernels can be compiled and assembled here, not run"
fi

if [ $failed != 0 ]; then
  kopt_error $TAG "setup incomplete: fix the above and run scripts/setup.sh again"
  exit 1
fi
kopt_log $TAG "ready"
