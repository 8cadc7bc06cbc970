#!/usr/bin/env bash
# The matmul schedule sweep on a GPU host, in one command (docs/benchmarking.md):
#
#   bench/run_sweep.sh SWEEP_DIR OUT_DIR [bench/run_sweep.py options...]
#
# SWEEP_DIR: what bench/compile_sweep.py --out wrote (index.json, PTX, manifests), e.g.
# .device/sweep. Checks every kernel against a float64 reference, times the correct
# ones and cuBLAS with one routine, and writes OUT_DIR/sweep.json (the record),
# sweep.md and run.log. Needs python3 with torch and the kopt Python package
# (PYTHONPATH=<bundle>/python); no LLVM. Options, e.g. --only ID, --runs N, --deadline S, --dry-run:
# bench/run_sweep.py --help. Exit code: run_sweep.py's.
set -u
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
sweep=$1
out=$2
shift 2
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/run_sweep.py" \
  --sweep-dir "$sweep" --out "$out" "$@"
