#!/usr/bin/env bash
# On a GPU host: install the bundle's Python package (as a user would, with pip,
# so the torch_dynamo_backends entry point is registered), then run, each within
# its time limit (seconds; 0 skips it):
#   the backend's GPU tests                      TESTS_S (default 300)
#   bench/torch_backend_llama.py ARGS...          LLAMA_S (default 600)
#   bench/run_kernelbench.py on $KERNELBENCH      KERNELBENCH_S (default 0), with
#                                                 $KERNELBENCH_ARGS (KERNELBENCH_BACKGROUND=1:
#                                                 beside the others, which run on MAIN_GPU;
#                                                 KERNELBENCH_OUT: its --out, for --resume)
#   test/gpu/torch_backend_host.sh BUNDLE.tar.xz OUT_DIR [torch_backend_llama.py ARGS...]
set -u
bundle=$1 out=$2; shift 2
work=$(mktemp -d)
tar xJf "$bundle" -C "$work" || exit 2
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target "$work/site" \
  "$work/kopt-bundle/python" > "$work/pip.log" 2>&1 || { cp "$work/pip.log" "$out/"; cat "$work/pip.log"; exit 2; }
export PYTHONPATH=$work/site KOPT_CACHE_DIR=$work/cache
python3 -c "from torch._dynamo.backends.registry import lookup_backend as l; print('backend kopt:', l('kopt'))"
# KernelBench first, in the background when KERNELBENCH_BACKGROUND=1 (its own GPUs
# by KERNELBENCH_ARGS="--gpu-ids ..."; the tests and the benchmark then on
# MAIN_GPU), else after them.
kernelbench() {

  # shellcheck disable=SC2086  # KERNELBENCH_ARGS is a list of arguments
  timeout "${KERNELBENCH_S}" python3 bench/run_kernelbench.py --kernelbench "$KERNELBENCH" \
    --out "${KERNELBENCH_OUT:-$work/kb}" ${KERNELBENCH_ARGS:-} > "$out/kernelbench.log" 2>&1
  echo "kernelbench exit $?"
  cp "${KERNELBENCH_OUT:-$work/kb}/summary.md" "${KERNELBENCH_OUT:-$work/kb}/summary.json" "$out/" 2>/dev/null
  tar czf "$out/kernelbench-results.tar.gz" -C "${KERNELBENCH_OUT:-$work/kb}" . 2>/dev/null
  cat "$out/summary.md" 2>/dev/null | head -40
}
kb_pid=
if [ "${KERNELBENCH_S:-0}" != 0 ] && [ "${KERNELBENCH_BACKGROUND:-0}" = 1 ]; then
  kernelbench > "$out/kernelbench-summary.txt" 2>&1 &
  kb_pid=$!
fi
[ -n "${MAIN_GPU:-}" ] && export CUDA_VISIBLE_DEVICES=$MAIN_GPU
if [ "${TESTS_S:-300}" != 0 ]; then
  timeout "${TESTS_S:-300}" python3 -m pytest -q -p no:cacheprovider -s \
    test/gpu/test_torch_backend.py > "$out/gpu-tests.log" 2>&1
  echo "gpu tests exit $?"; tail -n 3 "$out/gpu-tests.log"
fi
if [ "${LLAMA_S:-600}" != 0 ]; then
  timeout "${LLAMA_S:-600}" python3 bench/torch_backend_llama.py --out "$out/llama.json" "$@" \
    > "$out/llama.log" 2>&1
  echo "llama exit $?"
  grep '^{' "$out/llama.log" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["shape"], r["mode"], r.get("ms_flushed"), r.get("ms_back_to_back"), r.get("kernels"), r.get("rel_err_vs_eager"), r.get("error", "")[:300])'
fi
if [ -n "$kb_pid" ]; then
  wait "$kb_pid"; cat "$out/kernelbench-summary.txt"
elif [ "${KERNELBENCH_S:-0}" != 0 ]; then
  kernelbench
fi
