#!/usr/bin/env bash
# The benchmark suite on a GPU host, in one command (docs/benchmarking.md):
#
#   bench/run_suite.sh PTX_DIR OUT_DIR [bench/run_suite.py options...]
#
# PTX_DIR: what bench/prepare_suite.sh (or bench/compile_suite.py --out) wrote, e.g.
# .device/suite. Times kopt, PyTorch eager, torch.compile and cuBLAS on every problem
# and writes OUT_DIR/suite.json (the record), suite.md, speedup.png, roofline.png and
# run.log. Needs python3 with torch (cupy for loading PTX, else the CUDA driver through
# ctypes; matplotlib for the plots); no LLVM. Options, e.g. --only NAME, --max-autotune,
# --deadline S: bench/run_suite.py --help. Exit code: run_suite.py's.
set -u
if [ $# -lt 2 ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
ptx=$1
out=$2
shift 2
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/run_suite.py" \
  --ptx-dir "$ptx" --out "$out" "$@"
