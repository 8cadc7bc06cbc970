"""The torch.compile backend on the CPU: ATen graphs (traced with fake CUDA
tensors, as AOT autograd hands them to the backend) partitioned, translated to
kopt IR, compiled to PTX and assembled with ptxas; the fallbacks and their
reasons; the eager path of partitions that cannot run. Launching on a GPU is
tested by test/gpu/test_torch_backend.py through the device tool."""

import os
import subprocess
import warnings

import pytest

if os.environ.get("KOPT_REQUIRE_TORCH") == "1":
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"PyTorch is needed by the torch.compile backend's tests and "
                          f"cannot be imported ({e}): run scripts/setup.sh, which "
                          f"installs it into .python-deps, or set KOPT_NO_TORCH=1 "
                          f"to skip these tests") from None
else:
    torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import kopt  # noqa: E402
from kopt import torch_backend as tb  # noqa: E402
from kopt.torch_backend import compile as kc  # noqa: E402
from kopt.torch_backend import module as km  # noqa: E402
from kopt.torch_backend import translate as tr  # noqa: E402

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


def trace(fn, *specs):
    """fn's ATen graph for CUDA inputs of the given (shape, dtype)."""
    with FakeTensorMode():
        args = [torch.empty(s, dtype=d, device="cuda") for s, d in specs]
        return make_fx(fn, tracing_mode="fake")(*args)


def compile_fn(fn, *specs, **options):
    gm = trace(fn, *specs)
    opts = tb.Options.make(dict({"cache_dir": None}, **options), None)
    tb.reset()
    kc.compile_static(gm, opts)
    return gm, tb.report()[-1]


def partitions(gm):
    """The graph's own partitions (not those inside their split variants)."""
    return [m for m in gm.children() if isinstance(m, km.KoptPartition)]


def ptxas(ptx, tmp_path):
    exe = os.environ.get("KOPT_PTXAS")
    if not exe:
        pytest.skip("KOPT_PTXAS not set (run through CTest)")
    src = tmp_path / "p.ptx"
    src.write_text(ptx)
    out = subprocess.run([exe, "-arch=sm_90a", str(src), "-o", str(tmp_path / "p.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def hf_rmsnorm(x, w, eps=1e-6):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def block(x, w_norm, w, b):
    """RMSNorm -> Linear with bias -> GELU -> softmax -> * 0.1 (bf16)."""
    y = torch.nn.functional.linear(hf_rmsnorm(x, w_norm), w, b)
    return torch.softmax(torch.nn.functional.gelu(y), -1) * 0.1


BLOCK = [((2, 3, 128), BF16), ((128,), BF16), ((256, 128), BF16), ((256,), BF16)]


def test_block_is_one_partition_and_assembles(tmp_path):
    gm, rep = compile_fn(block, *BLOCK)
    (p,) = partitions(gm)
    mlir = p.fn.mlir
    assert "kopt.rmsnorm %a0 eps = 0x358637BD : tensor<6x128xbf16>" in mlir  # 1e-6 in f32
    assert "kopt.matmul" in mlir and "{transpose_b}" in mlir
    assert "-> tensor<6x256xf32>" in mlir  # addmm accumulates and adds the bias in f32
    assert "kopt.gelu" in mlir and "approximate(none)" in mlir
    assert "kopt.softmax" in mlir
    # 0.1 is not a bf16 value: the scale is applied in f32 (one rounding).
    assert "tensor<f32>" in mlir and p.fn.constants == [(float(torch.tensor(0.1)), "f32")]
    assert rep.partitions == 1 and rep.pytorch_ops == 0 and not rep.fallbacks
    assert rep.ops_kopt["kopt.rmsnorm"] == 1 and rep.ops_kopt["aten.addmm.default"] == 1
    assert 1 <= rep.kopt_kernels < sum(rep.ops_kopt.values())  # fused
    assert p.compiled.manifest["functions"][0]["name"] == p.fn.name
    ptxas(p.compiled.ptx, tmp_path)
    text = str(rep)
    assert "kopt partitions: 1" in text and "kopt kernels per call" in text


def test_exact_scalar_stays_in_bf16():
    gm, _ = compile_fn(lambda x: x * 0.5 + 1.0, ((4, 64), BF16))
    (p,) = partitions(gm)
    assert sorted(p.fn.constants) == [(0.5, "bf16"), (1.0, "bf16")]
    assert "kopt.cast" not in p.fn.mlir


def test_unsupported_op_splits_and_is_reported():
    def f(x):
        y = torch.exp(x)
        z = torch.cumsum(y, -1)  # no kopt translation
        return torch.tanh(z) + 1.0
    gm, rep = compile_fn(f, ((8, 64), F32))
    assert len(partitions(gm)) == 2
    assert rep.fallbacks[("aten.cumsum.default", "no kopt translation")] == 1
    assert "aten.cumsum.default x1: no kopt translation" in str(rep)
    assert rep.pytorch_ops == 1


def test_broadcast_kopt_cannot_represent_falls_back():
    # Beside a row op the shapes stay 2-D, where [2, 1, 64] against
    # [2, 3, 64] is neither a row nor a column.
    gm, rep = compile_fn(lambda x, y: torch.softmax(x * y, -1),
                         ((2, 3, 64), F32), ((2, 1, 64), F32))
    reasons = {k[1] for k in rep.fallbacks if k[0] == "aten.mul.Tensor"}
    assert any("not a row, a column or a scalar" in r for r in reasons), rep
    (p,) = partitions(gm)  # softmax still goes to kopt
    assert "kopt.softmax" in p.fn.mlir and "kopt.mul" not in p.fn.mlir


def test_elementwise_broadcasts_are_coalesced(tmp_path):
    # A conv's per-channel bias: [C, 1, 1] against [N, C, H, W] is [1, C, 1]
    # against [N, C, H*W]; a [N, 1, H, W] operand splits the groups further.
    def f(x, b, m):
        return torch.relu(x + b) * m - 1.0
    gm, rep = compile_fn(f, ((4, 8, 5, 6), F32), ((8, 1, 1), F32), ((4, 1, 5, 6), F32))
    (p,) = partitions(gm)
    assert not rep.fallbacks and rep.pytorch_ops == 0, str(rep)
    mlir = p.fn.mlir
    assert "tensor<4x8x30xf32>" in mlir and "tensor<1x8x1xf32>" in mlir, mlir
    assert "tensor<4x1x30xf32>" in mlir, mlir
    assert p.fn.results[0][1] == (4, 8, 30)
    ptxas(p.compiled.ptx, tmp_path)


def test_coalesced_shapes():
    lay = tr.Coalesced((2, 1, 3, 4, 5), [[0], [2], [3, 4]])
    assert lay.kshape((2, 1, 3, 4, 5)) == (2, 3, 20)
    assert lay.kshape((3, 1, 1)) == (1, 3, 1)
    assert lay.kshape((4, 5)) == (1, 1, 20)
    assert lay.kshape(()) == ()
    with pytest.raises(tr.Unsupported, match="whole groups"):
        lay.kshape((5,))  # [.., 1, 5] reads half of the group (4, 5)
    # Two shapes in one partition, or a row op: the canonical 2-D shapes.
    assert tr.Coalesced.of(trace(lambda x, b: (x + b).sum(-1),
                                 ((2, 3, 4), F32), ((3, 1), F32))) is None
    assert tr.Coalesced.of(trace(lambda x, b: x + b, ((2, 3, 4), F32), ((4,), F32))) is None
    lay = tr.Coalesced.of(trace(lambda x, b: x + b, ((2, 3, 4), F32), ((3, 1), F32)))
    assert lay.groups == [[0], [1], [2]]


def test_clamps_and_piecewise_activations(tmp_path):
    F = torch.nn.functional

    def f(x):
        y = F.hardtanh(x) + F.leaky_relu(x, 0.2) + F.hardswish(x) + F.hardsigmoid(x)
        return torch.clamp(y, min=-0.3, max=2.5), torch.clamp(x, max=0.1), torch.clamp_min(x, 0.0)
    gm, rep = compile_fn(f, ((16, 64), BF16))
    assert not rep.fallbacks and rep.pytorch_ops == 0, str(rep)
    (p,) = partitions(gm)
    mlir = p.fn.mlir
    # Bounds are converted to the tensor's dtype (bf16 here), as clamp does;
    # the activations compute in f32 and round once.
    consts = dict((v, d) for v, d in p.fn.constants)
    assert float(torch.tensor(-0.3).to(BF16).float()) in consts
    assert consts.get(6.0) == "f32" and consts.get(3.0) == "f32"
    # hardswish and hardsigmoid multiply by 1.0f/6.0f, as PyTorch's CUDA kernels do
    # (its CPU hardswish divides by 6: a different last bit for some x).
    assert float(torch.tensor(1.0) / 6.0) in consts
    assert "kopt.div" not in mlir
    ptxas(p.compiled.ptx, tmp_path)


def test_softplus_mish_and_logs(tmp_path):
    F = torch.nn.functional

    def f(x):
        return F.mish(x) + F.softplus(x) + F.softplus(x, beta=2.0), torch.log(x.abs()) + \
            torch.log1p(x.abs())
    gm, rep = compile_fn(f, ((16, 64), BF16))
    assert not rep.fallbacks and rep.pytorch_ops == 0, str(rep)
    (p,) = partitions(gm)
    mlir = p.fn.mlir
    # softplus as max(x, 0) + log1p(exp(-|x|)): no exp of a large x to overflow
    assert mlir.count("kopt.log1p") >= 4 and "kopt.log " in mlir and "kopt.tanh" in mlir
    assert "kopt.div" in mlir  # softplus's / beta
    ptxas(p.compiled.ptx, tmp_path)
    # A threshold below 17 cuts off where softplus(x) and x still differ in f32.
    gm, rep = compile_fn(lambda x: F.softplus(torch.exp(x), threshold=5.0), ((8, 64), F32))
    assert any(op == "aten.softplus.default" and "threshold" in r
               for op, r in rep.fallbacks), str(rep)


def test_batch_norm_in_eval_of_a_gemm_output(tmp_path):
    def f(x, w, m, v, g, b):
        return torch.relu(torch.nn.functional.batch_norm(x @ w, m, v, g, b, False, 0.1,
                                                         1e-5))
    specs = (((32, 48), F32), ((48, 64), F32), ((64,), F32), ((64,), F32), ((64,), F32),
             ((64,), F32))
    gm, rep = compile_fn(f, *specs)
    assert not rep.fallbacks and rep.pytorch_ops == 0, str(rep)
    (p,) = partitions(gm)
    assert "kopt.sqrt" in p.fn.mlir and "kopt.matmul" in p.fn.mlir
    ptxas(p.compiled.ptx, tmp_path)
    args = _placeholder_args(p.sub)
    for a, b in zip(p.split(*args), p.sub(*args)):
        torch.testing.assert_close(a, b, atol=0, rtol=0, equal_nan=True)
    # A 4-D input (channels at dim 1 of [N, C, H, W]) stays with PyTorch.
    gm, rep = compile_fn(lambda x, m, v: torch.nn.functional.batch_norm(
        torch.exp(x), m, v, None, None, False, 0.1, 1e-5),
        ((2, 4, 8, 8), F32), ((4,), F32), ((4,), F32))
    assert any("rank-4" in r and "2-D [N, C]" in r for _, r in rep.fallbacks), str(rep)


def test_scalars_pytorch_refuses_and_softplus_ranges_stay_with_pytorch():
    """Numbers beyond the dtype (PyTorch's checked conversion raises in eager),
    softplus thresholds where PyTorch's exp overflows, and empty tensors are
    left to PyTorch with their reason."""
    F = torch.nn.functional
    cases = [
        (lambda x: F.leaky_relu(torch.exp(x), 1e39), F32, "aten.leaky_relu.default",
         "overflows f32"),
        (lambda x: torch.clamp(torch.exp(x), max=1e39), BF16, "aten.clamp.default",
         "overflows bf16"),
        (lambda x: torch.clamp(torch.exp(x), max=1e5), F16, "aten.clamp.default",
         "overflows f16"),
        (lambda x: F.softplus(torch.exp(x), beta=1e39), F32, "aten.softplus.default",
         "overflows f32"),
        (lambda x: F.softplus(torch.exp(x), threshold=100.0), F32, "aten.softplus.default",
         "above 88"),
    ]
    for fn, dt, op, why in cases:
        gm, rep = compile_fn(fn, ((8, 64), dt))
        assert any(o == op and why in r for o, r in rep.fallbacks), (why, str(rep))
    # inf bounds are PyTorch's too: translated
    gm, rep = compile_fn(lambda x: torch.clamp(x, max=float("inf")) + 1.0, ((8, 64), BF16))
    assert not rep.fallbacks, str(rep)
    # a huge beta that f32 holds: softplus is max(x, 0) + log1p(exp(-|bx|)) / beta
    gm, rep = compile_fn(lambda x: F.softplus(x, beta=1e38), ((8, 64), F32))
    assert not rep.fallbacks, str(rep)
    gm, rep = compile_fn(lambda x: torch.log(x) + 1.0, ((0, 4), F32))
    assert rep.partitions == 0 and rep.pytorch_ops == 2, str(rep)
    assert all("empty tensor" in r for _, r in rep.fallbacks), str(rep)


def test_clamp_to_nan_and_infinite_slope_stay_with_pytorch():
    gm, rep = compile_fn(lambda x: torch.clamp(torch.exp(x), min=float("nan")) + 1.0,
                         ((8, 64), F32))
    assert any(op == "aten.clamp.default" and "NaN" in r for op, r in rep.fallbacks), str(rep)
    gm, rep = compile_fn(lambda x: torch.nn.functional.leaky_relu(torch.exp(x), float("inf")),
                         ((8, 64), F32))
    assert any(op == "aten.leaky_relu.default" for op, _ in rep.fallbacks), str(rep)


def test_keepdim_reduction_result_is_an_output_not_an_operand():
    def f(x):
        m = x.amax(-1, keepdim=True)
        return x - m, m
    gm, rep = compile_fn(f, ((16, 64), F32))
    reasons = [r for (op, r) in rep.fallbacks if op == "aten.sub.Tensor"]
    assert reasons and "reshape" in reasons[0]
    (p,) = partitions(gm)
    assert "kopt.reduce max" in p.fn.mlir


def test_int_dtypes_and_unsupported_views_stay_with_pytorch():
    def f(x, idx):
        heads = x.view(4, 8, 16)  # changes the rows kopt sees: [4, 128] -> [32, 16]
        return torch.softmax(heads, -1), idx + 1
    gm, rep = compile_fn(f, ((4, 128), F16), ((4,), torch.int64))
    ops = {op for op, _ in rep.fallbacks}
    assert "aten.add.Tensor" in ops  # int64
    assert any("dtype torch.int64" in r for _, r in rep.fallbacks)
    (p,) = partitions(gm)
    assert "tensor<32x16xf16>" in p.fn.mlir  # softmax reads the view's own input


def test_linear_weight_read_transposed_by_two_matmuls():
    def f(x, w):
        wt = w.t()
        return (x @ wt).exp(), torch.cumsum(x, -1) @ wt
    gm, rep = compile_fn(f, ((16, 64), F32), ((32, 64), F32), allow_tf32=True)
    mlir = "".join(p.fn.mlir for p in partitions(gm))
    assert mlir.count("{transpose_b, tf32}") == 2  # both read w as stored
    assert rep.fallbacks[("aten.cumsum.default", "no kopt translation")] == 1


def test_layernorm_and_pow_and_casts(tmp_path):
    def f(x, w, b):
        y = torch.nn.functional.layer_norm(x, (256,), w, b, 1e-5)
        return (y.float().pow(3) / 3.0).to(F16), y.sigmoid().relu()
    gm, rep = compile_fn(f, ((8, 256), F16), ((256,), F16), ((256,), F16))
    (p,) = partitions(gm)
    assert "kopt.layernorm %a0 weight(%a1 : tensor<256xf16>) bias(%a2 : tensor<256xf16>)" \
        in p.fn.mlir
    # x^3 as two f32 multiplies; / 3.0 as * f32(1/3), as PyTorch's CUDA kernel
    assert p.fn.mlir.count("kopt.mul") == 3 and "kopt.div" not in p.fn.mlir
    ptxas(p.compiled.ptx, tmp_path)


def test_layernorm_mean_output_used_falls_back():
    def f(x):
        out, mean, rstd = torch.ops.aten.native_layer_norm(x, [64], None, None, 1e-5)
        return out.exp(), mean
    gm, rep = compile_fn(f, ((8, 64), F32))
    assert any("mean or rstd" in r for _, r in rep.fallbacks)


def test_min_partition_ops():
    gm, rep = compile_fn(lambda x: x.exp(), ((8, 64), F32), min_partition_ops=2)
    assert not partitions(gm)
    assert any("min_partition_ops=2" in r for _, r in rep.fallbacks)


def test_compile_error_runs_the_partition_in_pytorch(monkeypatch):
    def fail(*a, **k):
        raise kopt.CompileError("<test>:1:1: error: injected failure")
    monkeypatch.setattr(km, "kopt_compile", fail)
    km._memory_cache.clear()
    with pytest.warns(UserWarning, match="injected failure"):
        gm, rep = compile_fn(lambda x: x.exp() * 2.0, ((8, 64), F32))
    (p,) = partitions(gm)
    assert p.fallback_reason and rep.failed_partitions and rep.partitions == 0
    x = torch.randn(8, 64)
    torch.testing.assert_close(p(x)[0], x.exp() * 2.0)  # eager, on the CPU


def test_disk_cache_hit_and_damaged_entry(tmp_path, monkeypatch):
    km._memory_cache.clear()
    gm, _ = compile_fn(lambda x: x.tanh(), ((8, 64), F32), cache_dir=str(tmp_path))
    (entry,) = [d for d in tmp_path.iterdir() if not d.name.startswith(".")]
    assert (entry / "kernels.ptx").is_file() and (entry / "manifest.json").is_file()
    km._memory_cache.clear()
    monkeypatch.setattr(km, "kopt_compile", lambda *a, **k: pytest.fail("recompiled"))
    gm, rep = compile_fn(lambda x: x.tanh(), ((8, 64), F32), cache_dir=str(tmp_path))
    assert rep.partitions == 1
    # A damaged entry is compiled again, not trusted.
    monkeypatch.undo()
    km._memory_cache.clear()
    (entry / "manifest.json").write_text("{ not json")
    gm, rep = compile_fn(lambda x: x.tanh(), ((8, 64), F32), cache_dir=str(tmp_path))
    assert rep.partitions == 1 and "kernels" in partitions(gm)[0].compiled.manifest


def test_decide_between_kopt_its_split_variant_and_pytorch():
    d = choose.decide_partition
    assert d(1.0, 0.5, 0.9, "pytorch", "measured").impl == "split"
    assert d(0.5, 1.0, 0.9, "pytorch", "measured").impl == "kopt"
    assert d(1.0, 0.5, 0.49, "pytorch", "measured").impl == "split"  # within 2%
    assert d(1.0, 0.5, 0.40, "pytorch", "measured").impl == "pytorch"
    assert d(1.0, None, 0.99, "inductor", "measured").impl == "kopt"
    assert d(None, None, 0.99, "inductor", "measured").impl == "inductor"
    c = d(1.0, 0.5, 0.9, "pytorch", "measured")
    assert (c.kopt_ms, c.split_ms, c.pytorch_ms) == (1.0, 0.5, 0.9)
    assert "PyTorch's matmuls + kopt 0.5000 ms" in str(c)


def _placeholder_args(sub):
    return [torch.randn(tuple(n.meta["val"].shape)).to(n.meta["val"].dtype)
            for n in sub.graph.nodes if n.op == "placeholder"]


def test_matmul_partition_has_a_split_variant(tmp_path):
    """A partition of matmuls and other ops gets a third candidate: PyTorch's
    matmuls (cuBLAS) with kopt's kernels for the rest."""
    def f(x, w, b, r):
        h = torch.relu(torch.nn.functional.linear(x, w, b)) * 2.0 + r
        return torch.softmax(h @ w, -1)
    specs = (((32, 64), F32), ((64, 64), F32), ((64,), F32), ((32, 64), F32))
    gm, rep = compile_fn(f, *specs)
    (p,) = partitions(gm)
    assert "kopt.matmul" in p.fn.mlir and p.split is not None
    inner = [m for m in p.split.modules() if isinstance(m, km.KoptPartition)]
    assert len(inner) == 2  # relu * 2 + r between the matmuls; softmax after
    for m in inner:
        assert "kopt.matmul" not in m.fn.mlir and m.choice.impl == "kopt"
        ptxas(m.compiled.ptx, tmp_path)
    targets = [n.target for n in p.split.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.addmm.default in targets and torch.ops.aten.mm.default in targets
    # Without a GPU every piece runs its ATen ops: the variant computes what
    # the partition's graph does.
    args = _placeholder_args(p.sub)
    for a, b in zip(p.split(*args), p.sub(*args)):
        torch.testing.assert_close(a, b, atol=0, rtol=0, equal_nan=True)
    # No variant without a matmul, for a matmul alone, or with choose="kopt".
    for fn, sp in ((lambda x: x.tanh() * 3.0, [((8, 64), F32)]),
                   (lambda x, w: x @ w, [((8, 64), F32), ((64, 64), F32)])):
        gm, _ = compile_fn(fn, *sp)
        assert partitions(gm)[0].split is None
    gm, _ = compile_fn(f, *specs, choose="kopt")
    assert partitions(gm)[0].split is None


def test_split_choice_from_the_tuning_db_needs_its_own_trial(tmp_path):
    from kopt import tuning_db
    db = tmp_path / "choices.db"
    def f(x, w):
        return torch.relu(x @ w) + 1.0
    specs = (((64, 64), F32), ((64, 64), F32))
    gm, _ = compile_fn(f, *specs, tuning_db=str(db))
    key = partitions(gm)[0].chooser.workload
    row = {"workload": key, "ops": "partition", "status": "ok", "measurer": "gpu",
           "correct": True}
    tuning_db.add(db, dict(row, schedule={"impl": "kopt"}, median_ms=0.020))
    tuning_db.add(db, dict(row, schedule={"impl": "pytorch"}, median_ms=0.015))
    gm, _ = compile_fn(f, *specs, tuning_db=str(db))
    assert partitions(gm)[0].choice is None  # the split variant is not measured yet
    tuning_db.add(db, dict(row, schedule={"impl": "split"}, median_ms=0.012))
    gm, _ = compile_fn(f, *specs, tuning_db=str(db))
    c = partitions(gm)[0].choice
    assert (c.impl, c.source, c.split_ms) == ("split", "tuning_db", 0.012)


def test_eager_path_matches_the_graph_on_cpu():
    """Partitions without a GPU run their ATen ops (the fallback), so the
    rewritten graph computes what the original did."""
    gm, _ = compile_fn(block, *BLOCK)
    args = [torch.randn(s).to(d) for s, d in BLOCK]
    want = block(*args)
    got = gm(*args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert torch.equal(got, want)


def test_rmsnorm_reference_is_hugging_faces():
    x = torch.randn(4, 4096).to(BF16)
    w = torch.ones(4096, dtype=BF16)
    assert torch.equal(tr.rmsnorm_reference(x, 1e-5), hf_rmsnorm(x, w, 1e-5))


def test_options_are_checked():
    with pytest.raises(ValueError, match="unknown option 'fusee'"):
        tb.Options.make({"fusee": False}, None)
    with pytest.raises(ValueError, match="min_partition_ops"):
        tb.Options.make({"min_partition_ops": 0}, None)
    with pytest.raises(ValueError, match="mode 'max-autotune'"):
        tb.Options.make(None, "max-autotune")
    with pytest.raises(ValueError, match="tuning_db .* is not a file"):
        tb.Options.make({"tuning_db": "/"}, None)
    with pytest.raises(ValueError, match="cache_dir .* has a NUL byte"):
        tb.Options.make({"cache_dir": "/tmp/a\0b"}, None)
    assert tb.Options.make(None, "reduce-overhead").cudagraphs


def test_training_graph_falls_back_with_a_warning():
    lin = torch.nn.Linear(8, 8)
    gm = torch.fx.symbolic_trace(lin)
    x = torch.randn(2, 8, requires_grad=True)
    tb.reset()
    with pytest.warns(UserWarning, match="inference graphs only"):
        fn = tb.kopt_backend(gm, [x])
    torch.testing.assert_close(fn(x), lin(x))
    assert "training graph" in str(tb.report())


def test_cpu_model_through_torch_compile_runs_in_pytorch():
    """backend="kopt" by name (the entry point, or the registry after import)
    on a CPU model: a warning, PyTorch's result."""
    torch._dynamo.reset()
    from torch._dynamo.backends.registry import register_backend, _BACKENDS
    if "kopt" not in _BACKENDS:
        register_backend(name="kopt")(tb.kopt_backend)
    f = torch.compile(lambda x: torch.softmax(x * 2.0, -1), backend="kopt")
    x = torch.randn(4, 16)
    tb.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            y = f(x)
    torch.testing.assert_close(y, torch.softmax(x * 2.0, -1))
    assert any("no CUDA tensors" in str(w.message) for w in caught)


# --- found by a fresh user's break tests --------------------------------------

def test_scalar_beyond_f32_range_is_applied_as_inf():
    gm, rep = compile_fn(lambda x: x * 1e40, ((4, 64), BF16))
    (p,) = partitions(gm)
    assert p.fn.constants == [(float("inf"), "bf16")]


def test_rsub_with_positional_alpha_stays_with_pytorch():
    gm, rep = compile_fn(lambda x: torch.rsub(x, 1.0, alpha=2) .exp(), ((4, 64), F32))
    assert any(op == "aten.rsub.Scalar" and "alpha" in r for op, r in rep.fallbacks), rep


def test_rmsnorm_pattern_needs_the_f32_computation():
    def f(h):  # all in bf16: PyTorch rounds every step, kopt.rmsnorm would not
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    gm, rep = compile_fn(f, ((4, 256), BF16))
    assert "kopt.rmsnorm" not in rep.ops_kopt


def test_16_bit_cube_stays_with_pytorch_and_division_by_a_number_multiplies():
    gm, rep = compile_fn(lambda x: x.pow(3), ((4, 64), BF16))
    assert any("x^3 of a 16-bit" in r for _, r in rep.fallbacks), rep
    gm, rep = compile_fn(lambda x: x / 3.0, ((4, 64), F32))
    (p,) = partitions(gm)
    inv = float(torch.tensor(1.0) / torch.tensor(3.0))
    assert "kopt.mul" in p.fn.mlir and p.fn.constants == [(inv, "f32")]


@pytest.mark.parametrize("options, message", [
    ({"cache_dir": 123}, "cache_dir"), ({"chip": 5}, "chip"), ({"fuse": "no"}, "fuse"),
    ({"report": "yes"}, "report"), ({"schedule": 5}, "schedule"),
    ({"opt_level": 99}, "opt_level"), ({"opt_level": "3"}, "opt_level")])
def test_option_types_are_checked(options, message):
    with pytest.raises((TypeError, ValueError), match=message):
        tb.Options.make(options, None)


@pytest.mark.parametrize("manifest", ["[]", "null", '{"functions": 5}'])
def test_wrongly_shaped_cache_entry_is_recompiled_and_repaired(tmp_path, manifest):
    km._memory_cache.clear()
    compile_fn(lambda x: x.tanh(), ((8, 64), F32), cache_dir=str(tmp_path))
    (entry,) = [d for d in tmp_path.iterdir() if not d.name.startswith(".")]
    (entry / "manifest.json").write_text(manifest)
    km._memory_cache.clear()
    gm, rep = compile_fn(lambda x: x.tanh(), ((8, 64), F32), cache_dir=str(tmp_path))
    assert rep.partitions == 1
    assert km._read_entry(entry) is not None  # the entry was written again


# --- the choice between kopt and PyTorch per partition (choose.py) ----------

from kopt.torch_backend import choose, remainder  # noqa: E402


def test_choice_comes_from_the_tuning_db_when_it_holds_both(tmp_path):
    from kopt import tuning_db
    db = tmp_path / "choices.db"  # created when first written
    gm, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 256), F32), tuning_db=str(db))
    (p,) = partitions(gm)
    assert p.choice is None  # nothing known: measured at the first GPU call
    key = p.chooser.workload
    assert key.startswith("torch-partition/") and key.endswith("/sm_90a/pytorch")
    row = {"workload": key, "ops": "partition", "status": "ok", "measurer": "gpu",
           "correct": True}
    tuning_db.add(db, dict(row, schedule={"impl": "kopt"}, median_ms=0.020))
    gm, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 256), F32), tuning_db=str(db))
    assert partitions(gm)[0].choice is None  # one side only: still measured
    tuning_db.add(db, dict(row, schedule={"impl": "pytorch"}, median_ms=0.012))
    gm, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 256), F32), tuning_db=str(db))
    c = partitions(gm)[0].choice
    assert (c.impl, c.source, c.kopt_ms, c.pytorch_ms) == ("pytorch", "tuning_db",
                                                           0.020, 0.012)
    # Another shape is another workload.
    gm, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 512), F32), tuning_db=str(db))
    assert partitions(gm)[0].choice is None
    gm, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 256), F32), choose="kopt")
    assert partitions(gm)[0].choice.impl == "kopt"


def test_the_same_partition_has_one_workload_key_wherever_it_stands():
    def two(x, y):  # two tanh*3 partitions, split by a cumsum kopt leaves
        return (x.tanh() * 3.0).cumsum(-1).tanh() * 3.0 + y
    gm, _ = compile_fn(two, ((64, 256), F32), ((64, 256), F32))
    keys = [p.chooser.workload for p in partitions(gm)]
    names = [p.fn.name for p in partitions(gm)]
    assert len(set(names)) == len(names) == 2
    gm1, _ = compile_fn(lambda x: x.tanh() * 3.0, ((64, 256), F32))
    assert partitions(gm1)[0].chooser.workload in keys


def test_decide_keeps_kopt_within_two_percent():
    assert choose.decide(1.0, 0.99, "pytorch", "measured").impl == "kopt"
    assert choose.decide(1.0, 0.97, "pytorch", "measured").impl == "pytorch"
    assert choose.decide(0.5, 1.0, "inductor", "measured").impl == "kopt"


def test_mismatch_within_the_dtype_rounding_and_special_values():
    p = torch.linspace(-4, 4, 1000)
    assert choose.mismatch([p.clone()], [p]) is None
    assert choose.mismatch([(p * 1.004).to(BF16)], [p.to(BF16)]) is None
    assert "max |kopt - PyTorch|" in choose.mismatch([p + 0.5], [p])
    assert "shape" in choose.mismatch([p[:10]], [p])
    assert "shape" in choose.mismatch([p.to(F16)], [p])
    q = p.clone()
    q[3] = float("nan")
    assert "NaN" in choose.mismatch([p], [q])
    assert choose.mismatch([q.clone()], [q]) is None
    q[3] = float("inf")
    assert "inf" in choose.mismatch([torch.where(q.isinf(), -q, q)], [q])
    assert choose.mismatch([torch.tensor([1, 2])], [torch.tensor([1, 3])]) == "output 0 differs"


# --- the remainder compiled by Inductor (remainder.py) ----------------------

def mixed(x, w):
    h = torch.nn.functional.linear(x, w).tanh()
    return h.cumsum(-1).exp() * 2 + h


MIXED = [((16, 64), F32), ((128, 64), F32)]


def test_inductor_remainder_groups_what_kopt_leaves(monkeypatch):
    compiled = []

    def eager(sub):  # stands in for Inductor: runs the group's ATen ops
        compiled.append(sub)
        return lambda args: sub(*args)
    monkeypatch.setattr(remainder, "inductor_compile", eager)
    gm, rep = compile_fn(mixed, *MIXED, remainder="inductor")
    groups = [m for m in gm.modules() if isinstance(m, remainder.InductorGroup)]
    assert len(groups) == 1 and rep.inductor_groups == 1 and len(partitions(gm)) == 2
    (sub,) = compiled
    assert [n.target for n in sub.graph.nodes if n.op == "call_function"] == [
        torch.ops.aten.cumsum.default]
    assert "1 groups compiled by Inductor" in str(rep)
    # The partitions measure themselves against Inductor's code of their own ops.
    assert {p.chooser.alt for p in partitions(gm)} == {"inductor"}
    x, w = torch.randn(16, 64), torch.randn(128, 64)
    got = gm(x, w)
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got,
                               mixed(x, w))


def test_inductor_failure_leaves_the_group_in_eager(monkeypatch):
    def broken(sub):
        raise RuntimeError("injected Inductor failure\nwith a long log")
    monkeypatch.setattr(remainder, "inductor_compile", broken)
    with pytest.warns(UserWarning, match="injected Inductor failure"):
        gm, rep = compile_fn(mixed, *MIXED, remainder="inductor")
    assert rep.failed_groups == ["RuntimeError: injected Inductor failure"]
    x, w = torch.randn(16, 64), torch.randn(128, 64)
    got = gm(x, w)
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got,
                               mixed(x, w))


def test_inductor_group_gets_the_strides_it_was_compiled_for():
    """Inductor's code asserts its inputs' traced strides: an input laid out
    otherwise (another kernel's choice, a padded output) is copied first."""
    def f(x):
        return x.exp() + 1.0
    with FakeTensorMode():
        gm = make_fx(f, tracing_mode="fake")(torch.empty(8, 64))
    seen = []

    def strict(sub):
        def run(args):
            seen.append(args[0].stride())
            assert args[0].stride() == (64, 1)
            return sub(*args)
        return run
    remainder.compile_groups(gm, strict)
    x = torch.randn(64, 8).t()  # the same shape, transposed strides
    got = gm(x)
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got, f(x))
    assert seen == [(64, 1)]


def test_inductor_group_outputs_get_the_traced_strides():
    """A group's code that lays an output out otherwise (Inductor's channels-
    last convolutions) has it copied into the strides the trace recorded,
    which the nodes after it were compiled for."""
    def f(x):
        return x.exp() + 1.0
    with FakeTensorMode():
        gm = make_fx(f, tracing_mode="fake")(torch.empty(2, 3, 4, 5))

    def channels_last(sub):
        def run(args):
            return [o.contiguous(memory_format=torch.channels_last) for o in sub(*args)]
        return run
    remainder.compile_groups(gm, channels_last)
    x = torch.randn(2, 3, 4, 5)
    got = gm(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert got.stride() == (60, 20, 5, 1)
    torch.testing.assert_close(got, f(x))


def test_inductor_group_runs_what_measured_faster():
    def f(x):
        return x.exp() + 1.0
    with FakeTensorMode():
        gm = make_fx(f, tracing_mode="fake")(torch.empty(8, 64))
    calls, chosen = [], {}

    def counted(sub):
        def run(args):
            calls.append("inductor")
            return sub(*args)
        return run
    (group,) = remainder.compile_groups(gm, counted, measure={
        "runs": 3, "graphs": False, "on_choice": chosen.__setitem__})
    x = torch.randn(8, 64)
    group.decide(1.0, 0.99, None)  # within 2%: Inductor's
    assert chosen["inductor_group_0"].impl == "inductor"
    gm(x)
    assert calls == ["inductor"]
    group.decide(1.0, 0.5, None)  # eager twice as fast
    c = chosen["inductor_group_0"]
    assert (c.impl, c.source) == ("eager", "measured")
    assert str(c) == "eager (measured: Inductor 1.0000 ms, eager 0.5000 ms)"
    got = gm(x)
    assert calls == ["inductor"]  # eager ran
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got, f(x))
    with pytest.warns(UserWarning, match="disagrees with eager"):
        group.decide(None, None, "output 0 differs")
    assert chosen["inductor_group_0"].impl == "eager"


def test_inductor_compiles_a_group_for_real():
    """Inductor's own compile of a group (on the CPU here: its C++ code)."""
    def f(x, y):
        return (x.tanh().cumsum(-1) * y).softmax(-1)
    with FakeTensorMode():
        gm = make_fx(f, tracing_mode="fake")(torch.empty(8, 64), torch.empty(8, 64))
    (group,) = remainder.compile_groups(gm)
    assert group.fallback_reason is None and group.compiled is not None
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    got = gm(x, y)
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got, f(x, y))


@pytest.mark.parametrize("options, message", [
    ({"choose": "fastest"}, "choose"), ({"remainder": "tvm"}, "remainder"),
    ({"choose_runs": 0}, "choose_runs"), ({"choose_runs": True}, "choose_runs"),
    ({"tuning_db": "/nonexistent/dir/t.db"}, "no folder"),
    ({"choose_runs": 10**12}, "choose_runs"), ({"tuning_db": "/tmp/t\0.db"}, "NUL")])
def test_choice_and_remainder_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        tb.Options.make(options, None)


def test_tuning_db_from_the_environment_and_empty(monkeypatch, tmp_path):
    monkeypatch.setenv("KOPT_TUNING_DB", "/nonexistent/dir/t.db")
    with pytest.raises(ValueError, match=r"\$KOPT_TUNING_DB"):
        tb.Options.make(None, None)
    monkeypatch.setenv("KOPT_TUNING_DB", str(tmp_path / "t.db"))
    assert tb.Options.make(None, None).tuning_db == str(tmp_path / "t.db")
    assert tb.Options.make({"tuning_db": ""}, None).tuning_db is None
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tb.Options.make({"tuning_db": "~/x.db"}, None).tuning_db == str(tmp_path / "x.db")


def test_cuda_graphs_get_kernels_without_tma_maps(tmp_path):
    """A prefill GEMM's default schedule reads through TMA tensor maps, which
    cannot be recorded in a CUDA graph: with cudagraphs the backend compiles
    that kernel with cp_async copies (and leaves GEMV-shaped kernels alone)."""
    def f(x, w):
        return torch.nn.functional.silu(torch.nn.functional.linear(x, w))
    big = [((2048, 4096), BF16), ((4096, 4096), BF16)]
    gm, _ = compile_fn(f, *big)
    (p,) = partitions(gm)
    assert [bool(k.get("tensor_maps")) for k in p.compiled.manifest["kernels"]] == [True]
    gm, rep = compile_fn(f, *big, cudagraphs=True)
    (p,) = partitions(gm)
    (k,) = p.compiled.manifest["kernels"]
    assert not k.get("tensor_maps") and k["schedule"]["copy"] == "cp_async"
    assert rep.capturable_kernels == [k["name"]] and "cp_async copies" in str(rep)
    ptxas(p.compiled.ptx, tmp_path)
    gm, rep = compile_fn(f, ((1, 4096), BF16), ((4096, 4096), BF16), cudagraphs=True)
    assert rep.capturable_kernels == [] and rep.partitions == 1  # a GEMV: no maps
