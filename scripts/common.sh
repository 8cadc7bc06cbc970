# shellcheck shell=bash
# Shared helpers of the kopt scripts; sourced, not run.
#
# Variables a user may set (all optional):
#   KOPT_BUILD_DIR   build folder (default: build/ in the repository; a relative
#                    path is taken from the repository root)
#   KOPT_JOBS        parallel build jobs (default: the number of CPUs)
#   KOPT_BUILD_TYPE  CMake build type (default: Release)
#   KOPT_CMAKE_ARGS  extra arguments for the first CMake configure
#   KOPT_PTXAS       the ptxas to use (default: found under $CUDA_HOME, $CUDA_PATH,
#                    PATH, /usr/local/cuda)
#   CUDA_HOME        the CUDA toolkit's folder

KOPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KOPT_LLVM_ROOT=${KOPT_LLVM_ROOT:-/usr/lib/llvm-22}

kopt_build_dir() {
  local dir=${KOPT_BUILD_DIR:-build}
  case $dir in
    /*) printf '%s\n' "$dir" ;;
    *) printf '%s\n' "$KOPT_ROOT/$dir" ;;
  esac
}

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  _kopt_bold=$'\e[1m' _kopt_red=$'\e[31m' _kopt_yellow=$'\e[33m' _kopt_off=$'\e[0m'
else
  _kopt_bold='' _kopt_red='' _kopt_yellow='' _kopt_off=''
fi

# kopt_log TAG MESSAGE...: one status line.
kopt_log() { local tag=$1; shift; printf '%s[%s]%s %s\n' "$_kopt_bold" "$tag" "$_kopt_off" "$*"; }
kopt_warn() { local tag=$1; shift; printf '%s[%s] warning:%s %s\n' "$_kopt_yellow" "$tag" "$_kopt_off" "$*" >&2; }
kopt_error() { local tag=$1; shift; printf '%s[%s] error:%s %s\n' "$_kopt_red" "$tag" "$_kopt_off" "$*" >&2; }

# kopt_elapsed START: seconds since START (from $SECONDS) as "1m05s".
kopt_elapsed() {
  local s=$((SECONDS - $1))
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

# kopt_find_ptxas: prints the path of the ptxas to use, or fails.
kopt_find_ptxas() {
  local c
  if [ -n "${KOPT_PTXAS:-}" ]; then
    [ -x "$KOPT_PTXAS" ] && { printf '%s\n' "$KOPT_PTXAS"; return 0; }
    return 1
  fi
  for c in ${CUDA_HOME:+"$CUDA_HOME/bin/ptxas"} ${CUDA_PATH:+"$CUDA_PATH/bin/ptxas"}; do
    [ -x "$c" ] && { printf '%s\n' "$c"; return 0; }
  done
  if c=$(command -v ptxas 2>/dev/null); then printf '%s\n' "$c"; return 0; fi
  for c in /usr/local/cuda/bin/ptxas $(ls -d /usr/local/cuda-*/bin/ptxas 2>/dev/null | sort -rV) \
           /opt/cuda/bin/ptxas; do
    [ -x "$c" ] && { printf '%s\n' "$c"; return 0; }
  done
  return 1
}

# kopt_cuda_roots: candidate CUDA toolkit folders, best first.
kopt_cuda_roots() {
  local p
  [ -n "${CUDA_HOME:-}" ] && printf '%s\n' "$CUDA_HOME"
  [ -n "${CUDA_PATH:-}" ] && printf '%s\n' "$CUDA_PATH"
  if p=$(kopt_find_ptxas); then p=$(readlink -f "$p"); printf '%s\n' "${p%/bin/ptxas}"; fi
  printf '%s\n' /usr/local/cuda
  ls -d /usr/local/cuda-* 2>/dev/null | sort -rV
  printf '%s\n' /opt/cuda
}

# kopt_find_cuda_h: prints the path of cuda.h (the CUDA driver API header), or fails.
kopt_find_cuda_h() {
  local r h
  while read -r r; do
    for h in "$r/include/cuda.h" "$r/targets/x86_64-linux/include/cuda.h" \
             "$r/targets/sbsa-linux/include/cuda.h"; do
      [ -f "$h" ] && { printf '%s\n' "$h"; return 0; }
    done
  done < <(kopt_cuda_roots)
  [ -f /usr/include/cuda.h ] && { printf '%s\n' /usr/include/cuda.h; return 0; }
  return 1
}

# kopt_cuda_root_of_header HEADER: the toolkit folder holding HEADER.
kopt_cuda_root_of_header() {
  local d
  d=$(dirname "$(readlink -f "$1")")   # .../include
  d=${d%/include}
  d=${d%/targets/*}
  printf '%s\n' "$d"
}

# kopt_has_gpu: true when nvidia-smi lists at least one GPU.
kopt_has_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}
