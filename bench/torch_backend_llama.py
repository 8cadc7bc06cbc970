"""torch.compile(backend="kopt") on a Llama-3.1-8B decoder layer and a 2-layer
model (transformers, random weights from the config, bf16), beside PyTorch
eager and Inductor, in one run on one GPU (issue 18's validation).

    python3 bench/torch_backend_llama.py --out results.json [--max-autotune]

Shapes: decode, batch 1 and 16, one token against a KV cache of --kv tokens
(the layer's attention concatenates the new key/value to the cache, as
DynamicCache does); prefill, 2048 tokens, causal. Per mode and shape: the
output's error against eager (max |a - b| / max |eager|, beside Inductor's
own), the time per forward (CUDA events, warm-up, a 256 MiB L2 flush before
each timed run, fresh random inputs, median of --runs; and back to back
without flush, which includes the CPU's launch overhead a real decode loop
pays), the kernels launched per forward (torch.profiler's CUDA kernel events),
and for kopt the backend's report.
"""

import argparse
import itertools
import json
import statistics
import sys
import time
import traceback

import torch

import torch_eager  # bench/torch_eager.py, beside this script
import transformers
from transformers import LlamaConfig
from transformers.models.llama import modeling_llama as ml


def config(layers):
    kw = dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
              num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5,
              max_position_embeddings=131072, vocab_size=128256,
              num_hidden_layers=layers, hidden_act="silu", attention_bias=False,
              mlp_bias=False, rope_theta=500000.0)
    cfg = LlamaConfig(**kw)
    cfg._attn_implementation = "sdpa"
    return cfg


class ConcatCache:
    """The one call the attention makes to a cache: update(k, v, layer_idx,
    kwargs) -> the keys and values to attend to (cache + new, concatenated,
    as DynamicCache does, without keeping state between calls)."""

    def __init__(self, ks, vs):
        self.ks, self.vs = ks, vs

    def update(self, k, v, layer_idx, cache_kwargs=None):
        return (torch.cat([self.ks[layer_idx], k], dim=2),
                torch.cat([self.vs[layer_idx], v], dim=2))


class Layers(torch.nn.Module):
    """`layers` LlamaDecoderLayers with the rotary embedding (the decode and
    prefill unit; the model's embedding and final norm are outside)."""

    def __init__(self, cfg):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            [ml.LlamaDecoderLayer(cfg, layer_idx=i) for i in range(cfg.num_hidden_layers)])
        self.rotary = ml.LlamaRotaryEmbedding(config=cfg)

    def forward(self, h, position_ids, ks=None, vs=None):
        pos = self.rotary(h, position_ids)
        cache = ConcatCache(ks, vs) if ks is not None else None
        for layer in self.layers:
            out = layer(h, attention_mask=None, position_ids=position_ids,
                        past_key_values=cache, position_embeddings=pos, use_cache=False)
            h = out[0] if isinstance(out, tuple) else out
        return h


def time_fn(fn, make_inputs, runs, flush):
    """Median ms per call: events with an L2 flush before each run (fresh
    inputs per run), and back to back over the same inputs."""
    inputs = [make_inputs() for _ in range(4)]
    calls = itertools.count()

    def rotating():
        fn(*inputs[next(calls) % 4])
    # kopt's eager timing (bench/torch_eager.py): warm-up, flush, events, median
    flushed = torch_eager.time_fn(rotating, runs, 3, "cuda", flush)["median_ms"]
    loops = []
    for _ in range(5):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(20):
            fn(*inputs[i % 4])
        b.record()
        torch.cuda.synchronize()
        loops.append(a.elapsed_time(b) / 20)
    return flushed, statistics.median(loops)


def kernels_per_call(fn, args):
    from torch.profiler import ProfilerActivity, profile
    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA
               and "memset" not in e.name.lower() and "memcpy" not in e.name.lower())


def rel_err(a, b):
    return float((a.float() - b.float()).abs().max() / b.float().abs().max())


#: mode -> torch.compile's arguments (None: the module in eager)
MODES = {
    "eager": None,
    "inductor": {},
    "inductor-reduce-overhead": {"mode": "reduce-overhead"},
    "inductor-max-autotune": {"mode": "max-autotune"},
    # kopt's defaults: each partition measured against PyTorch at its first call
    "kopt": {"backend": "kopt"},
    "kopt-always": {"backend": "kopt", "options": {"choose": "kopt"}},
    # CUDA graphs: kernels that would read through TMA maps get cp_async copies
    "kopt-reduce-overhead": {"backend": "kopt", "mode": "reduce-overhead"},
    # the ops kopt does not take compiled by Inductor
    "kopt-inductor": {"backend": "kopt", "options": {"remainder": "inductor"}},
    "kopt-inductor-reduce-overhead": {
        "backend": "kopt", "options": {"cudagraphs": True, "remainder": "inductor"}},
}


def run_shape(name, module, make_inputs, modes, runs, flush, results):
    torch.manual_seed(0)
    ref_args = make_inputs()
    with torch.no_grad():
        ref = module(*ref_args)
        for mode in modes:
            rec = {"shape": name, "mode": mode}
            results.append(rec)
            try:
                torch._dynamo.reset()
                t0 = time.time()
                how = MODES[mode]
                if how is None:
                    fn = module
                else:
                    if how.get("backend") == "kopt":
                        import kopt.torch_backend as kb
                        kb.reset()
                    fn = torch.compile(module, dynamic=False, **how)
                out = fn(*ref_args)
                torch.cuda.synchronize()
                rec["compile_s"] = round(time.time() - t0, 2)
                rec["rel_err_vs_eager"] = rel_err(out, ref)
                rec["ms_flushed"], rec["ms_back_to_back"] = time_fn(fn, make_inputs, runs, flush)
                rec["kernels"] = kernels_per_call(fn, ref_args)
                if mode.startswith("kopt"):
                    rep = kb.report()
                    rec["report"] = str(rep)
                    rec["unsupported"] = dict(rep.unsupported_ops())
                    rec["choices"] = [f"{g.name} {n}: {c}" for g in rep
                                      for n, c in g.chosen.items()]
            except Exception as e:  # a mode that fails is recorded, not fatal
                rec["error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
            print(json.dumps({k: v for k, v in rec.items() if k != "report"}), flush=True)
            if "report" in rec:
                print(rec["report"], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--kv", type=int, default=1024, help="KV cache length at decode")
    ap.add_argument("--max-autotune", action="store_true")
    ap.add_argument("--modes", default="", help="comma-separated modes (default: all "
                    "but inductor-max-autotune): " + ", ".join(MODES))
    ap.add_argument("--only", default="", help="comma-separated shape names")
    ap.add_argument("--layers", default="1,2", help="decoder layers per module, e.g. 1,2")
    args = ap.parse_args()
    dev = torch.device("cuda")
    dt = torch.bfloat16
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    modes = [m for m in MODES if m != "inductor-max-autotune" or args.max_autotune]
    if args.modes:
        modes = args.modes.split(",")
        bad = [m for m in modes if m not in MODES]
        if bad:
            ap.error(f"unknown modes {bad}; modes: {', '.join(MODES)}")
    results = []
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "transformers": transformers.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": " ".join(sys.argv), "runs": args.runs, "kv": args.kv}
    only = set(filter(None, args.only.split(",")))
    for layers in [int(n) for n in args.layers.split(",")]:
        torch.manual_seed(1)
        module = Layers(config(layers)).to(dev, dt).eval()
        for p in module.parameters():
            torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else torch.nn.init.ones_(p)
        kvh, hd = 8, 128
        for batch in (1, 16):
            name = f"layers{layers}_decode_b{batch}_kv{args.kv}"
            if only and name not in only:
                continue

            def make(batch=batch, layers=layers):
                h = torch.randn(batch, 1, 4096, device=dev, dtype=dt)
                pos = torch.full((batch, 1), args.kv, device=dev, dtype=torch.long)
                ks = [torch.randn(batch, kvh, args.kv, hd, device=dev, dtype=dt)
                      for _ in range(layers)]
                vs = [torch.randn(batch, kvh, args.kv, hd, device=dev, dtype=dt)
                      for _ in range(layers)]
                return h, pos, ks, vs
            run_shape(name, module, make, modes, args.runs, flush, results)
            save(args.out, meta, results)
        name = f"layers{layers}_prefill_2048"
        if only and name not in only:
            continue

        def make_prefill():
            h = torch.randn(1, 2048, 4096, device=dev, dtype=dt)
            pos = torch.arange(2048, device=dev).unsqueeze(0)
            return h, pos
        run_shape(name, module, make_prefill, modes, args.runs, flush, results)
        save(args.out, meta, results)
        del module
        torch.cuda.empty_cache()
    save(args.out, meta, results)


def save(path, meta, results):
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
