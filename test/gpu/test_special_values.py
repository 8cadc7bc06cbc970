"""GPU tests of special values and awkward shapes (issue 16), against PyTorch on the
same inputs (run on a GPU host with torch and the self-contained bundle, through the
device tool; not in CI):

    KOPT_LIBRARY=.../libkopt.so PYTHONPATH=python python3 -m pytest -q test/gpu/test_special_values.py

Each case compiles a small function in-process (kopt.compile), runs it on tensors
holding +inf, -inf, NaN, huge or subnormal values, and compares with PyTorch's eager
result: the same NaN positions, the same infinities, finite values within a
relative 1e-5 (f32). Row widths cover each row-kernel plan (lib/KernelBuilders/Row.cpp):
rows sharing a warp (3: 4 lanes, one of them past the row; 33, 128), a row in registers with a last
chunk past its end (1000), a row split across a cluster of 8 blocks that loops
(70001: no 16-byte accesses) or stays in registers (131072); softmax and max are also
fused after an elementwise producer.
"""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import kopt  # noqa: E402

INF, NAN = float("inf"), float("nan")
WIDTHS = [3, 33, 128, 1000, 70001, 131072]


def t(shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def run(name, args, results, lines, inputs):
    """Compiles func @name(args) -> results with `lines` and runs it on `inputs`."""
    sig = ", ".join(f"%{n}: {ty}" for n, ty in args)
    text = (f"func.func @{name}({sig}) -> ({', '.join(ty for _, ty in results)}) {{\n"
            + "".join(f"  {l}\n" for l in lines)
            + f"  return {', '.join(v for v, _ in results)} : "
            + f"{', '.join(ty for _, ty in results)}\n}}\n")
    fn = getattr(kopt.compile(text, name=name + ".mlir").load(), name)
    out = fn(*inputs)
    torch.cuda.synchronize()
    return out


def same(out, ref, rtol=1e-5, scale=0.0):
    """NaN where ref is NaN, equal infinities, finite values within rtol of
    max(|ref|, scale) (scale: the magnitude of the values around, for results
    that cancel to near 0, e.g. a normalized value plus a bias)."""
    out, ref = out.double().cpu(), ref.double().cpu()
    assert out.shape == ref.shape
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(out), nan), "NaN positions differ"
    inf = torch.isinf(ref)
    assert torch.equal(out[inf], ref[inf]), "infinities differ"
    fin = ~(nan | inf)
    err = (out[fin] - ref[fin]).abs() / ref[fin].abs().clamp_min(max(scale, 1e-30))
    assert err.max().item() <= rtol if err.numel() else True, err.max().item()


def special_rows(n):
    """Rows of width n: ordinary, one +inf, one -inf, all -inf, one NaN, all
    negative and huge, constant."""
    rows = torch.randn(8, n, device="cuda")
    j = n // 2
    rows[1, j] = INF
    rows[2, j] = -INF
    rows[3, :] = -INF
    rows[4, j] = NAN
    rows[5, :] = -torch.rand(n, device="cuda") * 1e30 - 1e30
    rows[6, :] = 7.0
    rows[7, :] = -3.0 - torch.rand(n, device="cuda")
    return rows


@pytest.mark.parametrize("n", WIDTHS)
def test_softmax_special_rows(n):
    x = special_rows(n)
    y = run(f"softmax_{n}", [("x", t(x.shape))], [("%y", t(x.shape))],
            [f"%y = kopt.softmax %x : {t(x.shape)}"], [x])
    same(y, torch.softmax(x.double(), dim=-1))


@pytest.mark.parametrize("n", WIDTHS)
def test_max_and_sum_special_rows(n):
    x = special_rows(n)
    r = t([8])
    m, s = run(f"reduce_{n}", [("x", t(x.shape))], [("%m", r), ("%s", r)],
               [f"%m = kopt.reduce max %x : {t(x.shape)} -> {r}",
                f"%s = kopt.reduce sum %x : {t(x.shape)} -> {r}"], [x])
    # max: NaN propagates (torch.amax does too); all-negative rows are right.
    same(m, torch.amax(x.double(), dim=-1))
    ref = x.double().sum(-1)
    # Sums: the special rows (inf, -inf, NaN) and the constant and negative
    # ones (sums far from 0); a random row's sum may lie near 0, where f32's
    # relative error is unbounded.
    rows = [1, 2, 3, 4, 6, 7]
    same(s[rows], ref[rows], rtol=1e-4)


@pytest.mark.parametrize("n", [33, 1000])
def test_fused_relu_then_max(n):
    # relu(NaN) is NaN (maximumf), and the max after it in the same kernel.
    x = special_rows(n)
    r = t([8])
    m = run(f"relu_max_{n}", [("x", t(x.shape))], [("%m", r)],
            [f"%a = kopt.relu %x : {t(x.shape)}",
             f"%m = kopt.reduce max %a : {t(x.shape)} -> {r}"], [x])
    same(m, torch.amax(torch.relu(x.double()), dim=-1))


@pytest.mark.parametrize("n", [128, 4096])
def test_norms_of_huge_constant_rows(n):
    # Rows of +-1e15 and a constant row: RMSNorm gives +-1 (the sum of squares
    # 1e30 * n stays finite in f32); LayerNorm's centred variance is 0, so the
    # result is the bias, never NaN.
    x = torch.full((4, n), 1e15, device="cuda")
    x[1] = -1e15
    x[2] = 5.0
    x[3] = torch.randn(n, device="cuda") * 1e15
    w, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    y, z = run(f"norms_{n}", [("x", t(x.shape)), ("w", t([n])), ("b", t([n]))],
               [("%y", t(x.shape)), ("%z", t(x.shape))],
               [f"%y = kopt.rmsnorm %x weight(%w : {t([n])}) eps = 1.0e-05 : {t(x.shape)}",
                f"%z = kopt.layernorm %x weight(%w : {t([n])}) bias(%b : {t([n])}) "
                f"eps = 1.0e-05 : {t(x.shape)}"], [x, w, b])
    xd = x.double()
    rms = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
    same(y, rms, rtol=1e-4, scale=1.0)
    ln = torch.nn.functional.layer_norm(xd, (n,), w.double(), b.double(), eps=1e-5)
    # Rows of +-1e15: f32's mean of them may differ from the value in its last
    # bit, which the normalization magnifies (PyTorch's f32 kernels too); they
    # must stay finite. The constant 5.0 and the random row compare.
    assert torch.isfinite(z).all()
    same(z[2:], ln[2:], rtol=1e-4, scale=1.0)


def test_subnormal_products_not_flushed():
    # 1e-20 * 1e-19 = 1e-39 is subnormal in f32: IEEE mul.rn keeps it.
    x = torch.full((4, 1000), 1e-20, device="cuda")
    c = torch.tensor(1e-19, device="cuda")
    y = run("subnormal_mul", [("x", t(x.shape)), ("c", t([]))], [("%y", t(x.shape))],
            [f"%y = kopt.mul %x, %c : {t(x.shape)}, {t([])} -> {t(x.shape)}"], [x, c])
    assert (y != 0).all()
    same(y, x * c)


def test_subnormal_exp_not_flushed():
    # libdevice's __nv_expf scales its ex2.approx.ftz so that subnormal
    # results survive.
    x = torch.full((4, 1000), -88.5, device="cuda")  # exp(-88.5) ~ 3.6e-39
    y = run("subnormal_exp", [("x", t(x.shape))], [("%y", t(x.shape))],
            [f"%y = kopt.exp %x : {t(x.shape)}"], [x])
    assert (y != 0).all()


def test_many_rows_and_width_one():
    # 2^20 rows of 8 (two threads per row, 128 rows per block) and rows of width 1.
    x = torch.randn(1 << 20, 8, device="cuda")
    y = run("many_rows", [("x", t(x.shape))], [("%y", t(x.shape))],
            [f"%y = kopt.softmax %x : {t(x.shape)}"], [x])
    same(y, torch.softmax(x.double(), dim=-1))
    x1 = torch.randn(5, 1, device="cuda")
    x1[2, 0] = NAN
    y1 = run("width_one", [("x", t(x1.shape))], [("%y", t(x1.shape))],
             [f"%y = kopt.softmax %x : {t(x1.shape)}"], [x1])
    same(y1, torch.softmax(x1.double(), dim=-1))
