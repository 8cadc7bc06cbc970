"""GPU tests of torch.compile(backend="kopt") (run on a GPU host with torch,
through the device tool; not in CI):

    PYTHONPATH=<site with kopt installed> python3 -m pytest -q test/gpu/test_torch_backend.py

Results against PyTorch eager on random inputs (bf16/f16 tolerances), inputs
that are non-contiguous or at misaligned offsets, new shapes (recompiled once,
then cached), CUDA graphs (mode="reduce-overhead" and a user's own capture).
"""

import warnings

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kopt.torch_backend as kb  # noqa: E402

DEV = "cuda"
BF16 = torch.bfloat16
KOPT = {"choose": "kopt"}  # kopt's kernels, never PyTorch's: tests of kopt's launches


def hf_rmsnorm(x, w, eps=1e-6):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


class Block(torch.nn.Module):
    def __init__(self, d=512, f=1024, dtype=BF16):
        super().__init__()
        self.norm = torch.nn.Parameter(torch.rand(d, dtype=dtype) + 0.5)
        self.up = torch.nn.Linear(d, f, dtype=dtype)
        self.down = torch.nn.Linear(f, d, bias=False, dtype=dtype)
        self.ln = torch.nn.LayerNorm(d, dtype=dtype)

    def forward(self, x):
        y = self.up(hf_rmsnorm(x, self.norm))
        y = self.down(torch.nn.functional.gelu(y, approximate="tanh"))
        return torch.softmax(self.ln(x + y) * 0.125, -1), y.sigmoid() * 0.1


def close(a, b, dtype=BF16):
    tol = 2e-2 if dtype == BF16 else 2e-3
    torch.testing.assert_close(a, b, atol=tol, rtol=tol)


@pytest.fixture
def block():
    torch.manual_seed(0)
    return Block().to(DEV).eval()


def test_block_matches_eager(block):
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(block, backend="kopt")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 7, 512, device=DEV, dtype=BF16)
            for got, want in zip(f(x), block(x)):
                close(got, want)
    rep = kb.report()[-1]
    assert rep.partitions >= 1 and rep.pytorch_ops == 0, str(rep)


def test_noncontiguous_and_misaligned_inputs():
    def fn(x, y):
        return torch.exp(x) * y + 1.0
    torch._dynamo.reset()
    f = torch.compile(fn, backend="kopt", dynamic=False, options=KOPT)
    base = torch.randn(64 * 64 + 1, device=DEV, dtype=BF16)
    x = base[1:].view(64, 64)           # 2-byte offset: not 16-byte aligned
    y = torch.randn(64, 64, device=DEV, dtype=BF16).t()  # non-contiguous
    assert x.data_ptr() % 16
    with torch.no_grad():
        close(f(x, y), fn(x, y))


def test_new_shapes_compile_once_each():
    def fn(x, w):
        return torch.nn.functional.silu(x @ w.t())
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(fn, backend="kopt", options=KOPT)
    w = torch.randn(256, 128, device=DEV, dtype=torch.float16)
    with torch.no_grad():
        def call(m):
            x = torch.randn(m, 128, device=DEV, dtype=torch.float16)
            close(f(x, w), fn(x, w), torch.float16)
        for m in (16, 48, 80):
            call(m)
        compiled = len(kb.report())
        assert compiled == 3, str(kb.report())  # one per new shape
        for m in (16, 48, 80, 48):
            call(m)
        assert len(kb.report()) <= compiled + 1, str(kb.report())


def rows(x, b):
    return torch.softmax(torch.exp(x) * b + 1.0, -1), torch.tanh(x)


def test_reduce_overhead_replays_a_cuda_graph():
    torch._dynamo.reset()
    f = torch.compile(rows, backend="kopt", dynamic=False,  # mode= takes no options
                      options=dict(KOPT, cudagraphs=True))
    b = torch.randn(512, device=DEV, dtype=BF16)
    with torch.no_grad():
        outs = []
        for _ in range(3):
            x = torch.randn(64, 512, device=DEV, dtype=BF16)
            got = f(x, b)
            outs.append(got[0])
            for g, w in zip(got, rows(x, b)):
                close(g, w)
        assert not torch.equal(outs[0], outs[1])  # outputs are copies, not reused


def test_reduce_overhead_records_tma_shaped_kernels_with_cp_async(block):
    """The block's down projection reads through TMA by default; for CUDA graphs
    the backend compiles it with cp_async copies, and the graph is recorded."""
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(block, backend="kopt", mode="reduce-overhead", dynamic=False)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "CUDA graphs are off"
        for _ in range(3):
            x = torch.randn(64, 512, device=DEV, dtype=BF16)
            for g, w in zip(f(x), block(x)):
                close(g, w)
    rep = kb.report()[-1]
    assert rep.capturable_kernels, str(rep)


def test_reduce_overhead_with_tma_forced_says_why_and_runs(block):
    torch._dynamo.reset()
    f = torch.compile(block, backend="kopt", dynamic=False, options={
        "cudagraphs": True, "choose": "kopt", "schedule": {"*": {"copy": "tma"}}})
    x = torch.randn(64, 512, device=DEV, dtype=BF16)
    with torch.no_grad(), pytest.warns(UserWarning, match="CUDA graphs are off"):
        got = f(x)
    for g, w in zip(got, block(x)):
        close(g, w)


def test_user_cuda_graph_capture():
    torch._dynamo.reset()
    f = torch.compile(rows, backend="kopt", dynamic=False, options=KOPT)
    x = torch.randn(64, 512, device=DEV, dtype=BF16)
    b = torch.randn(512, device=DEV, dtype=BF16)
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f(x, b)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = f(x, b)
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        close(out[0], rows(x, b)[0])


# --- kopt or PyTorch, by measurement (choose.py) ------------------------------

def test_measured_choices_are_recorded_and_reused(block, tmp_path):
    db = tmp_path / "choices.db"
    x = torch.randn(4, 7, 512, device=DEV, dtype=BF16)
    with torch.no_grad():
        want = block(x)
        for source in ("measured", "tuning_db"):
            torch._dynamo.reset()
            kb.reset()
            f = torch.compile(block, backend="kopt", dynamic=False,
                              options={"tuning_db": str(db), "cache_dir": None})
            for got, w in zip(f(x), want):
                close(got, w)
            rep = kb.report()[-1]
            assert rep.partitions >= 1 and len(rep.chosen) == rep.partitions, str(rep)
            for choice in rep.chosen.values():
                assert choice.source == source, str(rep)
                assert choice.kopt_ms > 0 and choice.pytorch_ms > 0, str(rep)
            print(rep)
    from kopt import tuning_db
    import sqlite3
    rows_ = sqlite3.connect(db).execute(
        "select workload, schedule, median_ms from trials").fetchall()
    # kopt's and PyTorch's once each, and the split variant's where there is one
    assert len(rows_) == sum(2 + (c.split_ms is not None) for c in rep.chosen.values())
    assert all(tuning_db.trials(db, w) for w, _, _ in rows_)


def test_kernels_that_disagree_with_pytorch_are_not_used(monkeypatch):
    from kopt.torch_backend import module as km
    real = km.KoptPartition.run_kopt

    def wrong(self, args, device):
        return tuple(o * 1.5 for o in real(self, args, device))
    monkeypatch.setattr(km.KoptPartition, "run_kopt", wrong)
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(rows, backend="kopt", dynamic=False)
    x = torch.randn(64, 512, device=DEV, dtype=BF16)
    b = torch.randn(512, device=DEV, dtype=BF16)
    with torch.no_grad(), pytest.warns(UserWarning, match="disagree with PyTorch"):
        got = f(x, b)
    for g, w in zip(got, rows(x, b)):
        close(g, w)
    (choice,) = kb.report()[-1].chosen.values()
    assert (choice.impl, choice.source) == ("pytorch", "mismatch")


def rope_block(x, w, cos, sin):
    """A matmul (kopt's) between ops kopt leaves to PyTorch (cat, slices)."""
    y = x @ w.t()
    a, b = y[..., : y.shape[-1] // 2], y[..., y.shape[-1] // 2:]
    rot = torch.cat((-b, a), -1)
    return torch.softmax((y * cos + rot * sin).float(), -1).to(y.dtype)


def test_inductor_runs_the_remainder():
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(rope_block, backend="kopt", dynamic=False,
                      options={"remainder": "inductor"})
    x = torch.randn(2, 64, 256, device=DEV, dtype=BF16)
    w = torch.randn(128, 256, device=DEV, dtype=BF16) * 0.05
    cos = torch.randn(64, 128, device=DEV, dtype=BF16)
    sin = torch.randn(64, 128, device=DEV, dtype=BF16)
    with torch.no_grad():
        close(f(x, w, cos, sin), rope_block(x, w, cos, sin))
    rep = kb.report()[-1]
    print(rep)
    assert rep.inductor_groups >= 1 and not rep.failed_groups, str(rep)
    for name, c in rep.chosen.items():  # partitions, then Inductor's groups
        want = ("inductor", "eager") if name.startswith("inductor_group") else (
            "kopt", "split", "inductor")
        assert c.impl in want and c.source == "measured", str(rep)
    assert any(n.startswith("inductor_group") for n in rep.chosen), str(rep)


def test_choice_under_cuda_graphs_times_replays():
    """With CUDA graphs both sides are measured as graph replays (no launch
    cost) and the graph records whichever won."""
    torch._dynamo.reset()
    kb.reset()
    f = torch.compile(rows, backend="kopt", mode="reduce-overhead", dynamic=False)
    b = torch.randn(512, device=DEV, dtype=BF16)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(64, 512, device=DEV, dtype=BF16)
            for g, w in zip(f(x, b), rows(x, b)):
                close(g, w)
    rep = kb.report()[-1]
    print(rep)
    assert rep.chosen and all(c.source == "measured" for c in rep.chosen.values()), str(rep)


SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -3.0, 3.0, -1.0, 1.0,
           6.0, -6.0, 1e30, -1e30, 1e-40, -1e-40]


def _with_special_values(values, dtype, scale):
    """A [64, 256] random tensor (times ``scale``) that starts with ``values``."""
    torch.manual_seed(0)
    x = torch.randn(64, 256, device=DEV, dtype=dtype) * scale
    x.view(-1)[:len(values)] = torch.tensor(values, dtype=dtype)
    return x


def _all_in_kopt(name, fn, x):
    """fn(x) compiled with every op in kopt's kernels (checked), and eager's."""
    torch._dynamo.reset()
    kb.reset()
    got = torch.compile(fn, backend="kopt", dynamic=False, options=KOPT)(x)
    rep = kb.report()[-1]
    assert rep.pytorch_ops == 0 and not rep.fallbacks, (name, str(rep))
    return got, fn(x)


@pytest.mark.parametrize("dtype", [torch.float32, BF16])
def test_clamps_and_activations_match_pytorch_on_special_values(dtype):
    F = torch.nn.functional
    fns = {
        "hardtanh": lambda x: F.hardtanh(x) * 1.0,
        "clamp": lambda x: torch.clamp(x, min=-0.3, max=2.5) + 0.0,
        "clamp_max": lambda x: torch.clamp(x, max=0.1) * 1.0,
        "leaky_relu": lambda x: F.leaky_relu(x, 0.2) * 1.0,
        "hardswish": lambda x: F.hardswish(x) * 1.0,
        "hardsigmoid": lambda x: F.hardsigmoid(x) * 1.0,
    }
    x = _with_special_values(SPECIAL, dtype, 4)
    for name, fn in fns.items():
        got, want = _all_in_kopt(name, fn, x)
        same = (got == want) | (got.isnan() & want.isnan())  # -0 == +0 here
        bad = (~same).nonzero()
        assert bad.numel() == 0, (name, x[tuple(bad[0])].item(), got[tuple(bad[0])].item(),
                                  want[tuple(bad[0])].item())


def test_channel_broadcasts_match_pytorch():
    # KernelBench level 2's conv epilogues: bias [C, 1, 1], scale [1, C, 1, 1].
    def f(x, b, s):
        return torch.sigmoid(torch.clamp(x + b, -1.0, 1.0) * s) - 0.5
    torch._dynamo.reset()
    kb.reset()
    g = torch.compile(f, backend="kopt", dynamic=False, options=KOPT)
    for n, c, h, w in [(8, 16, 30, 30), (3, 5, 7, 9)]:
        x = torch.randn(n, c, h, w, device=DEV)
        b = torch.randn(c, 1, 1, device=DEV)
        s = torch.randn(1, c, 1, 1, device=DEV)
        torch.testing.assert_close(g(x, b, s), f(x, b, s), atol=1e-6, rtol=1e-6)
    rep = kb.report()[-1]
    assert rep.pytorch_ops == 0, str(rep)


def test_split_variant_is_measured_and_matches_pytorch():
    """A GEMM with an epilogue: kopt's kernels, cuBLAS's GEMM with kopt's
    epilogue kernel (the split variant) and PyTorch's are all measured; the
    split variant computes what PyTorch does."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from kopt.torch_backend import compile as kc
    from kopt.torch_backend import module as km

    def f(x, w, b, r):
        return torch.sigmoid(torch.nn.functional.linear(x, w, b)) * 2.0 + r
    torch.manual_seed(0)
    args = [torch.randn(512, 1024, device=DEV), torch.randn(768, 1024, device=DEV) * 0.03,
            torch.randn(768, device=DEV), torch.randn(512, 768, device=DEV)]
    kb.reset()
    gm = make_fx(f, tracing_mode="fake")(*args)
    kc.compile_static(gm, kb.Options.make({"cache_dir": None}, None))
    got = gm(*args)
    got = got[0] if isinstance(got, (list, tuple)) else got
    torch.testing.assert_close(got, f(*args), atol=1e-4, rtol=1e-4)
    (p,) = [m for m in gm.children() if isinstance(m, km.KoptPartition)]
    assert p.split is not None
    (c,) = kb.report()[-1].chosen.values()
    print(kb.report()[-1])
    assert c.source == "measured" and c.split_ms > 0 and c.kopt_ms > 0, str(c)
    ins = [torch.randn(tuple(n.meta["val"].shape), device=DEV)
           for n in p.sub.graph.nodes if n.op == "placeholder"]
    for a, b in zip(p.split(*ins), p.sub(*ins)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, BF16])
def test_softplus_mish_and_logs_match_pytorch_on_special_values(dtype):
    """NaN and inf where PyTorch has them, finite values to a few f32 ulps
    (kopt's exp is not PyTorch's expf, so not bit for bit)."""
    F = torch.nn.functional
    fns = {
        "softplus": lambda x: F.softplus(x) * 1.0,
        "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=30.0) * 1.0,
        "softplus_huge_beta": lambda x: F.softplus(x, beta=1e38) * 1.0,
        "mish": lambda x: F.mish(x) * 1.0,
        "log": lambda x: torch.log(x) * 1.0,
        "log1p": lambda x: torch.log1p(x) * 1.0,
    }
    x = _with_special_values(SPECIAL + [-1.0, -2.0, 17.5, 20.0, 25.0, 100.0, -100.0, 1e-7,
                                        -1e-7], dtype, 8)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    for name, fn in fns.items():
        got, want = _all_in_kopt(name, fn, x)
        assert torch.equal(got.isnan(), want.isnan()), name
        inf = want.isinf()
        assert torch.equal(got.isinf(), inf) and torch.equal(got[inf], want[inf]), name
        fin = torch.isfinite(want)
        torch.testing.assert_close(got[fin].float(), want[fin].float(), atol=tol, rtol=tol,
                                   msg=lambda m: f"{name}: {m}")


def test_gemm_batch_norm_in_eval_matches_pytorch():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.BatchNorm1d(512),
                                torch.nn.GELU()).to(DEV).eval()
    bn = model[1]
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.25, 4)
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    x = torch.randn(128, 256, device=DEV)
    torch._dynamo.reset()
    kb.reset()
    with torch.no_grad():
        got = torch.compile(model, backend="kopt", dynamic=False, options=KOPT)(x)
        want = model(x)
    rep = kb.report()[-1]
    assert rep.pytorch_ops == 0, str(rep)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
