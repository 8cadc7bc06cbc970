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
    assert len(rows_) == 2 * rep.partitions  # kopt's and PyTorch's, once each
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
            "kopt", "inductor")
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
