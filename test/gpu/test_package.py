"""GPU tests of the Python package and the C API's launcher (run on a GPU host
with torch, through the device tool; not in CI):

    KOPT_LIBRARY=.../libkopt.so PYTHONPATH=python python3 -m pytest -q test/gpu/test_package.py

Each problem is compiled in-process with kopt.compile when the library has the
compiler (the self-contained bundle); with a runtime-only library, set
KOPT_PKG_PTX_DIR to a folder of NAME.{ptx,json} compiled elsewhere
(python3 test/gpu/package_problems.py DIR writes them). Checks, against float64
references on fresh random inputs with the outputs poisoned first:
  - correctness of each problem through Function.__call__ and .launch;
  - TMA tensor maps re-encoded in stream order when buffer addresses change:
    back-to-back launches on different buffers without a sync between them,
    launches on two streams at once, a caching allocator's new addresses;
  - the split-K workspace and a multi-kernel function's intermediate buffers
    carved from the caller's workspace, zero-filled per launch;
  - bad tensors (misaligned views, non-contiguous, wrong dtype/shape, CPU) are
    refused with clear errors before any launch.
"""

import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kopt  # noqa: E402

from package_problems import PROBLEMS  # noqa: E402


def _load(name):
    text, schedule = PROBLEMS[name]
    ptx_dir = os.environ.get("KOPT_PKG_PTX_DIR")
    if ptx_dir:
        return kopt.load(Path(ptx_dir) / f"{name}.json")
    return kopt.compile(text, schedule=schedule, name=name).load()


_modules = {}


def module(name):
    if name not in _modules:
        _modules[name] = _load(name)
    return _modules[name]


def rand(shape, dtype):
    return torch.randn(shape, device="cuda", dtype=dtype)


def rel_err(out, ref):
    out = out.double()
    return ((out - ref).norm() / ref.norm()).item()


def mm_ref(a, b):
    return a.double() @ b.double().t()


def poison(t):
    t.fill_(float("nan"))
    return t


def test_tma_matmul_correct():
    fn = module("mm_tma").mm
    a, b = rand((1000, 512), torch.bfloat16), rand((768, 512), torch.bfloat16)
    c = fn(a, b)
    torch.cuda.synchronize()
    assert rel_err(c, mm_ref(a, b)) < 1e-2


@pytest.mark.parametrize("name", ["mm_tma", "mm_tma_persistent"])
def test_new_addresses_back_to_back(name):
    """Four launches on four buffer sets, no sync between them: each map copy
    lands after the launch that read the previous map."""
    fn = module(name).mm
    sets = [(rand((1000, 512), torch.bfloat16), rand((768, 512), torch.bfloat16))
            for _ in range(4)]
    outs = [poison(torch.empty((1000, 768), device="cuda", dtype=torch.bfloat16))
            for _ in sets]
    for (a, b), c in zip(sets, outs):
        fn.launch([a, b, c])
    torch.cuda.synchronize()
    for (a, b), c in zip(sets, outs):
        assert rel_err(c, mm_ref(a, b)) < 1e-2


def test_two_streams():
    fn = module("mm_tma").mm
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    results = []
    for _ in range(3):
        for s in (s1, s2):
            with torch.cuda.stream(s):
                a = rand((1000, 512), torch.bfloat16)
                b = rand((768, 512), torch.bfloat16)
                results.append((a, b, fn(a, b)))
    torch.cuda.synchronize()
    for a, b, c in results:
        assert rel_err(c, mm_ref(a, b)) < 1e-2


def test_split_k_workspace_every_call():
    fn = module("mm_splitk").mm
    # The split-K scratch is a function buffer: carved from the workspace
    # that the package allocates per call and the C API zero-fills.
    assert fn.workspace_bytes > 0
    for _ in range(3):
        a, b = rand((33, 4096), torch.bfloat16), rand((1024, 4096), torch.bfloat16)
        c = fn(a, b)
        torch.cuda.synchronize()
        assert rel_err(c, mm_ref(a, b)) < 1e-2


def test_mlp_block_intermediates_in_workspace():
    fn = module("mlp_block").mlp_block
    assert fn.workspace_bytes > 0
    h = rand((16, 4096), torch.bfloat16)
    wn = rand((4096,), torch.bfloat16)
    wg = rand((14336, 4096), torch.bfloat16) * 0.02
    wu = rand((14336, 4096), torch.bfloat16) * 0.02
    wd = rand((4096, 14336), torch.bfloat16) * 0.02
    for _ in range(2):
        out = fn(h, wn, wg, wu, wd)
        torch.cuda.synchronize()
        hd = h.double()
        y = hd * torch.rsqrt(hd.pow(2).mean(-1, keepdim=True) + 1e-5) * wn.double()
        y = y.bfloat16().double()
        g = (y @ wg.double().t()).bfloat16().double()
        u = (y @ wu.double().t()).bfloat16().double()
        act = (torch.nn.functional.silu(g).bfloat16().double() * u).bfloat16().double()
        ref = hd + (act @ wd.double().t()).bfloat16().double()
        assert rel_err(out, ref) < 2e-2


def test_softmax_and_explicit_stream():
    fn = module("softmax").sm
    x = rand((64, 1000), torch.float32)
    y = poison(torch.empty_like(x))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    fn.launch([x, y], stream=s)
    s.synchronize()
    assert rel_err(y, torch.softmax(x.double(), -1)) < 1e-5


def test_bad_tensors_are_refused():
    fn = module("softmax").sm
    x = rand((64, 1000), torch.float32)
    y = torch.empty_like(x)
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        fn.launch([torch.empty(64 * 1000 + 4, device="cuda")[1:64001].view(64, 1000), y])
    with pytest.raises(ValueError, match="not contiguous"):
        fn.launch([rand((1000, 64), torch.float32).t(), y])
    with pytest.raises(TypeError, match="dtype f16, expected f32"):
        fn.launch([x.half(), y])
    with pytest.raises(ValueError, match="shape"):
        fn.launch([x[:32], y])
    with pytest.raises(ValueError, match="CPU tensor"):
        fn.launch([x.cpu(), y])
    with pytest.raises(TypeError, match="takes 1 inputs"):
        fn(x, x)
    # Nothing was launched: the device is still healthy.
    fn.launch([x, y])
    torch.cuda.synchronize()
    assert rel_err(y, torch.softmax(x.double(), -1)) < 1e-5
