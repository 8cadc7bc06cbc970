#!/usr/bin/env bash
# On a GPU host: install the bundle's Python package (as a user would, with pip,
# so the torch_dynamo_backends entry point is registered), run the backend's GPU
# tests and the Llama benchmark.
#   test/gpu/torch_backend_host.sh BUNDLE.tar.xz OUT_DIR [torch_backend_llama.py ARGS...]
set -u
bundle=$1 out=$2; shift 2
work=$(mktemp -d)
tar xJf "$bundle" -C "$work" || exit 2
python3 -m pip install -q --no-deps --no-build-isolation --no-index --target "$work/site" \
  "$work/kopt-bundle/python" > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 2; }
export PYTHONPATH=$work/site KOPT_CACHE_DIR=$work/cache
python3 -c "from torch._dynamo.backends.registry import lookup_backend as l; print('backend kopt:', l('kopt'))"
python3 -m pytest -q -p no:cacheprovider test/gpu/test_torch_backend.py > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?"; tail -n 3 "$out/gpu-tests.log"
python3 bench/torch_backend_llama.py --out "$out/llama.json" "$@" > "$out/llama.log" 2>&1
echo "llama exit $?"
grep '^{' "$out/llama.log" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["shape"], r["mode"], r.get("ms_flushed"), r.get("ms_back_to_back"), r.get("kernels"), r.get("rel_err_vs_eager"), r.get("error", "")[:300])'
