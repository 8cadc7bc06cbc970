#!/usr/bin/env bash
# Builds kopt's self-contained binaries and packs them for a host without LLVM.
#
#   scripts/bundle.sh [--out DIR] [--no-check]   build, pack, check the bundle
#   scripts/bundle.sh --check-deps DIR           check the tools in DIR/bin, DIR/lib
#   scripts/bundle.sh --check-ptx DIR            DIR/bin/kopt-opt against a reference
#
# Building: configures build-bundle/ (or $KOPT_BUNDLE_BUILD_DIR) with
# -DKOPT_SELF_CONTAINED=ON through scripts/build.sh (KOPT_JOBS, KOPT_SKIP_SETUP
# and KOPT_CMAKE_ARGS apply) and builds kopt-opt, kopt-space, kopt-run, kopt-tune and
# kopt's shared libraries. Packing: DIR (default out/bundle) gets kopt-bundle/
# (bin/, lib/, include/nlohmann, python/ when the repository has one, README,
# VERSION) and kopt-bundle.tar.xz; the sizes are printed, and an archive of
# 64 MiB or more (what the device tool carries) is an error.
# --check-deps: no shared LLVM, MLIR, libstdc++ or libgcc_s (ldd), no LLVM or
#   MLIR symbol exported by a shared library, the glibc versions the binaries
#   need (at most $KOPT_BUNDLE_MAX_GLIBC when set, e.g. 2.35); then, with
#   /usr/lib/llvm-22 and libstdc++ hidden in a private mount namespace (as
#   root; elsewhere, said, with LD_LIBRARY_PATH empty instead), kopt-opt
#   compiles every examples/*.mlir and ptxas -arch=sm_90a assembles each PTX.
# --check-ptx: every examples/*.mlir compiled by DIR/bin/kopt-opt and by the
#   reference ($KOPT_REFERENCE_OPT, default build/bin/kopt-opt, the normal
#   build) gives byte-identical PTX and manifests; exit 77 when there is no
#   reference.
# The CTests bundle.deps and bundle.same-ptx (label bundle) run the checks on
# the self-contained build folder.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TAG=bundle
LIMIT_BYTES=$((64 * 1024 * 1024))

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }

# find_ptxas_or_die: the ptxas for the checks.
find_ptxas_or_die() {
  local p
  if ! p=$(kopt_find_ptxas); then
    kopt_error $TAG "ptxas not found (install the CUDA toolkit or set KOPT_PTXAS)"
    exit 1
  fi
  printf '%s\n' "$p"
}

# elf_files DIR: the bundle's ELF files in DIR (a bundle or a build folder,
# whose bin/ also holds test programs).
elf_files() {
  local f
  for f in "$1"/bin/kopt-opt "$1"/bin/kopt-space "$1"/bin/kopt-run "$1"/bin/kopt-tune "$1"/lib/lib*.so*; do
    if [ -f "$f" ] && head -c 4 "$f" | grep -q 'ELF'; then printf '%s\n' "$f"; fi
  done
}

# version_le A B: true when glibc version A <= B.
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }

check_deps() {
  local dir=$1 fail=0 f deps bad glibc max=0 exported ptxas
  local -a files
  mapfile -t files < <(elf_files "$dir")
  if [ "${#files[@]}" -eq 0 ] || [ ! -x "$dir/bin/kopt-opt" ]; then
    kopt_error $TAG "no kopt-opt in $dir/bin"
    return 1
  fi
  for f in "${files[@]}"; do
    deps=$(ldd "$f" 2>&1 || true)
    bad=$(printf '%s\n' "$deps" | grep -E 'libLLVM|libMLIR|libstdc\+\+|libgcc_s|not found' || true)
    glibc=$( (objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' || true) | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    glibc=${glibc:-none}
    if [ -n "$bad" ]; then
      kopt_error $TAG "$f links shared libraries a host without LLVM lacks:"
      printf '%s\n' "$bad" | sed 's/^[[:space:]]*/    /' >&2
      fail=1
    fi
    printf '  %-12s %6s MiB  needs %s  (glibc %s)\n' "$(basename "$f")" \
      "$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", b / 1048576 }')" \
      "$(printf '%s\n' "$deps" | awk '/=>|ld-linux/ { print $1 }' | grep -v linux-vdso |
         sed 's|.*/||' | sort | paste -sd' ')" "$glibc"
    if [ "$glibc" != none ] && { [ "$max" = 0 ] || ! version_le "$glibc" "$max"; }; then max=$glibc; fi
    case $f in
      *.so*)
        exported=$(nm -D --defined-only "$f" | awk '{ print $NF }' |
                   grep -cE '^_ZN(K)?(4llvm|4mlir)|^_ZNSt|^_ZSt' || true)
        if [ "$exported" != 0 ]; then
          kopt_error $TAG "$f exports $exported LLVM/MLIR/libstdc++ symbols (--exclude-libs missing?)"
          fail=1
        fi ;;
    esac
  done
  kopt_log $TAG "highest glibc symbol version needed: GLIBC_$max"
  if [ -n "${KOPT_BUNDLE_MAX_GLIBC:-}" ] && ! version_le "$max" "$KOPT_BUNDLE_MAX_GLIBC"; then
    kopt_error $TAG "GLIBC_$max is newer than KOPT_BUNDLE_MAX_GLIBC=$KOPT_BUNDLE_MAX_GLIBC"
    fail=1
  fi
  [ "$fail" = 0 ] || return 1

  # Compile the examples where LLVM and libstdc++ cannot be found.
  ptxas=$(find_ptxas_or_die)
  local tmp; tmp=$(make_tmp)
  cat >"$tmp/compile.sh" <<'EOF'
set -u
opt=$1 out=$2 root=$3; shift 3
for hide in "$@"; do
  if [ -d "$hide" ]; then mount -t tmpfs tmpfs "$hide" || exit 90
  elif [ -e "$hide" ]; then mount --bind /dev/null "$hide" || exit 90
  fi
done
status=0
for f in "$root"/examples/*.mlir; do
  n=$(basename "$f" .mlir)
  "$opt" "$f" --kopt-to-ptx="output=$out/$n.ptx" -o /dev/null 2>"$out/$n.err" ||
    { echo "kopt-opt failed on $f:"; cat "$out/$n.err"; status=1; }
done
exit $status
EOF
  # LLVM's folder, and the files libstdc++.so.6 and libgcc_s.so.1 resolve to.
  local -a hidden=("$KOPT_LLVM_ROOT")
  mapfile -t -O 1 hidden < <(for f in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
      /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/libstdc++.so.6 \
      /lib/x86_64-linux-gnu/libgcc_s.so.1; do
    if [ -e "$f" ]; then readlink -f "$f"; fi; done | sort -u)
  local rc=0 how
  mkdir -p "$tmp/ptx"
  if unshare -m --propagation private true 2>/dev/null; then
    how="in a mount namespace without ${hidden[*]}"
    unshare -m --propagation private bash "$tmp/compile.sh" \
      "$(readlink -f "$dir/bin/kopt-opt")" "$tmp/ptx" "$KOPT_ROOT" "${hidden[@]}" || rc=$?
  else
    rc=90
  fi
  if [ "$rc" = 90 ]; then
    kopt_warn $TAG "cannot hide $KOPT_LLVM_ROOT (no mount namespace here); compiling with LD_LIBRARY_PATH empty"
    how="with LD_LIBRARY_PATH empty"
    rm -f "$tmp"/ptx/*
    rc=0
    LD_LIBRARY_PATH='' bash "$tmp/compile.sh" "$(readlink -f "$dir/bin/kopt-opt")" \
      "$tmp/ptx" "$KOPT_ROOT" || rc=$?
  fi
  if [ "$rc" != 0 ]; then
    kopt_error $TAG "kopt-opt failed $how"
    return 1
  fi
  local n=0
  for f in "$tmp"/ptx/*.ptx; do
    if ! "$ptxas" -arch=sm_90a "$f" -o /dev/null >"$tmp/ptxas.log" 2>&1; then
      kopt_error $TAG "ptxas -arch=sm_90a rejected $(basename "$f"):"
      cat "$tmp/ptxas.log" >&2
      fail=1
    fi
    n=$((n + 1))
  done
  [ "$fail" = 0 ] || return 1
  kopt_log $TAG "$n examples compiled $how and assembled by ptxas -arch=sm_90a"
}

check_ptx() {
  local dir=$1 ref=${KOPT_REFERENCE_OPT:-$KOPT_ROOT/build/bin/kopt-opt} f g n diffs=0 count=0
  if [ ! -x "$ref" ]; then
    kopt_warn $TAG "no reference kopt-opt at $ref (build the normal build, or set KOPT_REFERENCE_OPT): skipped"
    return 77
  fi
  local tmp; tmp=$(make_tmp)
  mkdir -p "$tmp/ref" "$tmp/new"
  for f in "$KOPT_ROOT"/examples/*.mlir; do
    n=$(basename "$f" .mlir)
    "$ref" "$f" --kopt-to-ptx="output=$tmp/ref/$n.ptx" -o /dev/null ||
      { kopt_error $TAG "the reference failed on $f"; return 1; }
    "$dir/bin/kopt-opt" "$f" --kopt-to-ptx="output=$tmp/new/$n.ptx" -o /dev/null ||
      { kopt_error $TAG "$dir/bin/kopt-opt failed on $f"; return 1; }
    for g in "$tmp/ref/$n.ptx" "$tmp/ref/$n.json"; do
      count=$((count + 1))
      if ! cmp -s "$g" "$tmp/new/$(basename "$g")"; then
        kopt_error $TAG "$(basename "$g") differs from the reference's"
        diffs=$((diffs + 1))
      fi
    done
  done
  [ "$diffs" = 0 ] || return 1
  kopt_log $TAG "$count files (PTX and manifests of $((count / 2)) examples) byte-identical to $ref's"
}

# make_tmp: a fresh folder under one that is removed when the script exits.
KOPT_BUNDLE_TMP=$(mktemp -d)
trap 'rm -rf "$KOPT_BUNDLE_TMP"' EXIT
make_tmp() { mktemp -d "$KOPT_BUNDLE_TMP/XXXXXX"; }

size_mb() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

write_readme() {
  cat >"$1/README" <<EOF
kopt bundle: self-contained kopt tools for an x86-64 Linux host without LLVM
(built with -DKOPT_SELF_CONTAINED=ON by scripts/bundle.sh; version in VERSION).

  bin/kopt-opt    the compiler: kopt ops to PTX and a launch manifest
  bin/kopt-space  matmul schedule spaces (docs/schedules.md)
  bin/kopt-run    loads the PTX, launches, checks and times the kernels
  bin/kopt-tune   schedule search on the GPU, the tuning database (docs/tuning.md)
  lib/            kopt's shared libraries, when the build has any
  include/        the nlohmann/json headers, for building kopt's runtime from
                  source on the host (KOPT_JSON_INCLUDE_DIR=\$PWD/include)
  python/         kopt's Python package, when the repository has one

They need glibc $2 or newer and nothing else (no LLVM, no libstdc++); check
the host with 'ldd --version'. The PTX links libdevice from the CUDA toolkit:
\$CUDA_HOME, else /usr/local/cuda (kopt-opt's option cuda-path).

  tar xJf kopt-bundle.tar.xz
  kopt-bundle/bin/kopt-opt model.mlir --kopt-to-ptx="output=out/model.ptx" -o /dev/null
  kopt-bundle/bin/kopt-run out/model.json
  PYTHONPATH=$PWD/kopt-bundle/python python3 -c 'import kopt; print(kopt.version())'
EOF
}

bundle() {
  local out=$1 check=$2 build t0 targets f glibc
  build=${KOPT_BUNDLE_BUILD_DIR:-build-bundle}
  case $build in /*) ;; *) build=$KOPT_ROOT/$build ;; esac
  if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^KOPT_SELF_CONTAINED:BOOL=ON$' "$build/CMakeCache.txt"; then
    kopt_log $TAG "turning KOPT_SELF_CONTAINED on in $build"
    cmake -DKOPT_SELF_CONTAINED=ON "$build" >"$build/configure.log" 2>&1 ||
      { kopt_error $TAG "CMake configure failed (log: $build/configure.log)"; exit 1; }
  fi
  t0=$SECONDS
  KOPT_BUILD_DIR=$build KOPT_CMAKE_ARGS="${KOPT_CMAKE_ARGS:-} -DKOPT_SELF_CONTAINED=ON" \
    "$KOPT_ROOT/scripts/build.sh" build.ninja >/dev/null
  # The tools and every shared library of kopt's (lib/lib*.so: the C API).
  targets=(kopt-opt kopt-space kopt-run kopt-tune)
  while read -r f; do targets+=("$f"); done < <(ninja -C "$build" -t targets all |
    sed -n 's/^\(lib\/lib[^/:]*\.so[.0-9]*\): .*SHARED_LIBRARY_LINKER.*/\1/p')
  KOPT_BUILD_DIR=$build "$KOPT_ROOT/scripts/build.sh" "${targets[@]}"
  kopt_log $TAG "built ${targets[*]} in $(kopt_elapsed $t0)"

  local dest=$out/kopt-bundle archive=$out/kopt-bundle.tar.xz
  rm -rf "$dest" "$archive"
  mkdir -p "$dest/bin" "$dest/lib" "$dest/include"
  cp "$build"/bin/kopt-opt "$build"/bin/kopt-space "$build"/bin/kopt-run "$build"/bin/kopt-tune "$dest/bin/"
  for f in "$build"/lib/lib*.so*; do
    if [ -f "$f" ]; then cp -P "$f" "$dest/lib/"; fi
  done
  local json=${KOPT_JSON_INCLUDE_DIR:-/usr/include}/nlohmann
  if [ -d "$json" ]; then cp -r "$json" "$dest/include/"; fi
  if [ -d "$KOPT_ROOT/python" ]; then
    cp -r "$KOPT_ROOT/python" "$dest/python"
    find "$dest/python" -name __pycache__ -prune -exec rm -rf {} +
    # The package finds its library in kopt/_lib (python/kopt/_capi.py): a link
    # to the bundle's, which pip follows when it installs the folder.
    rm -rf "$dest/python/kopt/_lib" "$dest/python/build" "$dest/python"/*.egg-info
    if [ -f "$dest/lib/libkopt.so" ]; then
      mkdir -p "$dest/python/kopt/_lib"
      ln -s ../../../lib/libkopt.so "$dest/python/kopt/_lib/libkopt.so"
    fi
  fi
  git -C "$KOPT_ROOT" describe --always --dirty >"$dest/VERSION" 2>/dev/null || echo unknown >"$dest/VERSION"
  glibc=$(elf_files "$dest" | xargs -n 1 objdump -T | grep -o 'GLIBC_[0-9.]*' |
          sed 's/GLIBC_//' | sort -uV | tail -n 1)
  write_readme "$dest" "$glibc"
  t0=$SECONDS
  tar -C "$out" -cf - kopt-bundle | xz -6 -T"${KOPT_JOBS:-1}" >"$archive"
  kopt_log $TAG "packed in $(kopt_elapsed $t0)"

  local bytes
  bytes=$(stat -c %s "$archive")
  kopt_log $TAG "sizes:"
  (cd "$dest" && find . -type f -size +100k -printf '%s %p\n' | sort -rn |
    while read -r b p; do printf '  %-32s %s\n' "${p#./}" "$(size_mb "$b")"; done)
  printf '  %-32s %s\n' "kopt-bundle/ (all)" "$(size_mb "$(du -sb "$dest" | cut -f1)")"
  printf '  %-32s %s\n' "kopt-bundle.tar.xz" "$(size_mb "$bytes")"
  if [ "$bytes" -ge "$LIMIT_BYTES" ]; then
    kopt_error $TAG "$archive is $(size_mb "$bytes"): the device tool carries at most 64 MiB"
    exit 1
  fi
  if [ "$check" = 1 ]; then
    check_deps "$dest"
    local rc=0
    check_ptx "$dest" || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || exit 1
  fi
  kopt_log $TAG "wrote $archive (carry it to the GPU host; README inside)"
}

out=$KOPT_ROOT/out/bundle
check=1
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --check-deps|--check-ptx)
    if [ $# -ne 2 ] || [ ! -d "$2" ]; then echo "usage: $0 $1 DIR" >&2; exit 2; fi
    if [ "$1" = --check-deps ]; then check_deps "$2"; else check_ptx "$2"; fi
    exit $? ;;
esac
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || { echo "bundle.sh: --out needs a folder" >&2; exit 2; }
           out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --no-check) check=0; shift ;;
    *) echo "bundle.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
bundle "$out" "$check"
