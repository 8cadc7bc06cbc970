#!/usr/bin/env bash
# The main job: build kopt, compile every example to PTX + launch manifest, assemble
# the PTX with ptxas, and, when a GPU is present, run and check each manifest with
# kopt-run. Prints a table; exit code 0 only when everything that ran passed.
#
#   scripts/run-examples.sh [options] [FILE.mlir...]    (default: examples/*.mlir)
#
#   --no-build    use the binaries already in the build folder (no setup, no build)
#   --no-run      do not run on the GPU, even if there is one
#   --run-only    only run the manifests already in the output folder with kopt-run
#                 (for a GPU host without LLVM: copy out/examples there and build
#                 the runtime alone: cmake -S . -B build -G Ninja -DKOPT_BUILD_COMPILER=OFF)
#
# Outputs go to out/examples/ (or $KOPT_OUT_DIR): NAME.ptx, NAME.json (the launch
# manifest, docs/manifest.md), NAME.cubin, NAME.run.json (kopt-run's report) and one
# log per step. KOPT_RUN_ARGS adds options to kopt-run (e.g. "--runs 20"); KOPT_RUN
# names another kopt-run binary. Honours the variables of scripts/build.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TAG=examples

do_build=1 do_compile=1 do_run=1
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) do_build=0 ;;
    --no-run) do_run=0 ;;
    --run-only) do_build=0 do_compile=0 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) kopt_error $TAG "unknown option '$1' (try --help)"; exit 2 ;;
    *) files+=("$1") ;;
  esac
  shift
done

t_all=$SECONDS
build=$(kopt_build_dir)
out=${KOPT_OUT_DIR:-$KOPT_ROOT/out/examples}
case $out in /*) ;; *) out=$KOPT_ROOT/$out ;; esac
kopt_opt=$build/bin/kopt-opt
kopt_run=${KOPT_RUN:-$build/bin/kopt-run}

if [ $do_build = 1 ]; then
  "$KOPT_ROOT/scripts/build.sh"
fi
mkdir -p "$out"

# --- What to do -----------------------------------------------------------------------
names=()
declare -A src=()
if [ $do_compile = 1 ]; then
  if [ ${#files[@]} -eq 0 ]; then
    shopt -s nullglob
    files=("$KOPT_ROOT"/examples/*.mlir)
    shopt -u nullglob
    if [ ${#files[@]} -eq 0 ]; then
      kopt_error $TAG "no examples: $KOPT_ROOT/examples/*.mlir matches nothing"
      exit 1
    fi
  fi
  for f in "${files[@]}"; do
    [ -f "$f" ] || { kopt_error $TAG "no such file: $f"; exit 1; }
    n=$(basename "$f" .mlir)
    [ -z "${src[$n]:-}" ] || { kopt_error $TAG "two examples named $n"; exit 1; }
    src[$n]=$(readlink -f "$f")
    names+=("$n")
  done
  [ -x "$kopt_opt" ] || { kopt_error $TAG "$kopt_opt not found: build first (scripts/build.sh)"; exit 1; }
  if ! ptxas=$(kopt_find_ptxas); then
    kopt_error $TAG "ptxas not found: run scripts/setup.sh to see how to get it"; exit 1
  fi
  # kopt-opt links libdevice (__nv_expf, ...) from $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH,
  # else /usr/local/cuda: when none is set, name the toolkit of this ptxas (which may
  # have been found on PATH elsewhere), as test/lit.cfg.py does.
  if [ -z "${CUDA_HOME:-}${CUDA_ROOT:-}${CUDA_PATH:-}" ]; then
    CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$ptxas")")")
    export CUDA_HOME
  fi
else
  shopt -s nullglob
  for m in "$out"/*.json; do
    case $m in *.run.json) continue ;; esac
    names+=("$(basename "$m" .json)")
  done
  shopt -u nullglob
  if [ ${#files[@]} -gt 0 ]; then
    names=(); for f in "${files[@]}"; do names+=("$(basename "$f" .mlir)"); done
  fi
  [ ${#names[@]} -gt 0 ] || { kopt_error $TAG "no manifests in $out: compile the examples first"; exit 1; }
fi

run_note=""
if [ $do_run = 0 ]; then
  run_note="not asked (--no-run)"
elif ! kopt_has_gpu; then
  run_note="no GPU (nvidia-smi -L found none)"
elif [ ! -x "$kopt_run" ]; then
  run_note="kopt-run not built (needs the CUDA headers; see the configure output)"
fi
[ -z "$run_note" ] || kopt_log $TAG "GPU runs skipped: $run_note"

# Sizes as 12.3 KiB.
human() { awk -v b="$1" 'BEGIN { if (b < 1024) printf "%d B", b; else if (b < 1048576) printf "%.1f KiB", b/1024; else printf "%.1f MiB", b/1048576 }'; }

# The manifest's kernel count and chip: "COUNT CHIP", or nothing if unreadable.
manifest_info() {
  python3 - "$1" <<'PY' 2>/dev/null
import json, sys
m = json.load(open(sys.argv[1]))
print(len(m["kernels"]), m.get("chip") or "sm_90a")
PY
}

# ptxas -v's registers per entry ("32" or "15-32") and total spill bytes.
ptxas_resources() {
  awk '
    /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^registers/) r = $i + 0
                              if (n == 0 || r < lo) lo = r; if (n == 0 || r > hi) hi = r; n++ }
    /bytes spill stores/    { for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "spill") s += $i }
    END { if (n == 0) print "- -"; else printf "%s %d\n", (lo == hi ? lo : lo "-" hi), s }' "$1"
}

# kopt-run's report: "pass/FAIL" per check plus the sum of the kernels' median times.
run_summary() {
  python3 - "$1" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
ks = r.get("kernels", [])
ms = sum((k.get("time") or {}).get("median_ms", 0.0) for k in ks)
bad = [k.get("name", "?") for k in ks
       if "error" in k or (k.get("check") is not None and not k["check"].get("passed", False))]
print("%.3f" % ms if ks else "-", ",".join(bad))
PY
}

declare -A c_compile=() c_kernels=() c_ptx=() c_ptxas=() c_regs=() c_spill=() c_run=()
failures=()

# --- Compile and assemble -------------------------------------------------------------
if [ $do_compile = 1 ]; then
  kopt_log $TAG "compiling ${#names[@]} example(s) into $out"
  for n in "${names[@]}"; do
    c_compile[$n]="-" c_kernels[$n]="-" c_ptx[$n]="-" c_ptxas[$n]="-" c_regs[$n]="-" c_spill[$n]="-"
    rm -f "$out/$n.ptx" "$out/$n.json" "$out/$n.cubin" "$out/$n.run.json"
    if ! "$kopt_opt" "${src[$n]}" --kopt-to-ptx="output='$out/$n.ptx'" -o /dev/null \
         >"$out/$n.kopt-opt.log" 2>&1; then
      c_compile[$n]=FAILED; failures+=("$n: kopt-opt failed (log: $out/$n.kopt-opt.log)|$out/$n.kopt-opt.log")
      continue
    fi
    if [ ! -s "$out/$n.ptx" ] || ! info=$(manifest_info "$out/$n.json") || [ -z "$info" ]; then
      c_compile[$n]=FAILED
      failures+=("$n: kopt-opt wrote no PTX or no readable manifest ($out/$n.ptx, $out/$n.json)|$out/$n.kopt-opt.log")
      continue
    fi
    c_compile[$n]=ok
    read -r "c_kernels[$n]" chip <<<"$info"
    c_ptx[$n]=$(human "$(stat -c %s "$out/$n.ptx")")
    if "$ptxas" -arch="$chip" -v "$out/$n.ptx" -o "$out/$n.cubin" >"$out/$n.ptxas.log" 2>&1; then
      c_ptxas[$n]=ok
      read -r "c_regs[$n]" "c_spill[$n]" < <(ptxas_resources "$out/$n.ptxas.log")
    else
      c_ptxas[$n]=FAILED; failures+=("$n: ptxas -arch=$chip failed (log: $out/$n.ptxas.log)|$out/$n.ptxas.log")
    fi
  done
fi

# --- Run on the GPU ---------------------------------------------------------------------
for n in "${names[@]}"; do
  if [ $do_compile = 1 ] && [ "${c_ptxas[$n]}" != ok ]; then c_run[$n]="-"; continue; fi
  if [ -n "$run_note" ]; then c_run[$n]="skipped"; continue; fi
  [ -n "${c_kernels[$n]:-}" ] || c_kernels[$n]=$(manifest_info "$out/$n.json" | cut -d' ' -f1)
  status=0
  rm -f "$out/$n.run.json"
  # shellcheck disable=SC2086  # KOPT_RUN_ARGS is split on spaces on purpose
  "$kopt_run" "$out/$n.json" -o "$out/$n.run.json" ${KOPT_RUN_ARGS:-} >"$out/$n.run.log" 2>&1 || status=$?
  read -r ms bad < <(run_summary "$out/$n.run.json" || echo "-")
  case $status in
    0) c_run[$n]="pass${ms:+, $ms ms}"; [ "$ms" != - ] || c_run[$n]=pass ;;
    1) c_run[$n]="FAIL${bad:+ ($bad)}"
       failures+=("$n: kopt-run: a check failed${bad:+ in $bad} (report: $out/$n.run.json)|$out/$n.run.log") ;;
    *) c_run[$n]="ERROR"
       failures+=("$n: kopt-run exited with $status (log: $out/$n.run.log)|$out/$n.run.log") ;;
  esac
done

# --- Report ------------------------------------------------------------------------------
echo
{
  if [ $do_compile = 1 ]; then
    printf 'example\tcompile\tkernels\tPTX\tptxas\tregisters\tspill\tGPU run\n'
    for n in "${names[@]}"; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "${c_compile[$n]:--}" "${c_kernels[$n]:--}" \
        "${c_ptx[$n]:--}" "${c_ptxas[$n]:--}" "${c_regs[$n]:--}" "${c_spill[$n]:--}" "${c_run[$n]:--}"
    done
  else
    printf 'example\tkernels\tGPU run\n'
    for n in "${names[@]}"; do
      printf '%s\t%s\t%s\n' "$n" "${c_kernels[$n]:--}" "${c_run[$n]:--}"
    done
  fi
} | awk -F'\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
                    if (NF > nf) nf = NF }
                  END { for (r = 1; r <= NR; r++) { line = ""
                          for (i = 1; i <= nf; i++) line = line sprintf(i < nf ? "%-" w[i] "s  " : "%s", c[r, i])
                          print line } }'
echo
[ $do_compile = 0 ] || echo "registers: per kernel, from ptxas -v (a range when the example has several kernels); spill: bytes of spill stores"
[ -n "$run_note" ] || echo "GPU run: kopt-run's check against a reference, and the sum of the kernels' median times"
[ -z "$run_note" ] || echo "GPU runs skipped: $run_note"
echo "outputs: $out"

if [ ${#failures[@]} -gt 0 ]; then
  echo
  for f in "${failures[@]}"; do
    kopt_error $TAG "${f%%|*}"
    log=${f##*|}
    [ -f "$log" ] && tail -n 15 "$log" | sed 's/^/    /' >&2
  done
  kopt_error $TAG "${#failures[@]} failure(s) ($(kopt_elapsed $t_all))"
  exit 1
fi
kopt_log $TAG "all ${#names[@]} example(s) passed ($(kopt_elapsed $t_all))"
