#!/usr/bin/env bash
# The benchmark suite on a GPU host, in one command (docs/benchmarking.md):
#
#   bench/run_suite.sh PTX_DIR OUT_DIR [bench/run_suite.py options...]
#   bench/run_suite.sh --compile SUITE OUT_DIR [bench/run_suite.py options...]
#
# PTX_DIR: what bench/prepare_suite.sh (or bench/compile_suite.py --out) wrote, e.g.
# .device/suite; with --compile SUITE (bench/suite.json) the runner compiles the suite
# itself through the kopt Python package into OUT_DIR/compiled. Times kopt, PyTorch
# eager, torch.compile and cuBLAS on every problem and writes OUT_DIR/suite.json (the
# record), suite.md, speedup.png, roofline.png and run.log. Needs python3 with torch,
# the kopt package (PYTHONPATH=<bundle>/python) and matplotlib for the plots; no LLVM.
# Options, e.g. --only NAME, --max-autotune, --deadline S: bench/run_suite.py --help.
# Exit code: run_suite.py's.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/run_common.sh"
if [ "${1:-}" = "--compile" ]; then
  shift
  bench_run "${BASH_SOURCE[0]}" 14 run_suite.py --compile "$@"
fi
bench_run "${BASH_SOURCE[0]}" 14 run_suite.py --ptx-dir "$@"
