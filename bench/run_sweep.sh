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
. "$(dirname "${BASH_SOURCE[0]}")/run_common.sh"
bench_run "${BASH_SOURCE[0]}" 11 run_sweep.py --sweep-dir "$@"
